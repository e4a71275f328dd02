//! Records of `hugelab exporter`: one scrape's machine state, watched processes and the
//! exporter's own health, rendered by `render::prometheus`.

use crate::model::machine::status::Status;
use std::collections::BTreeMap;

/// One watched process at scrape time. Absent (not zero) when it is gone: its series drop.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WatchedProcess {
    pub pid: u32,
    pub comm: String,
    /// Rss plus hugetlb (hugetlb is not in Rss), bytes, from the last smaps_rollup read.
    pub resident: u64,
    /// Huge bytes by kind: `anon_thp` (AnonHugePages), `shmem_pmd`, `file_pmd`, `hugetlb`.
    pub huge: BTreeMap<String, u64>,
    /// Huge bytes over resident bytes (PMD-mapped and hugetlb; mTHP is in `folios`).
    pub coverage: Option<f64>,
    /// Share of the memory that matters (its largest regions, `analyze::flagged`) on huge
    /// pages; `None` when those regions hold under 8 MiB.
    pub matters: Option<f64>,
    /// Age of the smaps_rollup numbers: a process whose page-table walk costs more than the
    /// budget is read less often.
    pub rollup_age_s: f64,
    /// Folio size → resident bytes from the last complete pagemap + kpageflags pass (root only).
    pub folios: Option<BTreeMap<u64, u64>>,
    /// Age of `folios`: the pass that produced them ended this long ago.
    pub folios_age_s: Option<f64>,
    /// The folio pass underway: the share of the address space walked so far (`None`: none
    /// underway, or folio sizes unavailable). Before the first pass completes, `folios` is
    /// `None` and this says how far it has come.
    pub folio_pass_progress: Option<f64>,
}

/// The exporter's own health, accumulated over its life.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ExporterHealth {
    pub scrapes: u64,
    /// Collection time of this scrape (before encoding), seconds.
    pub last_duration_s: f64,
    /// Errors by source (`status`, `process`, `folios`), counted since start.
    pub errors: BTreeMap<String, u64>,
    /// Longest time one watched process's page tables were walked in one scrape, seconds.
    pub max_walk_s: f64,
    pub budget_s: f64,
    /// Series promised but not served this scrape, by family, with the count of the
    /// processes (or groups) they are missing for: folio sizes whose first pass has not
    /// completed within `--budget` (`process_folio_bytes`).
    pub pending: BTreeMap<String, u64>,
}

/// One kind of kernel stall since the exporter started (`--trace`), as a Prometheus histogram.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StallHistogram {
    pub kind: String,
    pub sum_s: f64,
    pub count: u64,
    /// (upper bound in seconds, stalls in this bucket — not cumulative); the last bound is +Inf.
    pub buckets: Vec<(f64, u64)>,
}

/// Everything one scrape exports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Scrape {
    pub status: Status,
    pub processes: Vec<WatchedProcess>,
    /// Each `--pid` asked for: whether it was there to read this scrape.
    #[serde(default)]
    pub watched_up: Vec<(u32, bool)>,
    pub health: ExporterHealth,
    pub version: &'static str,
    /// `--trace`: stall histograms since start, and records the kernel dropped.
    pub stalls: Vec<StallHistogram>,
    pub trace_lost: Option<u64>,
    /// cgroups with the most memory (`--cgroups N`), or `None` when off or none is mounted.
    pub cgroups: Option<CgroupScrape>,
}

/// The cgroups one scrape exports: the largest by memory, down to a depth.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CgroupScrape {
    pub rows: Vec<crate::model::cgroup::CgroupRow>,
    /// Groups read (below the root, down to the depth) before the largest were kept.
    pub read: usize,
    /// Age of the rows: a walk that cost more than `--budget` is repeated less often.
    pub age_s: f64,
}
