//! Records of `hugelab inspect`, `top` and `collapse`.

use crate::analyze::inspect::Kind;
pub use crate::analyze::inspect::{MappingReport, ProcessReport};
pub use crate::analyze::vm::{GuestRam, HostAdvice};

#[derive(Debug, Clone, serde::Serialize)]
pub struct InspectResult {
    pub schema: &'static str,
    pub processes: Vec<ProcessReport>,
    pub errors: Vec<String>,
    /// `--tree`: each PID's process tree as one instance (shared memory counted once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<Instance>,
    /// The hugetlb pools with pages, when a process maps hugetlb memory or with `--tree`:
    /// in use, reserved (promised to a mapping, not yet touched) and free.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<crate::probe::hugetlb::Pool>,
    /// `--hot`: each process's memory referenced in the window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hot: Vec<crate::analyze::hot::HotSet>,
    /// With `--hot`: the TLB reach `bench tlb` measured on this host (null if never), and what
    /// CPUID declares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<HotContext>,
}

/// What a hot set is held against: the measured reach, and CPUID's geometry.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HotContext {
    pub measured: Option<crate::analyze::tlb::Measured>,
    /// The results database the measured reach was looked for in.
    pub db: String,
    pub geometry: crate::probe::tlb::TlbGeometry,
    /// Hot-set processes that could not be read (clear_refs refused, gone).
    pub errors: Vec<String>,
}

/// A server and its workers, read as one: the root PID and the memory of its tree.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Instance {
    pub pid: u32,
    pub name: String,
    pub memory: crate::collect::server::GroupMemory,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TopRow {
    pub pid: u32,
    pub name: String,
    pub thp_enabled: Option<bool>,
    pub resident: u64,
    pub anon_huge_pages: u64,
    pub hugetlb: u64,
    /// Includes mTHP only with --full as root.
    pub huge_bytes: u64,
    pub coverage: Option<f64>,
    /// For a hypervisor process: its guest RAM (from smaps, read for VMs only).
    pub guest_ram: Option<GuestRam>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CollapseRow {
    pub start: u64,
    pub end: u64,
    pub kind: Kind,
    pub requested: u64,
    pub huge_before: u64,
    pub huge_after: u64,
    pub resident: u64,
    pub elapsed_ms: f64,
    pub error: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CollapseResult {
    pub schema: &'static str,
    pub pid: u32,
    pub name: String,
    pub rows: Vec<CollapseRow>,
    pub coverage_before: Option<f64>,
    pub coverage_after: Option<f64>,
    pub elapsed_ms: f64,
}
