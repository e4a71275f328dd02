use super::*;

const POSTMASTER: &str = "\
7f0000000000-7f0040200000 rw-s 00000000 00:10 5 /anon_hugepage (deleted)
Size:            1050624 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
Shared_Hugetlb:   204800 kB
Private_Hugetlb:       0 kB
VmFlags: rd wr sh mr mw me ms de ht
55d000000000-55d000800000 rw-p 00000000 00:00 0 [heap]
Size:               8192 kB
KernelPageSize:        4 kB
Rss:                8192 kB
AnonHugePages:      4096 kB
";
const BACKEND: &str = "\
7f0000000000-7f0040200000 rw-s 00000000 00:10 5 /anon_hugepage (deleted)
Size:            1050624 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
Shared_Hugetlb:   409600 kB
VmFlags: rd wr sh mr mw me ms de ht
55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]
Size:               1024 kB
KernelPageSize:        4 kB
Rss:                1024 kB
";

#[test]
fn a_shared_segment_is_counted_once_and_named() {
    let mut mem = GroupMemory::default();
    let mut seen = Seen::new();
    add_process(
        &mut mem,
        10,
        "postgres",
        &parse_smaps(POSTMASTER).unwrap(),
        &mut seen,
    );
    add_process(
        &mut mem,
        11,
        "postgres",
        &parse_smaps(BACKEND).unwrap(),
        &mut seen,
    );
    keep_largest(&mut mem);
    assert_eq!(mem.processes, 2);
    // The segment once, at the largest view of it (the backend's, which touched more
    // than the postmaster); both heaps.
    assert_eq!(mem.hugetlb, BTreeMap::from([(2 << 20, 400 << 20)]));
    assert_eq!(mem.rss, 9 << 20);
    assert_eq!(mem.anon_huge, 4 << 20);
    let c = mem.carried_by().unwrap();
    assert_eq!((c.pid, c.kind.as_str(), c.huge), (11, "hugetlb", 400 << 20));
    assert_eq!(
        c.describe(),
        "/anon_hugepage (deleted) 1.0G (pid 11 postgres): 400M on 2M hugetlb"
    );
    assert_eq!(c.counted.as_deref(), Some("page tables"));
    let cov = mem.coverage().unwrap();
    assert!((cov - 404.0 / 409.0).abs() < 1e-9, "{cov}");
    assert_eq!(mem.segments.len(), 3, "{:?}", mem.segments);
}

#[test]
fn regions_the_server_asked_thp_for_are_counted_once() {
    let jvm = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
KernelPageSize:        4 kB
Rss:                4096 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac hg
7f1000000000-7f1000200000 rw-s 00000000 00:01 9 /dev/zero (deleted)
Size:               2048 kB
KernelPageSize:        4 kB
Rss:                   0 kB
VmFlags: rd wr sh mr mw me hg
";
    let mut mem = GroupMemory::default();
    let mut seen = Seen::new();
    let maps = parse_smaps(jvm).unwrap();
    add_process(&mut mem, 1, "java", &maps, &mut seen);
    // A forked child maps the same shared region: counted once.
    add_process(&mut mem, 2, "java", &maps[1..], &mut seen);
    assert_eq!(mem.madvised, 6 << 20);
}

#[test]
fn thp_eligible_memory_it_did_not_advise_is_counted() {
    // As smaps reads under THP always: an advised region, an unadvised eligible one, an
    // unadvised one the process's advised policy keeps off THP, and shared memory.
    let text = "\
7f0000000000-7f0000800000 rw-p 00000000 00:00 0
Size:               8192 kB
Rss:                8192 kB
THPeligible:    1
VmFlags: rd wr mr mw me ac hg
7f0000800000-7f0001000000 rw-p 00000000 00:00 0
Size:               8192 kB
Rss:                8192 kB
THPeligible:    1
VmFlags: rd wr mr mw me ac
7f0001000000-7f0001400000 rw-p 00000000 00:00 0
Size:               4096 kB
Rss:                4096 kB
THPeligible:    0
VmFlags: rd wr mr mw me ac
7f1000000000-7f1000200000 rw-s 00000000 00:01 9 /dev/zero (deleted)
Size:               2048 kB
Rss:                2048 kB
THPeligible:    1
VmFlags: rd wr sh mr mw me
";
    let mut mem = GroupMemory::default();
    add_process(
        &mut mem,
        1,
        "x",
        &parse_smaps(text).unwrap(),
        &mut Seen::new(),
    );
    assert_eq!(
        (mem.madvised, mem.thp_eligible_unadvised),
        (8 << 20, 8 << 20)
    );
}

#[test]
fn this_process_is_read_live() {
    let me = std::process::id() as i32;
    let mem = read(me);
    assert!(mem.processes >= 1 && mem.rss > 0, "{mem:?}");
    // Burn CPU until the kernel has counted a clock tick of it (bounded by work, not time).
    let mut x = 0u64;
    let mut cpu = tree_cpu_ns(me);
    for _ in 0..1000 {
        if cpu > 0 {
            break;
        }
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        cpu = tree_cpu_ns(me);
    }
    assert!(cpu > 0);
}

/// PostgreSQL's 552 MiB segment, 340 MiB of it touched: on 4 KiB pages the server at its
/// configuration holds the whole segment, as the hugetlb server (its segment reserved whole)
/// does; a private region's untouched pages are not added.
#[test]
fn a_server_at_its_configuration_holds_its_shared_segments_whole() {
    const MIB: u64 = 1 << 20;
    let seg = |kind: &str, size, resident, shared| Segment {
        kind: kind.into(),
        size: size * MIB,
        resident: resident * MIB,
        shared,
        ..Default::default()
    };
    let four_k = GroupMemory {
        processes: 6,
        rss: 382 * MIB,
        segments: vec![seg("shm", 552, 340, true), seg("heap", 100, 20, false)],
        ..Default::default()
    };
    assert_eq!(four_k.cost_bytes(), 382 * MIB);
    assert_eq!(four_k.configured_bytes(), (382 + 212) * MIB);
    let hugetlb = GroupMemory {
        processes: 6,
        rss: 51 * MIB,
        hugetlb: [(2 * MIB, 340 * MIB)].into(),
        hugetlb_committed: 552 * MIB,
        segments: vec![seg("hugetlb", 552, 340, true)],
        ..Default::default()
    };
    // Committed whole already: nothing is added.
    assert_eq!(hugetlb.configured_bytes(), hugetlb.cost_bytes());
    assert_eq!(hugetlb.configured_bytes(), 603 * MIB);
}
