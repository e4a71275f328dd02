//! What a service's server held in memory during a trial, as the kernel accounts it.

use crate::units::Bytes;
use std::collections::BTreeMap;

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
    /// How a shared segment's residency was counted: `segment` (the object itself, through
    /// map_files) or `page tables` (the largest view any process of the server has of it).
    #[serde(default)]
    pub counted: Option<String>,
    /// Where the mapping was, in the process `pid` (to find the object behind it).
    #[serde(skip)]
    pub range: (u64, u64),
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

/// The memory of a process group or tree: a server's (read after its load), a command's (at
/// the sampler's largest walk), a watched or inspected process's.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GroupMemory {
    /// Processes in the server's tree when read.
    pub processes: usize,
    /// Rss of every process, shared mappings counted once, bytes (hugetlb apart).
    pub rss: u64,
    pub anon_huge: u64,
    pub shmem_pmd: u64,
    pub file_pmd: u64,
    /// Hugetlb bytes per page size (not part of Rss), shared mappings counted once.
    #[serde(deserialize_with = "crate::units::size_keys::deserialize")]
    pub hugetlb: BTreeMap<u64, u64>,
    /// Processes whose THP is disabled for themselves (`THP_enabled: 0`): "pid comm".
    pub thp_disabled: Vec<String>,
    /// Processes whose `THP_enabled` was read (one that exits between its smaps and its status
    /// read is not counted: what the kernel said of it is unknown).
    #[serde(default)]
    pub thp_read: usize,
    /// The largest shared segments and anonymous regions, largest first.
    pub segments: Vec<Segment>,
    /// Bytes referenced since the referenced bits were last cleared (`run --hot` clears them
    /// before each load): smaps `Referenced`, shared mappings by the view counted (so at
    /// least what the group touched there). Hugetlb is not tracked.
    #[serde(default)]
    pub referenced: u64,
    /// Bytes of mappings the server asked THP for (MADV_HUGEPAGE: VmFlags `hg`).
    #[serde(default)]
    pub madvised: u64,
    /// Bytes of private anonymous mappings it did not advise that the kernel would give THP
    /// (smaps `THPeligible: 1` without `hg`): 0 for a process whose THP is off, or on only
    /// where advised (PR_THP_DISABLE_EXCEPT_ADVISED), or under THP `madvise`.
    #[serde(default)]
    pub thp_eligible_unadvised: u64,
    /// Hugetlb bytes committed to the group's mappings, shared ones once: a mapping's whole
    /// size (its pages faulted, or reserved from the pool at mmap and not yet used: memory
    /// nothing else can have), or what is resident where it was mapped MAP_NORESERVE
    /// (VmFlags `nr`).
    #[serde(default)]
    pub hugetlb_committed: u64,
    /// The kernel's own accounting at the same moment, machine-wide.
    #[serde(default)]
    pub kernel: Option<KernelHuge>,
}

/// The kernel's machine-wide huge-page accounting, read beside a server's memory.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KernelHuge {
    /// Per hugetlb page size, bytes of the pool in use (total − free; reserved pages not yet
    /// faulted count as free).
    #[serde(deserialize_with = "crate::units::size_keys::deserialize")]
    pub hugetlb_in_use: BTreeMap<u64, u64>,
    /// Per hugetlb page size, bytes reserved and not yet faulted (HugePages_Rsvd).
    #[serde(default, deserialize_with = "crate::units::size_keys::deserialize")]
    pub hugetlb_reserved: BTreeMap<u64, u64>,
    /// ShmemHugePages: shared memory (and tmpfs) on PMD-sized THP, bytes.
    pub shmem_huge: u64,
    /// AnonHugePages, bytes.
    pub anon_huge: u64,
    /// The mTHP gauges per size (`mthp.<size>.nr_anon`, `…nr_anon_partially_mapped`).
    #[serde(default)]
    pub thp_gauges: BTreeMap<String, u64>,
}

impl GroupMemory {
    pub fn hugetlb_total(&self) -> u64 {
        self.hugetlb.values().sum()
    }

    /// What the group's memory costs everything else: resident memory (shared segments once)
    /// plus the hugetlb pages committed to it, faulted or reserved.
    pub fn cost_bytes(&self) -> u64 {
        self.rss + self.hugetlb_committed.max(self.hugetlb_total())
    }

    /// The group's memory at its configuration, fully used: [`cost_bytes`](Self::cost_bytes)
    /// with every shared memory segment on ordinary or THP pages counted at the size it
    /// declared, not at the pages touched so far. A hugetlb segment is committed whole at start
    /// (its pages reserved from the pool), so this is what sets a server on 4 KiB pages against
    /// one on hugetlb like with like: PostgreSQL's `shared_buffers` whole on both sides.
    pub fn configured_bytes(&self) -> u64 {
        let untouched: u64 = self
            .segments
            .iter()
            .filter(|s| s.shared && s.kind == "shm")
            .map(|s| s.size.saturating_sub(s.resident))
            .sum();
        self.cost_bytes() + untouched
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

/// What the server's processes held while its load ran: cheap reads of `/proc/PID/status`
/// only (no page-table walk, so the reading costs every arm the same and next to nothing).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LoadView {
    /// Read while the load ran (false: the load had ended first).
    pub during_load: bool,
    /// Processes in the server's tree (PostgreSQL: a backend per client connection).
    pub processes: usize,
    /// Sum of the processes' VmRSS, bytes (a shared segment counted in every process that
    /// maps it: a view, not the server's footprint).
    pub rss_sum: u64,
    /// Largest HugetlbPages of any one process, bytes.
    pub hugetlb_max: u64,
}

/// How the server ended when it was stopped.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// It had exited before it was asked to stop.
    pub exited_early: bool,
    /// It outlived the grace period after SIGTERM and was killed.
    pub killed: bool,
    /// From SIGTERM to its exit, ns (the stop cost of a restart per trial).
    pub stop_ns: u64,
    /// Descendants still alive after the server exited, killed then.
    pub orphans_killed: usize,
}

impl ServerEnd {
    /// The end in words when it is a failure: the server had died, or died from a signal.
    pub fn failure(&self) -> Option<String> {
        let how = match (self.exit_code, self.signal) {
            (_, Some(s)) => format!("killed by {}", crate::model::trial::outcome::signal_name(s)),
            (Some(c), _) => format!("exit {c}"),
            (None, None) => "status unknown".to_string(),
        };
        let bus = if self.signal == Some(libc::SIGBUS) {
            " — SIGBUS with huge pages means a hugetlb page was not there at first touch (a pool or a hugetlb cgroup limit ran out): a crash, not a fallback"
        } else {
            ""
        };
        if self.exited_early {
            Some(format!("the server exited during the load ({how}){bus}"))
        } else if self
            .signal
            .is_some_and(|s| s != libc::SIGTERM && s != libc::SIGKILL)
        {
            Some(format!("the server ended {how} when stopped{bus}"))
        } else {
            None
        }
    }
}
