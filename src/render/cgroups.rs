//! cgroups for people: `top --cgroups` as a table, `inspect --cgroup` as the kernel's figures
//! beside its processes' own.

use super::{fit, table};
use crate::model::cgroup::{CgroupInstance, CgroupRow, CgroupTop};
use crate::units::Bytes;
use std::fmt::Write;

fn bytes(v: Option<u64>) -> String {
    v.map_or("-".into(), |b| Bytes(b).to_string())
}

fn hugetlb(r: &CgroupRow) -> String {
    if r.group.hugetlb_from.is_none() {
        return "-".into();
    }
    let used: Vec<String> = r
        .group
        .hugetlb
        .iter()
        .filter(|(_, b)| **b > 0)
        .map(|(ps, b)| format!("{} ({})", Bytes(*b), Bytes(*ps)))
        .collect();
    if used.is_empty() {
        "0B".into()
    } else {
        used.join(" + ")
    }
}

fn share(r: &CgroupRow) -> String {
    r.share.map_or("-".into(), |s| format!("{:.1}%", s * 100.0))
}

/// `top --cgroups`: a row per group; file and shmem THP only where some group's hierarchy counts
/// them (cgroup v2), the "what" column only where a path names a pod or container (a unit is
/// its path's last part already).
pub fn top(t: &CgroupTop) -> String {
    let v2 = t
        .rows
        .iter()
        .any(|r| r.group.file_thp.is_some() || r.group.shmem_thp.is_some());
    let what = |r: &CgroupRow| {
        crate::probe::cgroup::labels::Labels {
            unit: None,
            ..r.labels.clone()
        }
        .describe()
    };
    let named = t.rows.iter().any(|r| !what(r).is_empty());
    let mut head = vec!["cgroup", "memory", "anon THP"];
    if v2 {
        head.extend(["file THP", "shmem THP"]);
    }
    head.extend(["hugetlb", "on huge"]);
    if named {
        head.push("what");
    }
    let mut tb = table(&head);
    for r in &t.rows {
        let g = &r.group;
        let mut row = vec![g.path.clone(), bytes(g.memory), bytes(g.anon_thp)];
        if v2 {
            row.extend([bytes(g.file_thp), bytes(g.shmem_thp)]);
        }
        row.extend([hugetlb(r), share(r)]);
        if named {
            row.push(what(r));
        }
        tb.add_row(row);
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "the kernel's own accounting ({}): each group with its descendants; memory = memory.current \
         (v1: memory.usage_in_bytes), without hugetlb pages; anon THP = anon_thp (v1: total_rss_huge); \
         file and shmem THP are counted by cgroup v2 only; - = not counted there; on huge = huge \
         bytes of memory + hugetlb",
        t.hierarchies
    );
    let _ = writeln!(
        o,
        "{} of the {} groups down to depth {} shown (--limit, --depth)",
        t.rows.len(),
        t.groups_read,
        t.depth
    );
    format!("{}\n{}", fit(&mut tb), super::words::wrap_lines(&o))
}

/// `inspect --cgroup PATH`: the kernel's figures, then its processes' smaps read as one.
pub fn instance(c: &CgroupInstance) -> String {
    let r = &c.cgroup;
    let g = &r.group;
    let mut o = String::new();
    let what = r.labels.describe();
    let _ = writeln!(
        o,
        "cgroup {}{}: {} process{} in it and below",
        g.path,
        if what.is_empty() {
            String::new()
        } else {
            format!(" ({what})")
        },
        c.pids.len(),
        if c.pids.len() == 1 { "" } else { "es" }
    );
    let from = |v: Option<crate::probe::cgroup::Version>| v.map_or("-", |v| v.name());
    let mut kernel = format!(
        "the kernel (memory {}, hugetlb {}): memory {}, anon THP {}",
        from(g.memory_from),
        from(g.hugetlb_from),
        bytes(g.memory),
        bytes(g.anon_thp)
    );
    if g.file_thp.is_some() || g.shmem_thp.is_some() {
        let _ = write!(
            kernel,
            ", file THP {}, shmem THP {}",
            bytes(g.file_thp),
            bytes(g.shmem_thp)
        );
    }
    let _ = write!(
        kernel,
        ", hugetlb {}: {} of {} on huge pages ({})",
        hugetlb(r),
        Bytes(r.huge_bytes),
        Bytes(r.total_bytes),
        share(r)
    );
    let m = &c.memory;
    let tlb: Vec<String> = m
        .hugetlb
        .iter()
        .map(|(ps, b)| format!("{} ({})", Bytes(*b), Bytes(*ps)))
        .collect();
    let procs = format!(
        "its processes' smaps, as one (shared memory once): resident {}, AnonHugePages {}, \
         ShmemPmdMapped {}, FilePmdMapped {}, hugetlb {}",
        Bytes(m.rss),
        Bytes(m.anon_huge),
        Bytes(m.shmem_pmd),
        Bytes(m.file_pmd),
        if tlb.is_empty() {
            "0B".into()
        } else {
            tlb.join(" + ")
        }
    );
    for l in [kernel, procs] {
        for w in super::words::wrap_hanging(&format!("  {l}"), 4) {
            let _ = writeln!(o, "{w}");
        }
    }
    for s in &m.segments {
        let _ = writeln!(o, "  {}", s.describe());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::cgroup::{Group, Version};

    fn row() -> CgroupRow {
        CgroupRow::from(Group {
            path: "/system.slice/postgresql.service".into(),
            memory: Some(300 << 20),
            anon_thp: Some(64 << 20),
            hugetlb: [(2 << 20, 36 << 20)].into(),
            memory_from: Some(Version::V1),
            hugetlb_from: Some(Version::V2),
            ..Default::default()
        })
    }

    #[test]
    fn a_group_reads_as_the_kernel_counts_it_with_what_its_path_says() {
        let t = CgroupTop {
            schema: "hugelab.top-cgroups/1",
            hierarchies:
                "memory on v1 (/sys/fs/cgroup/memory), hugetlb on v2 (/sys/fs/cgroup/unified)"
                    .into(),
            depth: 4,
            groups_read: 9,
            rows: vec![row()],
        };
        let s = top(&t);
        assert!(s.contains("/system.slice/postgresql.service"), "{s}");
        // v1 counts no file or shmem THP: shown as not counted, never as 0.
        let line = s.lines().find(|l| l.contains("postgresql")).unwrap();
        assert!(
            line.contains("300M")
                && line.contains("64M")
                && line.contains("36M (2M)")
                && line.contains("29.8%"),
            "{line}"
        );
        assert!(!s.contains("file THP") && !s.contains("what"), "{s}");
        assert!(s.contains("1 of the 9 groups down to depth 4"), "{s}");
        let i = instance(&CgroupInstance {
            cgroup: row(),
            pids: vec![42],
            memory: Default::default(),
        });
        assert!(
            i.starts_with(
                "cgroup /system.slice/postgresql.service (unit postgresql.service): 1 process in it"
            ),
            "{i}"
        );
        assert!(i.contains("the kernel (memory v1, hugetlb v2): memory 300M, anon THP 64M, hugetlb 36M (2M): 100M of 336M"), "{i}");
        assert!(!i.contains("file THP"), "v1 has none: {i}");
        for l in s.lines().chain(i.lines()) {
            assert!(l.chars().count() <= 100, "{l}");
        }
    }
}
