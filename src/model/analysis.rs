//! A run's result record: every metric's contrasts, each arm's evidence, every condition's own
//! analysis, the warm-up found — what `analyze::experiment` builds once and the store, every
//! renderer, `advise` and the exports read. Also the trial as the analysis reads it.

use crate::model::verdict::{Better, Contrast, Design, Verdict};
use crate::stats::{Estimate, Summary};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricDef {
    pub name: String,
    pub better: Better,
    /// Recorded and summarised but not a contrast: a quantity the load itself fixes (the wall
    /// time of `pgbench -T`, of a service's timed burst).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context: bool,
    /// What the arm costs, not what it gains (`analyze::costs`: peak memory, CPU time): contrasted
    /// with the same statistics, shown on the answer's cost line and weighed by `advise`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost: bool,
    /// A row of the load's own result table (a JMH benchmark × parameters): one of a family of
    /// rows that is the question, each shown in the answer whatever its verdict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub row: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmMetric {
    pub arm: String,
    pub summary: Option<Summary>,
    pub diagnostics: Diagnostics,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricAnalysis {
    pub metric: MetricDef,
    pub arms: Vec<ArmMetric>,
    /// Non-baseline arm name → contrast vs the baseline (None: too few complete blocks).
    pub contrasts: Vec<(String, Option<Contrast>)>,
    pub complete_blocks: usize,
    /// Warm services: the server lifetimes the contrasts' units came from (0: blocks are the
    /// units), and per contrast the variance components of its per-block log-ratios.
    #[serde(default)]
    pub lifetimes: usize,
    #[serde(default)]
    pub components: Vec<(String, Option<Components>)>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmEvidence {
    pub arm: String,
    pub trials: usize,
    pub failed: usize,
    pub flagged: usize,
    pub first_flag: Option<String>,
    /// Trials whose memory that matters was only partly on the pages asked for.
    #[serde(default)]
    pub partial: usize,
    #[serde(default)]
    pub first_partial: Option<String>,
    /// Mean share of the memory that matters on the pages asked for, over judged trials.
    #[serde(default)]
    pub mean_share: Option<f64>,
    pub mean_coverage_at_peak: Option<f64>,
    /// Mean over trials of the largest huge coverage any walk saw.
    #[serde(default)]
    pub mean_max_coverage: Option<f64>,
    /// Mean resident bytes of the memory that matters, and the TLB entries it needs on the
    /// pages it was on (trials whose backing was judged).
    #[serde(default)]
    pub mean_matters: Option<f64>,
    #[serde(default)]
    pub mean_entries: Option<f64>,
    /// `run --hot`: mean bytes the server's load referenced.
    #[serde(default)]
    pub mean_hot: Option<f64>,
    /// Mean perf counts per trial, over trials where they were counted.
    pub mean_counters: BTreeMap<String, f64>,
    /// The page walks' share of cycles (`dtlb_walk_cycles` over `cycles`, their means), where
    /// the PMU counted both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_share: Option<f64>,
    /// Mean per trial of the kernel's huge-page counter deltas (machine-wide), over the trials
    /// that read them; the mean of the mTHP gauges at the trials' peaks.
    #[serde(default)]
    pub mean_kernel: BTreeMap<String, f64>,
    #[serde(default)]
    pub mean_gauges: BTreeMap<String, f64>,
    /// Trials whose machine-wide counters every arm's trial shared (a duet block ran their
    /// bursts at once): those counters are not this arm's alone.
    #[serde(default)]
    pub kernel_shared: usize,
    /// `run --during`: in how many of the arm's trials the event ran, and how it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventTally>,
}

/// The operator's event over one arm's trials (`run --during`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventTally {
    /// Trials that stored an event.
    pub trials: usize,
    /// It never started: the load ended before its moment.
    pub not_run: usize,
    /// It ran and its command failed (a non-zero exit).
    pub failed: usize,
    /// The last failure's output.
    pub failure: Option<String>,
    /// The median wall time of the loads it did not run in, seconds.
    pub load_wall_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExperimentAnalysis {
    pub baseline: String,
    pub effect: f64,
    pub confidence: f64,
    /// How the contrasts were computed (fixed, sequential, group-sequential, unpaired).
    #[serde(default)]
    pub design: Design,
    pub metrics: Vec<MetricAnalysis>,
    pub evidence: Vec<ArmEvidence>,
    /// `run --condition`: every condition's own contrasts, the interaction and the state per
    /// arm (the first condition's contrasts are the report's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionAnalysis>,
    /// Warm services: the lifetimes' warm-up detected from their bursts (its blocks are not
    /// in the contrasts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// Direct compaction and direct reclaim stalls per trial, each arm against the baseline
    /// (`analyze::stalls`), in every run whose trials read the kernel's counters on their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<StallCount>,
    /// The tail of the trial times as a contrast: each arm's p95 against the baseline's
    /// (`analyze::tail`), where wall time is a contrasted metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tails: Vec<TailContrast>,
    /// The warnings of the distribution checks and the contrasts, counted by kind (`drift`,
    /// `correlated`, `bimodal`, the intervals'): what the brief answer says in one line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warning_kinds: Vec<(String, usize)>,
    /// Per arm: its costs (and stall counts) whose interval resolved no change, which the brief
    /// answer counts instead of naming (`model::costs::unchanged`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged_costs: Vec<(String, usize)>,
}

/// A high quantile of one metric's trials, an arm against the baseline from the same blocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TailContrast {
    pub metric: String,
    /// The quantile compared (0.95).
    pub quantile: f64,
    pub arm: String,
    pub baseline: String,
    /// Each side's quantile over the blocks both completed.
    pub arm_value: f64,
    pub baseline_value: f64,
    pub blocks: usize,
    /// Percent change of the arm's quantile against the baseline's, with its paired
    /// block-bootstrap percentile interval at `level`; None: fewer blocks than `needed`.
    pub percent: Option<Estimate>,
    /// The blocks a p95 contrast needs (below them a p95 is the largest trial).
    pub needed: usize,
    /// The interval's level: the run's, Bonferroni-split over the arms.
    pub level: f64,
    pub verdict: Verdict,
}

/// Stalls of one kind per trial, an arm against the baseline from paired blocks: the
/// machine-wide `/proc/vmstat` delta over each trial (`compact_stall`, the `allocstall_*` sum).
/// A difference, not a ratio: a baseline that never stalls has none.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StallCount {
    /// `direct compaction stalls` or `direct reclaim stalls`.
    pub kind: String,
    pub arm: String,
    pub baseline: String,
    /// Mean per trial over the paired blocks.
    pub arm_mean: f64,
    pub baseline_mean: f64,
    pub blocks: usize,
    /// arm − baseline per trial: Hodges–Lehmann of the per-block differences with its
    /// signed-rank interval at `level`.
    pub difference: Estimate,
    /// The interval's level: the run's, Bonferroni-split over every arm and kind.
    pub level: f64,
    /// MORE (`Slower`) when the interval lies above 0, LESS (`Faster`) below it.
    pub verdict: Verdict,
}

/// Which of a run's metrics is the primary one — the metric `--fail-on`, `--sequential` and
/// `--looks` decide on, listed first in the answer: wall time is always stored first, so the
/// primary metric is the second (the first `--metric`, or a load parser's first) when there is
/// one, else wall time. Cost metrics (`analyze::costs`) come last and are never primary. The
/// one definition of the rule.
pub fn primary_index<'a>(metrics: impl IntoIterator<Item = &'a MetricDef>) -> usize {
    let gains = metrics.into_iter().filter(|m| !m.cost).count();
    gains.clamp(1, 2) - 1
}

/// One arm under one condition: means per trial.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmState {
    pub arm: String,
    pub trials: usize,
    pub free_2m_blocks: Option<f64>,
    pub unusable_2m: Option<f64>,
    pub mem_available: Option<f64>,
    /// Mean per trial of the counters `analyze::conditions` shows (`allocstall` sums every zone's) and of the traced
    /// stall times (`<kind> ms`).
    pub per_trial: BTreeMap<String, f64>,
    /// Trials whose kernel counters were read (the counters' means are over these).
    #[serde(default)]
    pub counters_read: usize,
}

fn counted_before_recorded() -> bool {
    true
}

/// The change of an arm's effect between the first condition and this one: the shift of the
/// per-block log-ratios (Hodges–Lehmann, Mann–Whitney interval: the conditions ran one after
/// another, so their blocks are not paired), as the percent change of the ratio.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interaction {
    pub percent: Estimate,
    /// Mann–Whitney p-value, Holm-adjusted across the arms of this condition.
    pub p_value: f64,
    /// The confidence level the interval really has (Holm's step for this arm).
    pub level: f64,
    pub blocks: (usize, usize),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConditionAnalysis {
    pub name: String,
    pub description: String,
    /// The contrasts within this condition.
    pub analysis: ExperimentAnalysis,
    /// Per non-baseline arm, on the primary metric, against the first condition (empty for the
    /// first condition itself).
    pub interaction: Vec<(String, Option<Interaction>)>,
    pub arms: Vec<ArmState>,
    /// The state the trials started in, the means over every arm's trials (the same for each
    /// by design); None where the machine's state was not read.
    #[serde(default)]
    pub at_start: Option<StartState>,
}

/// The machine's free memory as a condition's trials started (means over its trials).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StartState {
    pub free_2m_blocks: f64,
    pub unusable_2m: Option<f64>,
    pub mem_available: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostics {
    /// Relative change from the first to the last block (least-squares slope × (n − 1) / mean).
    pub drift_over_run: Option<f64>,
    pub lag1_autocorrelation: Option<f64>,
    pub bimodality_coefficient: Option<f64>,
    pub warnings: Vec<String>,
}

/// Variance components of a contrast's per-block log-ratios grouped by lifetime.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Components {
    pub lifetimes: usize,
    pub blocks: usize,
    /// SD of the blocks within a lifetime (burst-to-burst), log scale.
    pub within_sd: f64,
    /// SD between lifetimes beyond what the within SD explains (0 when the data show none),
    /// log scale: the instance effect of the pair of servers.
    pub between_sd: f64,
    /// Replicas restarted together (1 without): each restart starts a lifetime per replica.
    #[serde(default = "one")]
    pub replicas: usize,
    /// With replicas: the SD of the effect every replica of one restart shares, beyond what
    /// their own lifetimes explain (0 when the data show none), log scale. None with one
    /// replica, or too few restarts to tell.
    #[serde(default)]
    pub shared_sd: Option<f64>,
}

fn one() -> usize {
    1
}

/// Leading positions tested (a warm-up longer than this is reported as not settled).
pub const POSITIONS: usize = 3;

/// What the detection found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Warmup {
    /// Leading bursts of every lifetime that are not measured.
    pub bursts: usize,
    /// Blocks measured in the lifetimes (every arm's trial succeeded), and those that
    /// dropped as warm-up: the rest are kept.
    #[serde(default)]
    pub blocks: usize,
    pub blocks_dropped: usize,
    /// The confidence of each test (the run's, Bonferroni-adjusted).
    pub confidence: f64,
    /// Per position tested, per arm: the burst against the lifetime's later ones, percent
    /// [point, lo, hi] (None: too few lifetimes at that position).
    pub shifts: Vec<Vec<Option<[f64; 3]>>>,
    /// Every position shifted, up to the last one tested ([`POSITIONS`]): the servers may
    /// still have been warming after them. Lifetimes too short to test that many positions
    /// say nothing of it.
    pub unsettled: bool,
}

/// Steal above this share of the trial's CPU capacity marks a trial as taken during heavy steal.
pub const HEAVY_STEAL: f64 = 0.05;

/// How much of one arm's spread the machine's noise sources explain.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoiseAttribution {
    pub arm: String,
    /// Trials with noise readings.
    pub trials: usize,
    /// Share of the variance of log(primary metric) explained by each source alone (R² of a
    /// one-variable least-squares fit), for sources that varied.
    pub r2: BTreeMap<String, f64>,
    /// Mean seconds per trial of each source.
    pub mean_s: BTreeMap<String, f64>,
    /// Trials during which more than [`HEAVY_STEAL`] of the CPU time was stolen.
    pub heavy_steal_trials: usize,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialData {
    pub block: usize,
    pub arm: usize,
    pub ok: bool,
    pub flagged: Option<String>,
    pub metrics: BTreeMap<String, f64>,
    /// Huge coverage of the child's memory at its peak resident size.
    pub coverage_at_peak: Option<f64>,
    /// The largest huge coverage any walk of the trial saw (commands).
    #[serde(default)]
    pub max_coverage: Option<f64>,
    /// perf counts of the trial (page_faults, dtlb_load_misses, …).
    #[serde(default)]
    pub counters: BTreeMap<String, f64>,
    /// What else the machine did during the trial, seconds: `steal_s`, `other_cpu_s`,
    /// `psi_cpu_some_s`.
    #[serde(default)]
    pub noise: BTreeMap<String, f64>,
    /// The server lifetime the trial ran in (`run --server`, warm design): blocks are nested
    /// in lifetimes and the lifetime is the unit of replication. With replicas, every restart
    /// numbers its replicas' lifetimes apart (`restart·replicas + replica`).
    #[serde(default)]
    pub lifetime: Option<usize>,
    /// The replica of its arm the trial ran in (warm design with replicas).
    #[serde(default)]
    pub replica: Option<usize>,
    /// The trial's backing judgment (`analyze::flagged`): the share of the memory that matters
    /// on the pages asked for, and why when it was PARTIAL.
    #[serde(default)]
    pub share: Option<f64>,
    #[serde(default)]
    pub partial: Option<String>,
    /// Resident bytes of the memory that matters, and the TLB entries it needed on its pages.
    #[serde(default)]
    pub matters: Option<u64>,
    #[serde(default)]
    pub entries: Option<u64>,
    /// `run --hot`: bytes the server's load referenced.
    #[serde(default)]
    pub hot: Option<u64>,
    /// `run --condition`: the machine state the trial ran in, and the kernel's work during it.
    #[serde(default)]
    pub condition: Option<TrialCondition>,
    /// The kernel's huge-page counter deltas during the trial, machine-wide (a counter absent
    /// did not move); `None`: not read.
    #[serde(default)]
    pub kernel: Option<BTreeMap<String, f64>>,
    /// The mTHP gauges (`mthp.<size>.nr_anon_partially_mapped`, …) at the trial's peak
    /// (commands) or after its load (servers).
    #[serde(default)]
    pub gauges: BTreeMap<String, f64>,
    /// The kernel's counters were read over a window other arms' trials shared (every arm's
    /// burst of a duet block at once): machine-wide, so not this arm's alone.
    #[serde(default)]
    pub kernel_shared: bool,
    /// `run --during`: what the operator's event did in this trial.
    #[serde(default)]
    pub event: Option<TrialEvent>,
}

/// An operator's event in one trial (`run --during`), as the trial stored it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialEvent {
    /// False: the load ended before the event's moment, so it never started.
    pub ran: bool,
    /// It ran and its command exited 0.
    pub ok: bool,
    /// The command's output (its last 200 characters).
    pub output: String,
}

/// What a trial run under a condition recorded: the state at its start, the kernel's work
/// during it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialCondition {
    pub name: String,
    /// Free 2 MiB blocks, the unusable free space index at order 9, MemAvailable (bytes), as the
    /// trial started.
    pub free_2m_blocks: Option<u64>,
    pub unusable_2m: Option<f64>,
    pub mem_available: Option<u64>,
    /// System-wide vmstat deltas over the trial (`compact_*`, `allocstall_*`, `pgscan_*`, …).
    pub kernel: BTreeMap<String, f64>,
    /// /proc/vmstat was read around the trial (false: `kernel` is not "nothing moved").
    #[serde(default = "counted_before_recorded")]
    pub kernel_read: bool,
    /// `--trace`: stall time of the trial's process tree per kind, milliseconds.
    pub stalls_ms: BTreeMap<String, f64>,
}

impl MetricDef {
    /// A metric contrasted between arms: neither context, cost nor a row of the load's table.
    pub fn contrasted(name: impl Into<String>, better: crate::model::verdict::Better) -> MetricDef {
        MetricDef {
            name: name.into(),
            better,
            context: false,
            cost: false,
            row: false,
        }
    }
}

impl EventTally {
    /// Trials where the event ran and succeeded.
    pub fn succeeded(&self) -> usize {
        self.trials - self.not_run - self.failed
    }
}

impl ExperimentAnalysis {
    /// Every unsettled contrast's [`Contrast::more_s`] at the pace of a run that took
    /// `elapsed_s`: its more blocks at the time each of its units took.
    pub fn at_pace(&mut self, elapsed_s: f64) {
        let contrasts = self.metrics.iter_mut().flat_map(|m| m.contrasts.iter_mut());
        for c in contrasts.filter_map(|(_, c)| c.as_mut()) {
            c.more_s = c
                .more_blocks
                .filter(|_| c.blocks > 0 && elapsed_s > 0.0)
                .map(|more| more as f64 * elapsed_s / c.blocks as f64);
        }
    }

    /// The primary metric's report (see [`primary_index`]).
    pub fn primary(&self) -> Option<&MetricAnalysis> {
        self.metrics
            .get(primary_index(self.metrics.iter().map(|m| &m.metric)))
    }
}
