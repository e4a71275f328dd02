//! Transparent huge pages as read: the THP modes, khugepaged and the mTHP sizes.

use std::collections::BTreeMap;

pub const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// khugepaged tunables and progress counters. Every field is `None` where the kernel lacks it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Khugepaged {
    pub pages_to_scan: Option<u64>,
    pub scan_sleep_millisecs: Option<u64>,
    pub alloc_sleep_millisecs: Option<u64>,
    pub max_ptes_none: Option<u64>,
    pub max_ptes_swap: Option<u64>,
    /// Since Linux 5.8.
    pub max_ptes_shared: Option<u64>,
    pub defrag: Option<u64>,
    pub full_scans: Option<u64>,
    pub pages_collapsed: Option<u64>,
}

/// One multi-size THP (mTHP) size, `hugepages-<size>kB`. Since Linux 6.8.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MthpSize {
    pub size_bytes: u64,
    pub enabled: Option<Selector>,
    /// Since Linux 6.11.
    pub shmem_enabled: Option<Selector>,
    /// Counters under `stats/` since boot (anon_fault_alloc, anon_fault_fallback, nr_anon, …).
    pub stats: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Thp {
    /// `None` when the kernel is built without THP.
    pub enabled: Option<Selector>,
    pub defrag: Option<Selector>,
    pub shmem_enabled: Option<Selector>,
    pub use_zero_page: Option<u64>,
    /// `shrink_underused` (Linux 6.12+): THPs mostly of zero-filled subpages are split under
    /// memory pressure.
    #[serde(default)]
    pub shrink_underused: Option<u64>,
    /// PMD huge page size in bytes (2 MiB on x86-64). Since Linux 5.3.
    pub hpage_pmd_size: Option<u64>,
    pub khugepaged: Khugepaged,
    /// Empty on kernels before 6.8.
    pub mthp: Vec<MthpSize>,
}

/// A sysfs selector such as `always [madvise] never`: the choices and the bracketed one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Selector {
    pub selected: String,
    pub choices: Vec<String>,
}
