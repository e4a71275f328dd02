use super::*;
use std::fs;

/// A fake tree: /proc/mounts and the files under each mount.
fn tree(mounts: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
    let d = tempfile::tempdir().unwrap();
    let root = Root::new(d.path());
    let put = |abs: &str, text: &str| {
        let p = root.path(abs);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    put("/proc/mounts", mounts);
    for (p, t) in files {
        put(p, t);
    }
    (d, root)
}

#[test]
fn a_cgroup2_host_splits_huge_pages_by_kind_and_adds_hugetlb() {
    let (_d, root) = tree(
        "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
        &[
            (
                "/sys/fs/cgroup/cgroup.controllers",
                "cpu memory hugetlb pids\n",
            ),
            (
                "/sys/fs/cgroup/db.slice/memory.stat",
                "anon 104857600\nfile 20971520\nanon_thp 62914560\nfile_thp 2097152\nshmem_thp 4194304\n",
            ),
            ("/sys/fs/cgroup/db.slice/memory.current", "134217728\n"),
            ("/sys/fs/cgroup/db.slice/hugetlb.2MB.current", "8388608\n"),
            ("/sys/fs/cgroup/db.slice/hugetlb.2MB.rsvd.current", "999\n"),
            ("/sys/fs/cgroup/db.slice/hugetlb.1GB.current", "0\n"),
            (
                "/sys/fs/cgroup/db.slice/pg.service/memory.current",
                "4096\n",
            ),
            (
                "/sys/fs/cgroup/db.slice/pg.service/cgroup.procs",
                "42\n43\n",
            ),
            ("/sys/fs/cgroup/db.slice/cgroup.procs", "7\n"),
        ],
    );
    let h = hierarchies(&root).unwrap();
    assert_eq!(h.memory, Some(("/sys/fs/cgroup".into(), Version::V2)));
    assert_eq!(h.hugetlb, h.memory);
    let g = read(&root, &h, "/db.slice").unwrap().unwrap();
    assert_eq!(
        (g.memory, g.anon_thp, g.file_thp, g.shmem_thp),
        (
            Some(128 << 20),
            Some(60 << 20),
            Some(2 << 20),
            Some(4 << 20)
        )
    );
    // Reservations are not use: only `.current` counts.
    assert_eq!(
        g.hugetlb,
        BTreeMap::from([(2 << 20, 8 << 20), (1 << 30, 0)])
    );
    assert_eq!(g.huge(), 74 << 20);
    assert_eq!(g.total(), 136 << 20);
    assert!((g.share().unwrap() - 74.0 / 136.0).abs() < 1e-12);
    let all = walk(&root, &h, 2).unwrap();
    let paths: Vec<&str> = all.iter().map(|g| g.path.as_str()).collect();
    assert_eq!(paths, ["/", "/db.slice", "/db.slice/pg.service"]);
    assert_eq!(walk(&root, &h, 1).unwrap().len(), 2);
    assert_eq!(procs(&root, &h, "/db.slice").unwrap(), [7, 42, 43]);
    assert!(read(&root, &h, "/gone").unwrap().is_none());
}

#[test]
fn a_hybrid_host_reads_memory_in_v1_and_hugetlb_in_v2() {
    let (_d, root) = tree(
        "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
         cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
         cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
        &[
            ("/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"),
            (
                "/sys/fs/cgroup/memory/app/memory.stat",
                "rss 1\nrss_huge 0\ntotal_rss 73400320\ntotal_rss_huge 67108864\n",
            ),
            (
                "/sys/fs/cgroup/memory/app/memory.usage_in_bytes",
                "80000000\n",
            ),
            (
                "/sys/fs/cgroup/unified/app/hugetlb.2MB.current",
                "4194304\n",
            ),
        ],
    );
    let h = hierarchies(&root).unwrap();
    assert_eq!(h.memory.as_ref().unwrap().1, Version::V1);
    assert_eq!(h.hugetlb.as_ref().unwrap().1, Version::V2);
    assert_eq!(
        h.describe(),
        "memory on v1 (/sys/fs/cgroup/memory), hugetlb on v2 (/sys/fs/cgroup/unified)"
    );
    let g = read(&root, &h, "app").unwrap().unwrap();
    assert_eq!(g.path, "/app");
    // The hierarchical total, not the group's own rss_huge.
    assert_eq!((g.anon_thp, g.file_thp), (Some(64 << 20), None));
    assert_eq!(g.hugetlb[&(2 << 20)], 4 << 20);
    assert_eq!(
        (g.memory_from, g.hugetlb_from),
        (Some(Version::V1), Some(Version::V2))
    );
    let (_d, none) = tree("proc /proc proc rw 0 0\n", &[]);
    assert!(hierarchies(&none).unwrap().is_empty());
}

#[test]
fn hugetlb_file_names_give_page_sizes() {
    assert_eq!(hugetlb_size("2MB"), Some(2 << 20));
    assert_eq!(hugetlb_size("1GB"), Some(1 << 30));
    assert_eq!(hugetlb_size("64KB"), Some(64 << 10));
    assert_eq!(hugetlb_size("2MB.rsvd"), None);
    assert_eq!(hugetlb_size("MB"), None);
}

/// A group's hugetlb pages count once in its total, whether memory charges them too
/// (`memory_hugetlb_accounting` on the cgroup2 mount) or only the hugetlb controller does.
#[test]
fn hugetlb_bytes_count_once_with_and_without_memory_hugetlb_accounting() {
    let files = [
        ("/sys/fs/cgroup/cgroup.controllers", "memory hugetlb\n"),
        // 1 GiB of hugetlb pages and 100 MiB of other memory.
        ("/sys/fs/cgroup/db/memory.stat", "anon_thp 0\n"),
        ("/sys/fs/cgroup/db/hugetlb.2MB.current", "1073741824\n"),
    ];
    for (options, current) in [
        ("rw,nosuid", "104857600\n"),
        ("rw,nosuid,memory_hugetlb_accounting", "1178599424\n"),
    ] {
        let mut f = files.to_vec();
        f.push(("/sys/fs/cgroup/db/memory.current", current));
        let (_d, root) = tree(
            &format!("cgroup2 /sys/fs/cgroup cgroup2 {options} 0 0\n"),
            &f,
        );
        let h = hierarchies(&root).unwrap();
        assert_eq!(
            h.memory_counts_hugetlb,
            options.contains("memory_hugetlb_accounting")
        );
        let g = read(&root, &h, "/db").unwrap().unwrap();
        assert_eq!(g.total(), (1 << 30) + (100 << 20), "{options}");
        let share = g.share().unwrap();
        assert!((share - 1024.0 / 1124.0).abs() < 1e-9, "{options}: {share}");
    }
}
