//! Records of `hugelab bench`: the plan, per-cell evidence, what was skipped, and the result.
use crate::metric::Metric;
use crate::stats::Estimate;
use crate::stats::Summary;

use crate::model::arm::backing::Backing;
use crate::model::arm::workload::Workload;
use crate::model::machine::pmu::PerfEvent;
use crate::model::trial::gathered::RegionEvidence;
use std::collections::BTreeMap;

/// A validated bench plan.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub backing: Backing,
    pub size: Option<u64>,
    pub reason: String,
    /// The region is below one page of the backing (expected in a size sweep).
    pub below_page: bool,
}

/// How a stored bench names a cell's rounds: `<metric>@<size>` (`chase@128M`,
/// `pretouch_commit@1G`), one metric per cell so `results`, `compare` and `report` read benches
/// as runs whose arms are the backings.
pub fn cell_metric(m: Metric, size: u64) -> String {
    format!(
        "{}@{}",
        m.label().replace(' ', "_"),
        crate::units::Bytes(size)
    )
}

/// The schema of a bench's result, as printed by `--json` and stored with the run.
pub const SCHEMA: &str = "hugelab.bench/1";

/// A bench's whole result: what it prints, and what its stored run keeps and `results show`
/// prints again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BenchResult {
    pub schema: String,
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
    pub tlb: Option<crate::model::tlb::TlbReach>,
    /// Other benches: the reach `bench tlb` measured here before, for the answer's "why".
    pub measured_tlb: Option<crate::model::tlb::Measured>,
    /// Against that reach: the entries the largest random-access region needs on each
    /// backing's pages (a model; `None` before benches kept it, or without a reach).
    #[serde(default)]
    pub why: Option<BenchWhy>,
}

/// The model's "why" of a bench: the workload and size it is of, and each backing's need.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchWhy {
    pub workload: Workload,
    pub size: u64,
    pub needs: Vec<crate::model::tlb::Need>,
}

/// One measured value: round `round` of `metric` at `size` on `backing`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Observation {
    pub metric: Metric,
    pub size: u64,
    pub backing: Backing,
    pub round: usize,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellStats {
    pub metric: Metric,
    pub size: u64,
    pub backing: Backing,
    pub summary: Summary,
    /// Mean of the rounds.
    pub score: f64,
    /// Half-width of the Student-t interval of the mean at the bench confidence.
    pub error: Option<f64>,
    /// Ratio of this backing's value to the baseline's (paired by round): Hodges–Lehmann on
    /// per-round log-ratios with the signed-rank interval, exponentiated.
    pub vs_baseline: Option<Estimate>,
}

/// How a ratio reads for people: better, worse, or not resolved at this confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Better,
    Worse,
    Unresolved,
}

/// Below this coverage a result is marked degraded in every output.
pub const DEGRADED_BELOW: f64 = 0.9;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Coverage {
    /// `None` when it cannot be verified here (mTHP without root).
    pub fraction: Option<f64>,
    /// Which evidence it came from: `smaps` or `folios`.
    pub source: String,
    pub degraded: bool,
    pub note: Option<String>,
}

pub fn direction(metric: Metric, ratio: &Estimate) -> Direction {
    if !ratio.excludes(1.0) {
        return Direction::Unresolved;
    }
    let up = ratio.point > 1.0;
    if up == metric.higher_is_better() {
        Direction::Better
    } else {
        Direction::Worse
    }
}
