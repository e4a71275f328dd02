//! A contrast's verdict and how it was reached (`analyze::verdict` decides them).

use crate::stats::Estimate;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Faster,
    Slower,
    Equivalent,
    Inconclusive,
}

/// Which direction is good for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// One arm against the baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Contrast {
    pub blocks: usize,
    /// Percent change of the arm vs the baseline (Hodges–Lehmann on per-block log-ratios).
    pub percent: Estimate,
    /// Percent change of the mean per-block ratio, BCa bootstrap interval.
    pub mean_ratio_percent: Option<Estimate>,
    /// Signed-rank p-value, Holm-adjusted across contrasts when there are several.
    pub p_value: f64,
    pub verdict: Verdict,
    /// Whether a FASTER/SLOWER interval also clears ±δ (the effect is at least δ).
    pub clears_effect: bool,
    /// For INCONCLUSIVE: the half-width of the interval, percent — the smallest effect this
    /// experiment could have detected.
    pub min_detectable_percent: Option<f64>,
    /// The half-width of the interval, percent (None without an interval): the precision the
    /// run reached, whatever the verdict.
    #[serde(default)]
    pub half_width_percent: Option<f64>,
    /// For INCONCLUSIVE: how many more blocks would resolve δ with 80% probability
    /// ([`blocks_to_resolve`] at the SD seen so far).
    pub more_blocks: Option<usize>,
    /// For INCONCLUSIVE: about how long [`Contrast::more_blocks`] would take at the run's own
    /// pace (its elapsed time over this contrast's units); `None` where the pace is not known.
    #[serde(default)]
    pub more_s: Option<f64>,
    /// The confidence level this contrast's interval really has (after Holm's step or the
    /// Bonferroni split, and the sequential boundary).
    #[serde(default)]
    pub level: f64,
    /// How the interval was computed.
    #[serde(default)]
    pub method: String,
    pub warnings: Vec<String>,
}

/// A confidence level as people write it: 99%, 99.5%, 99.67% (`Level::words`, the one way).
pub fn fmt_level(c: f64) -> String {
    crate::stats::Level(c).words()
}

/// The fewest units (blocks, or lifetimes) a BCa bootstrap interval of the mean ratio is
/// computed for: below it the resamples are too few to reach the tail the level asks for.
pub const BOOTSTRAP_MIN_N: usize = 10;

/// How the blocks were collected, and so how they must be analysed. Stored with a run, so
/// that re-analysis uses the rule the run used.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Design {
    /// A fixed number of paired blocks: Hodges–Lehmann with signed-rank intervals, Holm
    /// step-down across contrasts.
    #[default]
    Fixed,
    /// Looked at after every block and stopped when every contrast was settled: an open-ended
    /// confidence sequence for the mean per-block log-ratio (valid at every n at once), with α
    /// split evenly across contrasts (Bonferroni).
    Sequential { n_opt: f64 },
    /// O'Brien–Fleming group-sequential design: `looks` equally spaced looks up to
    /// `max_blocks`; repeated confidence intervals at each look's boundary level, α split
    /// evenly across contrasts (Bonferroni).
    GroupSequential { looks: usize, max_blocks: usize },
    /// Independent samples (imported runs): Hodges–Lehmann shift of log values with the
    /// Mann–Whitney interval, Holm step-down across contrasts.
    Unpaired,
}

/// The method of a contrast computed here, as stored and shown.
pub const METHOD: &str =
    "mean log-ratio, Student t (too few blocks for a signed-rank interval at this level)";

impl Better {
    /// `Higher` when a higher value is better.
    pub fn of(higher: bool) -> Better {
        if higher {
            Better::Higher
        } else {
            Better::Lower
        }
    }
}
