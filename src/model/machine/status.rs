//! What `status` reads of the machine, whole: the record stored with every run.

use crate::model::machine::cpu::Cpu;
use crate::model::machine::hugetlb::{HugetlbfsMount, Pool};
use crate::model::machine::memory::{Fragmentation, Meminfo, Zone};
use crate::model::machine::pmu::PmuCapability;
use crate::model::machine::thp::Thp;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tracing {
    /// tracefs is mounted and its events directory is readable.
    pub available: bool,
    pub path: Option<String>,
    /// tracefs is in /proc/filesystems but not mounted.
    pub mountable: bool,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Status {
    pub schema: String,
    pub kernel: Option<String>,
    pub base_page_size: u64,
    pub cpu: Cpu,
    /// Page sizes the MMU supports, bytes.
    pub cpu_page_sizes: Vec<u64>,
    pub pmu: PmuCapability,
    pub tracing: Tracing,
    pub thp: Thp,
    pub hugetlb: Vec<Pool>,
    pub hugetlbfs_mounts: Vec<HugetlbfsMount>,
    pub memory: Meminfo,
    pub zones: Vec<Zone>,
    /// At the PMD huge page order (order 9 with 4 KiB base pages).
    pub fragmentation: Option<Fragmentation>,
    /// `thp_*` and `compact_*` from /proc/vmstat, totals since boot.
    pub counters: BTreeMap<String, u64>,
    /// The compaction knobs that decide how often a THP fault finds a free 2 MiB block.
    #[serde(default)]
    pub compaction: Compaction,
    pub is_root: bool,
    /// Files that could not be read without root, and what is missing because of them.
    pub unreadable: Vec<String>,
}

/// `/proc/sys/vm` knobs that govern how free 2 MiB blocks are made.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Compaction {
    /// `vm.compaction_proactiveness` (0–100, Linux 5.9+): how hard kcompactd compacts ahead
    /// of demand.
    pub proactiveness: Option<u64>,
    /// `vm.defrag_mode` (0/1, Linux 6.15+): with 1, kswapd and kcompactd reclaim and compact
    /// in whole pageblocks, so THP faults fall back less.
    pub defrag_mode: Option<u64>,
}
