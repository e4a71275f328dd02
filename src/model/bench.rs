//! Records of `hugelab bench`: the plan, per-cell evidence, what was skipped, and the result.

use crate::analyze::bench::{CellStats, Observation};
use crate::analyze::coverage::Coverage;
use crate::backing::Backing;
use crate::collect::coverage::RegionEvidence;
use crate::probe::pmu::PerfEvent;
use crate::workload::Workload;
use std::collections::BTreeMap;

/// A validated bench plan.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub workloads: Vec<Workload>,
    pub sizes: Vec<u64>,
    pub backings: Vec<Backing>,
    pub rounds: usize,
    pub threads: usize,
    pub confidence: f64,
    pub seed: u64,
    pub iteration_ns: u64,
}

/// Evidence for one backing at one size (and workload family).
#[derive(Debug, Clone, serde::Serialize)]
pub struct CellEvidence {
    pub workload: Workload,
    pub size: u64,
    pub backing: Backing,
    pub coverage: Coverage,
    pub region: RegionEvidence,
    /// Kernel counter changes while the region was set up (or during the first pretouch).
    pub kernel_counters: BTreeMap<String, u64>,
    /// perf counts per operation, averaged over the measured rounds.
    pub per_op: BTreeMap<PerfEvent, f64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub backing: Backing,
    pub size: Option<u64>,
    pub reason: String,
    /// The region is below one page of the backing (expected in a size sweep).
    pub below_page: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    pub schema: &'static str,
    pub plan: Plan,
    pub kernel: Option<String>,
    pub cpu: Option<String>,
    pub observations: Vec<Observation>,
    pub cells: Vec<CellStats>,
    pub evidence: Vec<CellEvidence>,
    pub skipped: Vec<Skipped>,
    /// Settings hugelab changed for the run (all restored afterwards).
    pub settings_changed: Vec<String>,
    pub notes: Vec<String>,
    pub elapsed_s: f64,
    /// `bench tlb`: the reach and the miss cost the spans show.
    pub tlb: Option<crate::analyze::tlb::TlbReach>,
    /// Other benches: the reach `bench tlb` measured here before, for the answer's "why".
    pub measured_tlb: Option<crate::analyze::tlb::Measured>,
}
