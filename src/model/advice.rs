//! What `advise` concludes from stored runs: the settings to adopt, the evidence each rests on,
//! and what it would cost (`analyze::advice` weighs the runs' records).
use crate::model::analysis::ExperimentAnalysis;
use crate::model::arm::knob::Knob;
use crate::model::arm::spec::Arm;
use crate::model::trace::StallContrast;
use crate::model::verdict::Better;
use crate::model::verdict::Verdict;
use crate::stats::Estimate;

pub const SCHEMA: &str = "hugelab.advice/1";

/// What the advice is for.
/// Each value's meaning is its `--help` text, in `src/options.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Machine,
    Postgres,
    Redis,
    Jvm,
    Qemu,
    Kubernetes,
}

/// One stored run as evidence: its arms as planned, the analysis and the stall contrasts.
#[derive(Debug, Clone)]
pub struct RunEvidence {
    pub run_id: i64,
    pub command: Vec<String>,
    /// Whether the command ran through `sh -c`.
    pub shell: bool,
    pub arms: Vec<Arm>,
    pub baseline: usize,
    /// `--preset` of a `--server` run (postgres, redis, …).
    pub preset: Option<String>,
    pub report: ExperimentAnalysis,
    pub stalls: Vec<StallContrast>,
}

/// What one contrast says for the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    /// FASTER by at least δ, never flagged, and the best such arm: its settings are advised.
    Adopt,
    /// FASTER by at least δ and never flagged, but another arm did better.
    Runner,
    /// FASTER by at least δ, but a measured cost grew by more than the benefit (`weigh.rs`):
    /// not adopted; the conflict is stated.
    Costly,
    /// FASTER by at least δ here, but the same settings did not gain everywhere they were
    /// measured (another condition of this run, or another run: SLOWER, a cost that outweighs,
    /// or no gain): not adopted machine-wide; `against` says where (`adopt.rs`).
    Conditional,
    /// FASTER, but by less than δ: not worth a change.
    BelowEffect,
    /// SLOWER: its settings are advised against.
    Slower,
    /// Within ±δ of the baseline: either is fine; no change.
    Equivalent,
    /// Not settled: no change, at the half-width reached.
    Inconclusive,
    /// Some trials did not get the pages the arm asked for: no advice from it.
    Flagged,
}

/// One contrast considered, with what it decided.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvidenceLine {
    pub run_id: i64,
    /// The machine state it was measured under (`run --condition`), if the run had several.
    #[serde(default)]
    pub condition: Option<String>,
    pub arm: String,
    pub baseline: String,
    pub metric: String,
    pub better: Better,
    /// Change of the metric vs the baseline, percent, with its interval.
    pub percent: Estimate,
    pub verdict: Verdict,
    /// The interval's half-width on the log scale as a percentage, as `run` prints it (±x%).
    pub half_width: Option<f64>,
    pub finding: Finding,
    /// Huge coverage the arm's trials really got (mean at peak), if sampled.
    pub coverage: Option<f64>,
    pub flagged: usize,
    pub trials: usize,
    /// Kernel stall time per trial vs the baseline (`run --trace`), one line per kind.
    pub stalls: Vec<String>,
    /// What the arm cost against the baseline (`weigh.rs`), each with its figures.
    #[serde(default)]
    pub costs: Vec<CostNote>,
    /// Everything that was weighed against the benefit (cost metrics, secondary metrics, the
    /// tail, stalls); empty for a run that recorded none.
    #[serde(default)]
    pub weighed: Vec<String>,
    /// Where the same settings did not gain (a [`Finding::Conditional`] line), each in words,
    /// a cost first when the cost is what was resolved.
    #[serde(default)]
    pub against: Vec<String>,
}

/// A system setting to make, with the value it has now.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Setting {
    pub knob: Knob,
    pub value: String,
    pub now: Option<String>,
    /// Why: the evidence line (its index in [`Advice::evidence`]) or a requirement of the target.
    pub why: String,
}

/// A line of a service's own configuration (`postgresql.conf`, `redis.conf`, a JVM option).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceLine {
    /// Where it goes: `postgresql.conf`, `redis.conf`, `JAVA_TOOL_OPTIONS`, `libvirt domain XML`,
    /// `pod spec`.
    pub file: String,
    pub line: String,
    pub why: String,
}

/// The advice for one target.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Advice {
    pub schema: String,
    pub target: Target,
    /// The arm whose settings are advised, or `None`: no change.
    pub adopt: Option<String>,
    /// One sentence: what to do and on what evidence.
    pub summary: String,
    pub settings: Vec<Setting>,
    pub service: Vec<ServiceLine>,
    pub evidence: Vec<EvidenceLine>,
    /// What the evidence does not cover, each with the command that would measure it.
    pub not_measured: Vec<String>,
    pub notes: Vec<String>,
    /// How to verify that the advice took effect.
    pub verify: Vec<String>,
}

/// One cost of an arm against the baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostNote {
    /// In words, with the measured figures: `peak memory +1,240% [+1,190, +1,300] (1.0 GiB vs
    /// 77.1 MiB)`.
    pub what: String,
    /// How much worse, percent (the point estimate).
    pub percent: f64,
    /// It grew by more than the benefit improved: the arm is not adopted.
    pub outweighs: bool,
}

impl Finding {
    /// The finding in the advice's words.
    pub fn word(self) -> &'static str {
        match self {
            Finding::Adopt => "adopt",
            Finding::Runner => "runner-up",
            Finding::Costly => "not adopted (its costs outweigh)",
            Finding::Conditional => "not adopted (gains only under some conditions or runs)",
            Finding::BelowEffect => "below δ",
            Finding::Slower => "slower",
            Finding::Equivalent => "equivalent",
            Finding::Inconclusive => "inconclusive",
            Finding::Flagged => "flagged",
        }
    }
}

impl EvidenceLine {
    /// `run 3: always vs never, tps +7.5% [+3.1, +12.0] FASTER, 98% on huge pages`.
    pub fn describe(&self) -> String {
        let interval = match (self.percent.lo, self.percent.hi) {
            (Some(lo), Some(hi)) => format!(" {}", crate::units::fmt_interval(lo, hi, 1)),
            _ => String::new(),
        };
        let coverage = self.coverage.map_or(String::new(), |c| {
            format!(", {:.0}% on huge pages", c * 100.0)
        });
        let flagged = if self.flagged > 0 {
            format!(", FLAGGED in {} of {} trials", self.flagged, self.trials)
        } else {
            String::new()
        };
        let costs = if self.costs.is_empty() {
            String::new()
        } else {
            let c: Vec<&str> = self.costs.iter().map(|c| c.what.as_str()).collect();
            format!("; costs: {}", c.join("; "))
        };
        format!(
            "{}: {} vs {}, {} {:+.1}%{interval} {}{coverage}{flagged}{costs}",
            self.place(),
            self.arm,
            self.baseline,
            self.metric,
            self.percent.point,
            format!("{:?}", self.verdict).to_uppercase()
        )
    }

    /// `run 3`, or `run 3 (fragmented)` under a condition.
    pub fn place(&self) -> String {
        match &self.condition {
            Some(c) => format!("run {} ({c})", self.run_id),
            None => format!("run {}", self.run_id),
        }
    }

    /// The line with the resolved costs first: `run 14: peak memory +1466% [+1464, +1470]
    /// (1.00 GiB vs 65.5 MiB), with nsop +2.0% [-8.1, +12.0] INCONCLUSIVE`.
    pub fn describe_cost_first(&self) -> String {
        let outweighing = self.outweighing();
        if outweighing.is_empty() {
            return self.describe();
        }
        let interval = match (self.percent.lo, self.percent.hi) {
            (Some(lo), Some(hi)) => format!(" {}", crate::units::fmt_interval(lo, hi, 1)),
            _ => String::new(),
        };
        format!(
            "{}: {} vs {}, {}, with {} {:+.1}%{interval} {}",
            self.place(),
            self.arm,
            self.baseline,
            outweighing.join("; "),
            self.metric,
            self.percent.point,
            format!("{:?}", self.verdict).to_uppercase()
        )
    }

    /// The costs that outweigh the benefit, in words.
    pub fn outweighing(&self) -> Vec<&str> {
        self.costs
            .iter()
            .filter(|c| c.outweighs)
            .map(|c| c.what.as_str())
            .collect()
    }
}

/// A machine checked against an advice file, setting by setting.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Checked {
    /// The advice file, as given.
    pub file: String,
    /// Each advised setting with how the machine differs (`None`: as advised).
    pub settings: Vec<(Setting, Option<String>)>,
    /// Service lines this check cannot read, with the command that verifies them.
    pub unchecked: Vec<String>,
}

impl Checked {
    /// The settings the machine does not follow.
    pub fn differing(&self) -> usize {
        self.settings.iter().filter(|(_, d)| d.is_some()).count()
    }
}
