//! Records of `hugelab report` and `hugelab compare`: a stored run or bench with everything its
//! charts and tables show, and an unpaired comparison of two runs.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::stored::RunMeta;
use crate::model::verdict::Better;
use crate::model::verdict::Verdict;
use crate::stats::Estimate;

pub const SCHEMA: &str = "hugelab.report/1";

/// What a stored run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `hugelab run`: arms interleaved in blocks.
    Run,
    /// `hugelab bench`: backings × sizes × workloads, in rounds.
    Bench,
    /// Imported from another tool (unpaired).
    Imported,
}

/// One stored result with the values behind every chart: a run's (or an import's) record, or a
/// bench's whole result, at the decision it is read at.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunView {
    pub meta: RunMeta,
    pub kind: RunKind,
    pub arms: Vec<String>,
    /// The decision it is read at: its own, the defaults (an import), or another the report
    /// asked for (a re-analysis, said before the answer).
    pub decided: crate::model::decision::Decision,
    /// How it was read, said before the answer: rebuilt from its rows, re-analysed.
    pub read_as: Vec<String>,
    /// A run's or an import's record, its answer as printed (`None`: a bench).
    pub record: Option<crate::model::record::RunRecord>,
    /// A bench's whole result as it printed it (`None`: a run or an import).
    pub bench: Option<crate::model::bench::BenchResult>,
    /// Per metric, every measured trial in run order (distributions, progression).
    pub series: Vec<Series>,
    /// For a bench: per workload metric, one line per backing over the region sizes.
    pub curves: Vec<BenchCurve>,
    /// The machine's huge-page state when the run started (`hugelab status`), if stored.
    pub system: Option<crate::model::machine::status::Status>,
    /// `run --trace`: per stall kind, each arm's latency histogram summed over its trials.
    pub stalls: Vec<StallHistogram>,
    /// What the run said beside its tables: the design, its servers, its notes.
    pub said: Said,
}

impl RunView {
    /// A run's analysis, as its record holds it (`None` for a bench).
    pub fn report(&self) -> Option<&ExperimentAnalysis> {
        self.record.as_ref().map(|r| &r.report)
    }
}

/// What a stored run said beside its tables: its service's design as it ran (the stored plan,
/// amended after the run), its servers' evidence (from its trials) and the notes the run
/// printed, in order.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Said {
    pub server: Option<crate::model::run::ServerPlan>,
    pub arms: Vec<String>,
    pub notes: Vec<String>,
    /// Per arm what its servers did, from the stored trials (empty without a server).
    pub servers: Vec<crate::model::run::ServerSummary>,
}

/// One kind of kernel stall traced per trial (`run --trace`): each arm's log2 latency
/// histogram over its successful measured trials.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StallHistogram {
    pub kind: String,
    pub arms: Vec<ArmStalls>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ArmStalls {
    pub arm: String,
    /// Traced trials of this arm (the histogram's counts divide by it for "per trial").
    pub trials: usize,
    /// (lower edge in ns of a power-of-two bucket, events) summed over the trials.
    pub buckets: Vec<(u64, u64)>,
    pub total_ns: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Series {
    pub metric: String,
    pub better: Better,
    pub points: Vec<Point>,
    /// Per arm (in the run's order), its median as the record's summary gives it.
    pub medians: Vec<Option<f64>>,
}

/// One measured trial of one metric.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Point {
    pub arm: usize,
    pub block: i64,
    /// Position in the run's order (0 = first trial).
    pub seq: i64,
    pub value: f64,
    pub flagged: bool,
}

/// A bench workload metric over region sizes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchCurve {
    /// The workload's metric (`touch`, `pretouch commit`) and its unit (`ns/op`).
    pub metric: String,
    pub unit: String,
    pub better: Better,
    /// The backing the ratios are taken against (the run's baseline, normally 4k).
    pub baseline: String,
    pub lines: Vec<BenchLine>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchLine {
    pub backing: String,
    pub points: Vec<BenchPoint>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchPoint {
    pub size: u64,
    /// Rounds measured.
    pub n: usize,
    /// The cell's score as the bench printed it: the mean of its rounds, with its Student-t
    /// interval at the bench's level.
    pub score: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// This backing vs the baseline at this size, percent: the bench's paired ratio
    /// (Hodges–Lehmann over the rounds) with its signed-rank interval at the bench's level.
    pub vs_baseline: Option<Estimate>,
    /// Whether that interval resolves a direction (the bench's `better`/`worse`/`~`).
    pub direction: Option<crate::model::bench::Direction>,
    /// Huge coverage of the region (mean over the cell's rounds).
    pub coverage: Option<f64>,
    /// A huge backing whose region was not fully huge.
    pub degraded: bool,
}

/// `hugelab compare A B`: the same arms in two runs, unpaired.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CompareResult {
    pub schema: &'static str,
    pub a: String,
    pub b: String,
    pub metric: String,
    pub better: Better,
    pub effect: f64,
    pub confidence: f64,
    pub rows: Vec<CompareRow>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CompareRow {
    pub arm: String,
    pub n_a: usize,
    pub n_b: usize,
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// B vs A, percent: Hodges–Lehmann shift of log values, Mann–Whitney interval.
    pub b_vs_a_percent: Option<Estimate>,
    pub p_value: Option<f64>,
    pub verdict: Option<Verdict>,
    /// The values themselves (for the report's distributions).
    #[serde(skip)]
    pub values_a: Vec<f64>,
    #[serde(skip)]
    pub values_b: Vec<f64>,
}
