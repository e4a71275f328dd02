//! Evidence from a `run --server` server: the memory of its whole process tree (a PostgreSQL
//! postmaster and its backends; a shared segment counted once), the segments that matter
//! (shared memory and the largest anonymous heaps) with the page size each is on, which
//! processes have THP disabled for themselves, and the tree's CPU time. Read after the load,
//! off the measuring path, on the same schedule for every arm.

use crate::probe::process::{Kind, Mapping, kind, parse_smaps, parse_status, stat, tree};
use crate::units::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// One mapping of the server that matters: a shared segment or a large anonymous region.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    pub pid: i32,
    pub comm: String,
    /// The mapping's path (`/dev/zero (deleted)`, `/anon_hugepage (deleted)`, `/SYSV…`, `[heap]`).
    pub path: String,
    /// `shm`, `hugetlb`, `heap`, `anon`, … (as `inspect` names them).
    pub kind: String,
    pub size: u64,
    /// Resident bytes: Rss, or the hugetlb bytes of a hugetlb mapping.
    pub resident: u64,
    /// Bytes on huge pages: hugetlb, AnonHugePages, ShmemPmdMapped, FilePmdMapped.
    pub huge: u64,
    /// KernelPageSize: 2M or 1G for hugetlb; THP shows as 4K here (its huge bytes say more).
    pub page_size: u64,
    pub shared: bool,
}

impl Segment {
    /// `/dev/zero (deleted) 1.0G (pid 812 postgres): 1.0G on 2M hugetlb`.
    pub fn describe(&self) -> String {
        let on = if self.huge == 0 {
            "on 4K pages".to_string()
        } else if self.kind == "hugetlb" {
            format!("{} on {} hugetlb", Bytes(self.huge), Bytes(self.page_size))
        } else {
            format!(
                "{} of {} resident on THP",
                Bytes(self.huge),
                Bytes(self.resident)
            )
        };
        let path = if self.path.is_empty() {
            "anonymous"
        } else {
            &self.path
        };
        format!(
            "{path} {} (pid {} {}): {on}",
            Bytes(self.size),
            self.pid,
            self.comm
        )
    }
}

/// The server's memory after the load.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerMemory {
    /// Processes in the server's tree when read.
    pub processes: usize,
    /// Rss of every process, shared mappings counted once, bytes (hugetlb apart).
    pub rss: u64,
    pub anon_huge: u64,
    pub shmem_pmd: u64,
    pub file_pmd: u64,
    /// Hugetlb bytes per page size (not part of Rss), shared mappings counted once.
    pub hugetlb: BTreeMap<u64, u64>,
    /// Processes whose THP is disabled for themselves (`THP_enabled: 0`): "pid comm".
    pub thp_disabled: Vec<String>,
    /// The largest shared segments and anonymous regions, largest first.
    pub segments: Vec<Segment>,
}

impl ServerMemory {
    pub fn hugetlb_total(&self) -> u64 {
        self.hugetlb.values().sum()
    }

    /// Bytes on PMD-mapped THP (anonymous, shared memory or file).
    pub fn thp(&self) -> u64 {
        self.anon_huge + self.shmem_pmd + self.file_pmd
    }

    /// Share of resident memory (Rss + hugetlb) on huge pages.
    pub fn coverage(&self) -> Option<f64> {
        let resident = self.rss + self.hugetlb_total();
        (resident > 0).then(|| (self.thp() + self.hugetlb_total()) as f64 / resident as f64)
    }

    /// The segment that carried the most huge pages, if any did.
    pub fn carried_by(&self) -> Option<&Segment> {
        self.segments
            .iter()
            .filter(|s| s.huge > 0)
            .max_by_key(|s| s.huge)
    }
}

fn huge_of(m: &Mapping) -> u64 {
    m.field("AnonHugePages")
        + m.field("ShmemPmdMapped")
        + m.field("FilePmdMapped")
        + m.field("Private_Hugetlb")
        + m.field("Shared_Hugetlb")
}

/// Add one process's mappings; `seen` holds the shared mappings already counted.
pub fn add_process(
    mem: &mut ServerMemory,
    pid: i32,
    comm: &str,
    maps: &[Mapping],
    seen: &mut BTreeSet<(String, u64, u64)>,
) {
    mem.processes += 1;
    for m in maps {
        let shared = m.perms.ends_with('s');
        if shared && !seen.insert((m.path.clone(), m.start, m.end)) {
            continue; // the same segment, inherited by a forked worker
        }
        let k = kind(m);
        let hugetlb = m.field("Private_Hugetlb") + m.field("Shared_Hugetlb");
        mem.rss += m.field("Rss");
        mem.anon_huge += m.field("AnonHugePages");
        mem.shmem_pmd += m.field("ShmemPmdMapped");
        mem.file_pmd += m.field("FilePmdMapped");
        if hugetlb > 0 {
            *mem.hugetlb.entry(m.field("KernelPageSize")).or_default() += hugetlb;
        }
        let matters = match k {
            Kind::SharedMemory | Kind::Hugetlb => true,
            Kind::Heap | Kind::Anonymous | Kind::JavaHeap => m.field("Rss") >= 1 << 20,
            _ => false,
        };
        if matters {
            mem.segments.push(Segment {
                pid,
                comm: comm.to_string(),
                path: m.path.clone(),
                kind: k.name().to_string(),
                size: m.size(),
                resident: m.field("Rss") + hugetlb,
                huge: huge_of(m),
                page_size: m.field("KernelPageSize"),
                shared,
            });
        }
    }
}

/// Keep the 4 largest shared segments and the 4 largest private regions.
pub fn keep_largest(mem: &mut ServerMemory) {
    let mut all = std::mem::take(&mut mem.segments);
    all.sort_by(|a, b| {
        b.resident
            .max(b.size * b.shared as u64)
            .cmp(&a.resident.max(a.size * a.shared as u64))
    });
    let (shared, private): (Vec<_>, Vec<_>) = all.into_iter().partition(|s| s.shared);
    mem.segments = shared
        .into_iter()
        .take(4)
        .chain(private.into_iter().take(4))
        .collect();
}

/// Read the memory of `pid` and its descendants now.
pub fn read(pid: i32) -> ServerMemory {
    let mut mem = ServerMemory::default();
    let mut seen = BTreeSet::new();
    for p in tree(pid) {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{p}/smaps")) else {
            continue; // exited since the tree was listed
        };
        let status = std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|t| parse_status(&t).ok())
            .unwrap_or_default();
        if status.thp_enabled == Some(false) {
            mem.thp_disabled.push(format!("{p} {}", status.name));
        }
        if let Ok(maps) = parse_smaps(&text) {
            add_process(&mut mem, p, &status.name, &maps, &mut seen);
        }
    }
    keep_largest(&mut mem);
    mem
}

/// CPU time (user + system) of `pid` and its descendants so far, ns: live ones by their own
/// time, exited ones (PostgreSQL's backends after their client left) by their parent's
/// waited-for children's time; each process is counted once.
pub fn tree_cpu_ns(pid: i32) -> u64 {
    let ticks: u64 = tree(pid)
        .into_iter()
        .filter_map(|p| stat(p).map(|s| s.cpu_ticks + s.reaped_children_ticks))
        .sum();
    ticks * super::noise::tick_ns()
}

#[cfg(test)]
mod tests {
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
        let mut mem = ServerMemory::default();
        let mut seen = BTreeSet::new();
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
        // The segment once, as the postmaster saw it; both heaps.
        assert_eq!(mem.hugetlb, BTreeMap::from([(2 << 20, 200 << 20)]));
        assert_eq!(mem.rss, 9 << 20);
        assert_eq!(mem.anon_huge, 4 << 20);
        let c = mem.carried_by().unwrap();
        assert_eq!((c.pid, c.kind.as_str(), c.huge), (10, "hugetlb", 200 << 20));
        assert_eq!(
            c.describe(),
            "/anon_hugepage (deleted) 1.0G (pid 10 postgres): 200M on 2M hugetlb"
        );
        let cov = mem.coverage().unwrap();
        assert!((cov - 204.0 / 209.0).abs() < 1e-9, "{cov}");
        assert_eq!(mem.segments.len(), 3, "{:?}", mem.segments);
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
}
