//! Records of `hugelab run`: the validated plan and the analysed result that every renderer
//! (terminal, JSON, CSV, Markdown, HTML) reads.
use crate::model::verdict::Verdict;

use crate::model::analysis::ExperimentAnalysis;
use crate::model::analysis::MetricDef;
use crate::model::analysis::NoiseAttribution;
use crate::model::arm::spec::Arm;
use crate::model::trial::gathered::Schedule;
use crate::model::verdict::Design;
use std::time::Duration;

/// A validated run plan (stored with the run as JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub arms: Vec<Arm>,
    pub baseline: usize,
    pub blocks: usize,
    pub warmup: usize,
    pub sequential: bool,
    /// `--target-halfwidth`: the run stops once every contrast's interval is this narrow (a
    /// fraction: 0.01 for ±1%).
    #[serde(default)]
    pub target_halfwidth: Option<f64>,
    /// How the blocks are analysed and when the run may stop early.
    pub design: Design,
    pub effect: f64,
    pub confidence: f64,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
    pub sampling: Schedule,
    pub pin: Option<usize>,
    pub max_time: Option<Duration>,
    /// An A/A calibration run.
    pub calibrate: bool,
    /// Trace kinds recorded per trial (`--trace`), empty when not tracing.
    pub trace: Vec<crate::model::trace::TraceKind>,
    /// `--user`: the uid and gid the command (and server) run as.
    pub user: Option<crate::model::machine::process::UserIds>,
    /// `--server`: the service each trial starts and loads.
    pub server: Option<ServerPlan>,
    /// A load generator's output read by a built-in parser.
    pub load_format: Option<crate::model::trial::load::LoadFormat>,
    /// The command each trial runs (the load, with a load format's added arguments).
    pub command: Vec<String>,
    /// `--metric NAME=REGEX`: numbers read from each trial's output.
    pub outputs: Vec<crate::model::trial::load::OutputMetric>,
    /// How each trial runs and what happens before it.
    pub trial: TrialSetup,
    /// `--keep-going`: a failed trial is kept and counted instead of stopping the run.
    pub keep_going: bool,
    /// What the planner did that the user did not ask for in so many words (printed first).
    pub notes: Vec<String>,
    /// `--condition`: the machine states the blocks run in, one after another (empty: the
    /// machine as found, not recorded as a condition).
    #[serde(default)]
    pub conditions: Vec<crate::model::arm::condition::Condition>,
    /// `--during`: an operator's event run inside every burst against the arm's server.
    pub during: Option<During>,
    /// The settings an applier (`hugelab apply`) held while this run measured under them:
    /// who and which values (the run changed none).
    #[serde(default)]
    pub applied: Option<String>,
}

/// `--during COMMAND --during-at AT`: the event, when in each burst it runs, and (a preset's)
/// command that reports the server's own account of its fork.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct During {
    pub command: String,
    pub at: DuringAt,
    pub fork_report: Option<String>,
}

/// When the event runs: a share of the burst, or a time after the load's start.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum DuringAt {
    Share(f64),
    After(Duration),
}

/// How each trial runs and what is done before it (none of it measured).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TrialSetup {
    /// `--shell`: the command (and server) through /bin/sh -c.
    pub shell: bool,
    /// `--cwd`: where the command (and server) run.
    pub cwd: Option<std::path::PathBuf>,
    /// `--env NAME=VALUE`: extra environment of the command.
    pub env: Vec<(String, String)>,
    /// `--timeout`: a trial (and its process group) killed after this long.
    pub timeout: Option<Duration>,
    /// `--prepare`: a shell command run before every trial.
    pub prepare: Option<String>,
    /// `--drop-caches` before every trial (root).
    pub drop_caches: bool,
    /// `--compact` memory before every trial (root).
    pub compact: bool,
}

/// How each trial runs its server.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ServerPlan {
    /// The server's command (argv, or one shell string with `--shell`).
    pub argv: Vec<String>,
    /// The readiness probe as given (`log:…`, `tcp:…`), checked by the planner.
    pub ready: String,
    pub ready_timeout: Duration,
    pub warmup: Option<String>,
    pub stop_grace: Duration,
    /// `--server-pidfile`: the server daemonizes and writes its pid here.
    pub pidfile: Option<std::path::PathBuf>,
    /// From a `--preset` for this server, when one was used.
    pub preset: Option<String>,
    /// Warm (every arm's server up at once, bursts interleaved, restarted every lifetime) or
    /// restart (a fresh server per trial), and why.
    pub design: ServiceDesign,
    pub design_reason: String,
    /// The warm design's schedule (None under restart).
    pub warm: Option<WarmPlan>,
    /// Per arm what fills its placeholders (`{dir}` is made when the run starts).
    pub slots: Vec<crate::model::arm::side_by_side::Slot>,
    /// A directory copied once into each arm's `{dir}/data` (the postgres preset side by side).
    pub copy_data: Option<std::path::PathBuf>,
    /// The load reaches each arm's server through placeholders (each arm has its own load).
    pub per_arm_load: bool,
    /// `--hot`: the server tree's referenced bits are cleared before each load, so the memory
    /// read after it says what the load touched.
    #[serde(default)]
    pub hot: bool,
}

/// How services are measured.
/// Each value's meaning is its `--help` text, in `src/options.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceDesign {
    Warm,
    Restart,
}

/// When a block's bursts run (warm design).
/// Each value's meaning is its `--help` text, in `src/options.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BurstSchedule {
    Alternating,
    Duet,
}

/// The warm design's schedule.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WarmPlan {
    /// When a block's bursts run, and why this schedule.
    pub schedule: BurstSchedule,
    pub schedule_reason: String,
    /// `--schedule` was given (a duet is then kept on a saturated machine).
    #[serde(skip)]
    pub schedule_asked: bool,
    /// Blocks per server lifetime (`--lifetime-blocks`); None: sized from the first lifetimes.
    pub lifetime_blocks: Option<usize>,
    /// A lifetime ends after this long even with blocks to go.
    pub lifetime_max: Duration,
    /// `--replicas`: servers per arm at once; None: chosen from the room the first lifetime
    /// measures. The number that ran is in the run's notes and its trials (`replica`).
    #[serde(default)]
    pub replicas: Option<usize>,
    /// Why replicas cannot run: a path the replicas of one arm would share (decided at
    /// planning, before any server starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_shared: Option<String>,
    /// `--burst`, or None: calibrated against the first server (the load's own length when it
    /// has no `{burst}`).
    pub burst: Option<Duration>,
    /// Whether the load has a `{burst}` to fill.
    pub bursts: bool,
    /// Settings for the whole run, and the arms whose server gets THP off in place of `never`.
    pub side_by_side: crate::model::arm::side_by_side::SideBySide,
    /// How the burst length was chosen (filled in after the run; none with `--burst` or
    /// without a `{burst}` in the load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_choice: Option<BurstChoice>,
    /// What the lifetime sizing forecast for the primary contrast's half-width at the run's
    /// end (filled in after the run; none with `--lifetime-blocks`).
    #[serde(default, skip_serializing_if = "Forecasts::is_empty")]
    pub forecast: Forecasts,
}

/// The burst length a warm run chose: from the load's fixed cost alone, or from the noise the
/// pilot measured at two lengths.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BurstChoice {
    /// The burst the run used after its pilot, seconds.
    pub secs: u64,
    /// The load's fixed cost (client start, connections) beyond a 1 s burst, seconds.
    pub fixed_s: f64,
    /// The shortest burst whose fixed cost is under 5% of it: the pilot's first length.
    pub by_fixed_cost: u64,
    /// The pilot at two lengths, where it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<LengthPilot>,
    /// Why the pilot ran at one length only, where it did not run at two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_length: Option<String>,
}

/// What the pilot measured at two burst lengths and what the design model made of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LengthPilot {
    /// Per length: seconds, the SD of the ratio between bursts of a lifetime (log scale), a
    /// block's mean time (seconds), and the blocks measured at it.
    pub lengths: Vec<MeasuredLength>,
    /// The burst noise split as var(L) = floor² + averaging²·(1 s / L): what a longer burst
    /// does not average away and what it does (log scale, at 1 s).
    pub floor_sd: f64,
    pub averaging_sd: f64,
    /// The SD between lifetimes beyond their bursts, both lengths' pooled (log scale).
    pub between_sd: f64,
    /// The half-width forecast at the run's end with the burst chosen (a fraction) and its
    /// lifetime's blocks; the same for the length it was weighed against (the first when
    /// another was chosen, else the best other), with that length.
    pub chosen: (f64, usize),
    pub against: (u64, f64, usize),
    /// A block's cost at the length chosen, on the line through the two measured (seconds).
    pub block_s: f64,
}

/// One burst length as the pilot measured it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeasuredLength {
    pub secs: u64,
    pub within_sd: f64,
    pub block_s: f64,
    pub blocks: usize,
}

/// The half-width the lifetime sizing forecast at the run's end, after the pilot and at the
/// last sizing, so that a run's own record holds the forecast beside what it reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Forecasts {
    pub pilot: Option<Forecast>,
    /// The first made once half the run's time (or blocks) had passed: the forecast checked
    /// out of sample, from the first half's lifetimes against the end.
    #[serde(default)]
    pub half: Option<Forecast>,
    pub last: Option<Forecast>,
}

impl Forecasts {
    pub fn is_empty(&self) -> bool {
        self.pilot.is_none() && self.half.is_none() && self.last.is_none()
    }
}

/// The rests of a run a half-way forecast's range draws.
pub const RESAMPLES: usize = 400;

/// The level a forecast's range holds and is printed at: the pilot's chi-square range where a
/// normal spread is assumed, the half-way range's as the forecast study measured it.
pub const RANGE_LEVEL: f64 = 0.90;

/// One forecast: made from `lifetimes` lifetimes of `blocks` blocks in all, for lifetimes of
/// `per_lifetime` blocks from then on.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Forecast {
    pub lifetimes: usize,
    pub blocks: usize,
    pub per_lifetime: usize,
    /// The half-width, a fraction of the baseline (0.012: ±1.2%).
    pub half_width: f64,
    /// Where the spread had fewer than 30 degrees of freedom: the half-widths the true spread
    /// may give ([`RANGE_LEVEL`], chi-square), and those degrees of freedom.
    pub range: Option<(f64, f64)>,
    pub df: usize,
    /// The signed-rank interval's width against the normal one's over the lifetime means so
    /// far (from 10 lifetimes), by which the normal model's half-width was multiplied.
    #[serde(default)]
    pub rank_ratio: Option<f64>,
    /// Of a confidence sequence's half-width (`--sequential`, `--target-halfwidth`), as the
    /// answer prints it; else of the fixed design's interval.
    #[serde(default)]
    pub sequence: bool,
    /// At half-way: the half-widths the answer may reach at the run's end if the lifetimes
    /// still to come are like the first half's (those kept, the rest drawn from them; of
    /// [`RESAMPLES`] draws, the central share that holds at [`RANGE_LEVEL`]), fractions.
    #[serde(default)]
    pub resampled: Option<(f64, f64)>,
}

impl Plan {
    /// The metric the verdicts are about: the first `--metric`, else wall time.
    pub fn primary(&self) -> &MetricDef {
        &self.metrics[crate::model::analysis::primary_index(&self.metrics)]
    }

    /// Warm services: the servers per arm that ran at once; every block the run counts is
    /// this many stored blocks. 1 otherwise.
    pub fn replicas(&self) -> usize {
        self.server
            .as_ref()
            .and_then(|s| s.warm.as_ref())
            .and_then(|w| w.replicas)
            .unwrap_or(1)
            .max(1)
    }

    /// The contrasts the verdicts are a Holm family of: each arm against the baseline.
    pub fn contrasts(&self) -> usize {
        self.arms.len().saturating_sub(1).max(1)
    }

    /// The level of the first (strictest) Holm step, 1 − α/m: the widest interval the answer
    /// prints, which forecasts and the fewest blocks for an interval are of.
    pub fn first_step_level(&self) -> f64 {
        crate::stats::Level(self.confidence)
            .split(self.contrasts())
            .get()
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RunResult {
    pub schema: &'static str,
    pub run_id: i64,
    pub db: String,
    pub command: Vec<String>,
    pub plan: Plan,
    pub blocks_done: usize,
    pub stop_reason: String,
    pub report: ExperimentAnalysis,
    /// Per arm: how much of the primary metric's spread the machine's noise explains.
    pub noise: Vec<NoiseAttribution>,
    /// For `--calibrate`: the machine's noise floor for this command.
    pub calibration: Option<crate::model::run::Calibration>,
    pub notes: Vec<String>,
    /// With `--trace`: stall time per trial of each arm against the baseline.
    pub trace_stalls: Vec<crate::model::trace::StallContrast>,
    /// With `qemu.backing` arms: the host configuration for the backing measured best.
    pub vm_advice: Option<crate::model::vm::VmAdvice>,
    /// With `--server`: per arm, what its servers did (ready and stop times, memory, words).
    pub servers: Vec<crate::model::run::ServerSummary>,
    pub elapsed_s: f64,
    /// Against the TLB reach `bench tlb` measured on this host, when it has: the answer's "why".
    pub tlb: Option<crate::model::tlb::RunWhy>,
    /// Per arm that sets a hugetlb pool: what it asked, got and used.
    pub pools: Vec<PoolUse>,
    /// What `advise` would say from this run alone (for its preset's service, or the
    /// machine), when it compares arms.
    pub advice: Option<crate::model::advice::Advice>,
    /// Warm-up trials (not measured, not analysed) that failed or timed out.
    pub warmup_failed: usize,
}

/// A hugetlb pool an arm set: pages asked, obtained (the fewest any of its trials started with),
/// used by the workload (mean over trials of its peak), and the memory it took from everything
/// else as a share of MemTotal.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoolUse {
    pub arm: String,
    pub page_size: u64,
    pub asked: u64,
    pub obtained: Option<u64>,
    pub in_use: Option<f64>,
    pub mem_total: Option<u64>,
    /// What the pages obtained took of MemTotal, a fraction (None where either is unknown).
    #[serde(default)]
    pub share_of_mem_total: Option<f64>,
}

/// Per arm, what its servers did across the trials (from each trial's `server` evidence).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerSummary {
    pub arm: String,
    /// Trials whose server came up and was read.
    pub trials: usize,
    /// Trials whose server failed (did not start, not ready, died or crashed).
    pub failed: usize,
    /// Medians over the trials, seconds: spawn → ready, SIGTERM → exit, and the load's wall time.
    pub ready_s: Option<f64>,
    pub stop_s: Option<f64>,
    pub load_s: Option<f64>,
    /// Mean CPU time of the server's tree during the load, seconds.
    pub cpu_s: Option<f64>,
    /// Median resident memory (Rss + hugetlb) of the tree after the load, bytes.
    pub resident_bytes: Option<u64>,
    /// Mean share of it on huge pages.
    pub coverage: Option<f64>,
    /// Which mapping carried the huge pages (the last trial that had any).
    pub carried_by: Option<String>,
    /// Some trial's server turned THP off for itself.
    pub thp_disabled: bool,
    /// The server's own THP policy (`process.thp`) and in how many trials it held: the words
    /// of the last trial read, (held, checked).
    #[serde(default)]
    pub policy: Option<(String, usize, usize)>,
    /// The server's own words about huge pages, if it said any.
    pub said: Option<String>,
    /// How its shared segments were counted: `segment` (the object's own pages) or `page
    /// tables` (the largest view of one of its processes).
    #[serde(default)]
    pub counted: Option<String>,
    /// Medians of the kernel's machine-wide accounting read at the same moments: hugetlb pool
    /// bytes in use (every size) and ShmemHugePages.
    #[serde(default)]
    pub kernel_hugetlb: Option<u64>,
    #[serde(default)]
    pub kernel_shmem_huge: Option<u64>,
    /// Warm design: the lifetimes its trials ran in, and the SD of its own instance effect
    /// across them (log scale; `analyze::lifetimes::instance_sds`).
    #[serde(default)]
    pub lifetimes: usize,
    #[serde(default)]
    pub instance_sd: Option<f64>,
    /// Warm design: the first burst of a lifetime against the lifetime's later bursts, percent
    /// (point, lo, hi at the run's confidence): whether the warm-up reached the warm state.
    #[serde(default)]
    pub first_burst: Option<(f64, Option<f64>, Option<f64>)>,
}

/// The smallest effect resolvable after `minutes` of running.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FloorRow {
    pub minutes: f64,
    pub blocks: usize,
    /// An effect this large (percent, either direction) is declared FASTER/SLOWER with 80%
    /// probability at the run's confidence (fixed paired design, signed-rank efficiency).
    pub detectable_percent: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    pub blocks: usize,
    /// Wall-clock seconds one block took (both arms, with hugelab's overhead).
    pub seconds_per_block: f64,
    /// SD of the per-block log-ratios (the paired noise).
    pub sd_log_ratio: f64,
    /// The same from the MAD (robust to a few wild blocks).
    pub robust_sd_log_ratio: f64,
    pub rows: Vec<FloorRow>,
    /// Blocks (and minutes) for 80% probability of resolving δ whatever the truth.
    pub blocks_for_effect: usize,
    pub minutes_for_effect: f64,
    /// The A/A verdict itself (it should never be FASTER or SLOWER).
    pub aa_verdict: Option<Verdict>,
    /// The decision the floor is of: its two-sided level and δ.
    #[serde(default)]
    pub confidence: f64,
    #[serde(default)]
    pub effect: f64,
}
