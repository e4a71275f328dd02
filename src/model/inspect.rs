//! Records of `hugelab inspect`, `top` and `collapse`.
use crate::model::machine::process::ProcStatus;
use crate::model::machine::thp::Thp;
use std::collections::BTreeMap;

use crate::model::machine::process::Kind;
pub use crate::model::vm::GuestRam;
pub use crate::model::vm::HostAdvice;

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
    pub pools: Vec<crate::model::machine::hugetlb::Pool>,
    /// `--hot`: each process's memory referenced in the window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hot: Vec<crate::model::inspect::HotSet>,
    /// With `--hot`: the TLB reach `bench tlb` measured on this host (null if never), and what
    /// CPUID declares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<HotContext>,
    /// `--cgroup PATH`: each group as the kernel counts it, and its processes as one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<crate::model::cgroup::CgroupInstance>,
}

/// What a hot set is held against: the measured reach, and CPUID's geometry.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HotContext {
    pub measured: Option<crate::model::tlb::Measured>,
    /// The results database the measured reach was looked for in.
    pub db: String,
    pub geometry: crate::model::machine::tlb::TlbGeometry,
    /// Hot-set processes that could not be read (clear_refs refused, gone).
    pub errors: Vec<String>,
}

/// A server and its workers, read as one: the root PID and the memory of its tree.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Instance {
    pub pid: u32,
    pub name: String,
    pub memory: crate::model::trial::server::GroupMemory,
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

/// One mapping's hot bytes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotMapping {
    pub start: u64,
    pub end: u64,
    pub kind: Kind,
    pub path: String,
    pub resident: u64,
    /// Referenced in the window (hugetlb: not tracked, 0).
    pub hot: u64,
    /// Resident on PMD-mapped THP now (its hot bytes there need one entry per 2 MiB).
    pub on_thp: u64,
    /// A hugetlb mapping: resident on its page size, referenced bits not tracked.
    pub hugetlb_page: Option<u64>,
}

/// Translations a set of bytes needs at each page size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entries {
    pub at_4k: u64,
    /// (at least, at most): the hot bytes in whole pages; every aligned page a hot mapping
    /// overlaps.
    pub at_2m: (u64, u64),
    pub at_1g: (u64, u64),
    /// On the page sizes the memory is on now (THP hot bytes per 2 MiB, the rest per 4 KiB).
    pub now: u64,
}

/// One process's hot memory over a window.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotSet {
    pub pid: u32,
    pub name: String,
    pub window_s: f64,
    pub resident: u64,
    pub hot: u64,
    /// Hugetlb memory: resident, its referenced bits not tracked (not in `hot`).
    pub hugetlb_untracked: u64,
    pub entries: Entries,
    /// Mappings with hot bytes (or hugetlb), hottest first.
    pub mappings: Vec<HotMapping>,
    /// Its 4 KiB entries against the reach `bench tlb` measured here, where one was.
    #[serde(default)]
    pub need: Option<crate::model::tlb::Need>,
}

/// The circumstances the reasons depend on: the system's THP settings and the process's status.
#[derive(Debug, Clone, Default)]
pub struct Circumstances {
    pub thp: Thp,
    pub status: ProcStatus,
}

/// Translations the resident memory needs: now, if all 4 KiB, if all 2 MiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlbReach {
    pub now: u64,
    pub all_4k: u64,
    pub all_2m: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct MappingReport {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub kind: Kind,
    pub path: String,
    pub size: u64,
    pub resident: u64,
    pub anon_huge_pages: u64,
    pub private_hugetlb: u64,
    pub shared_hugetlb: u64,
    pub kernel_page_size: u64,
    pub thp_eligible: Option<bool>,
    pub vm_flags: Vec<String>,
    /// Folio size → resident bytes; `None` when not readable.
    pub folios: Option<BTreeMap<u64, u64>>,
    pub huge_bytes: u64,
    pub coverage: Option<f64>,
    pub tlb: TlbReach,
    pub why_not_huge: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ProcessReport {
    pub pid: u32,
    pub name: String,
    pub thp_enabled: Option<bool>,
    pub resident: u64,
    pub huge_bytes: u64,
    pub coverage: Option<f64>,
    pub folios: Option<BTreeMap<u64, u64>>,
    pub tlb: TlbReach,
    pub mappings: Vec<MappingReport>,
    /// For a hypervisor process (QEMU, Firecracker, cloud-hypervisor): its guest RAM.
    pub guest_ram: Option<crate::model::vm::GuestRam>,
    pub notes: Vec<String>,
    pub elapsed_ms: f64,
}
