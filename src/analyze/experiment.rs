//! Analysis of an A/B/n experiment (`run`, `results show`): per arm and metric a summary and
//! diagnostics; per non-baseline arm the contrast and verdict (paired over complete blocks, or
//! unpaired for imported runs); per arm the backing evidence, the flag for a configuration
//! that did not take effect, and how much of the spread the machine's noise explains.

use super::diagnostics::{Diagnostics, diagnose};
use super::lifetimes::{Components, Placed, components, lifetime_means};
use super::stats::{Estimate, Summary, summarize};
use super::verdict::{Better, Contrast, Design, contrasts, unpaired_contrasts};
use std::collections::BTreeMap;

mod noise;

use super::stats::mean_of as mean;
use super::trial_data::means_by_key;
pub use super::trial_data::{TrialData, TrialEvent, judge_trial, trial_data};
pub use noise::{HEAVY_STEAL, NoiseAttribution, noise_attribution};

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

impl MetricDef {
    /// A metric contrasted between arms: neither context, cost nor a row of the load's table.
    pub fn contrasted(name: impl Into<String>, better: Better) -> MetricDef {
        MetricDef {
            name: name.into(),
            better,
            context: false,
            cost: false,
            row: false,
        }
    }
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
    /// Mean per trial of the kernel's huge-page counter deltas (machine-wide), over the trials
    /// that read them; the mean of the mTHP gauges at the trials' peaks.
    #[serde(default)]
    pub mean_kernel: BTreeMap<String, f64>,
    #[serde(default)]
    pub mean_gauges: BTreeMap<String, f64>,
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

impl EventTally {
    /// Trials where the event ran and succeeded.
    pub fn succeeded(&self) -> usize {
        self.trials - self.not_run - self.failed
    }
}

fn event_tally(ts: &[&TrialData]) -> Option<EventTally> {
    let events: Vec<(&TrialEvent, Option<f64>)> = ts
        .iter()
        .filter_map(|t| Some((t.event.as_ref()?, t.metrics.get("wall_s").copied())))
        .collect();
    if events.is_empty() {
        return None;
    }
    let mut walls: Vec<f64> = events
        .iter()
        .filter(|(e, _)| !e.ran)
        .filter_map(|(_, w)| *w)
        .collect();
    walls.sort_by(f64::total_cmp);
    Some(EventTally {
        trials: events.len(),
        not_run: events.iter().filter(|(e, _)| !e.ran).count(),
        failed: events.iter().filter(|(e, _)| e.ran && !e.ok).count(),
        failure: events
            .iter()
            .rev()
            .find(|(e, _)| e.ran && !e.ok)
            .map(|(e, _)| e.output.clone()),
        load_wall_s: (!walls.is_empty()).then(|| walls[walls.len() / 2]),
    })
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
    pub warmup: Option<super::warmup::Warmup>,
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

impl ExperimentAnalysis {
    /// The primary metric's report (see [`primary_index`]).
    pub fn primary(&self) -> Option<&MetricAnalysis> {
        self.metrics
            .get(primary_index(self.metrics.iter().map(|m| &m.metric)))
    }
}

/// The units a contrast is analysed over: per-block log-ratios of `arm` vs `baseline` for
/// `metric` over blocks where both succeeded — or, when the blocks ran in server lifetimes
/// (warm services), per lifetime the mean of its blocks' log-ratios (`analyze::lifetimes`).
pub fn log_ratios(trials: &[TrialData], arm: usize, baseline: usize, metric: &str) -> Vec<f64> {
    let placed = placed_log_ratios(trials, arm, baseline, metric);
    if placed.iter().any(|p| p.lifetime != usize::MAX) {
        lifetime_means(&placed)
    } else {
        placed.into_iter().map(|p| p.value).collect()
    }
}

/// Per-block log-ratios with their block and lifetime (`usize::MAX` when not nested).
pub fn placed_log_ratios(
    trials: &[TrialData],
    arm: usize,
    baseline: usize,
    metric: &str,
) -> Vec<Placed> {
    let lifetime = |b: usize| {
        trials
            .iter()
            .find(|t| t.block == b && t.arm == arm)
            .and_then(|t| t.lifetime)
            .unwrap_or(usize::MAX)
    };
    block_log_ratios(trials, arm, baseline, metric)
        .into_iter()
        .map(|(block, value)| Placed {
            lifetime: lifetime(block),
            block,
            value,
        })
        .collect()
}

/// Per-block log-ratios of `arm` vs `baseline`, with the block they came from.
fn block_log_ratios(
    trials: &[TrialData],
    arm: usize,
    baseline: usize,
    metric: &str,
) -> Vec<(usize, f64)> {
    // The trial of arm `a` in block `b` that measured this metric (a bench stores one trial
    // per metric and size, so a block can hold several trials of one arm).
    let value = |b: usize, a: usize| {
        trials
            .iter()
            .filter(|t| t.block == b && t.arm == a && t.ok)
            .find_map(|t| t.metrics.get(metric).copied())
            .filter(|v| *v > 0.0)
    };
    let mut blocks: Vec<usize> = trials.iter().map(|t| t.block).collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks
        .into_iter()
        .filter_map(|b| Some((b, (value(b, arm)? / value(b, baseline)?).ln())))
        .collect()
}

/// A load's result rows (`MetricDef::row`: JMH's benchmark × parameters) are the question
/// together: their contrasts are one family, Holm across rows × arms (computed on the log-ratios
/// as lower-is-better and turned round for the rows better higher: the interval and p-value do
/// not depend on the direction, only the verdict's word does).
fn rows_as_one_family(
    reports: &mut [MetricAnalysis],
    trials: &[TrialData],
    baseline: usize,
    others: &[usize],
    effect: f64,
    confidence: f64,
    design: &Design,
) {
    let rows: Vec<usize> = (0..reports.len())
        .filter(|&i| reports[i].metric.row)
        .collect();
    if rows.len() < 2 {
        return;
    }
    let mut d = Vec::new();
    for &r in &rows {
        for &a in others {
            d.push(log_ratios(trials, a, baseline, &reports[r].metric.name));
        }
    }
    let mut joint = contrasts(&d, effect, confidence, Better::Lower, design).into_iter();
    for &r in &rows {
        let higher = reports[r].metric.better == Better::Higher;
        for (_, c) in reports[r].contrasts.iter_mut() {
            *c = joint.next().flatten().map(|mut c| {
                if higher {
                    c.verdict = match c.verdict {
                        super::verdict::Verdict::Faster => super::verdict::Verdict::Slower,
                        super::verdict::Verdict::Slower => super::verdict::Verdict::Faster,
                        v => v,
                    };
                }
                c
            });
        }
    }
}

/// Every arm's successful values of `metric`, in block order.
fn values(trials: &[TrialData], arm: usize, metric: &str) -> Vec<f64> {
    let mut ts: Vec<&TrialData> = trials.iter().filter(|t| t.arm == arm && t.ok).collect();
    ts.sort_by_key(|t| t.block);
    ts.iter()
        .filter_map(|t| t.metrics.get(metric).copied())
        .collect()
}

pub fn analyse(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    effect: f64,
    confidence: f64,
    design: &Design,
) -> ExperimentAnalysis {
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let mut metric_reports: Vec<MetricAnalysis> = metrics
        .iter()
        .map(|m| {
            let arm_metrics = (0..arms.len())
                .map(|a| arm_metric(trials, a, &arms[a], &m.name))
                .collect();
            let (cs, complete) = if m.context {
                (Vec::new(), 0)
            } else if *design == Design::Unpaired {
                let logs = |a: usize| -> Vec<f64> {
                    values(trials, a, &m.name)
                        .into_iter()
                        .filter(|v| *v > 0.0)
                        .map(f64::ln)
                        .collect()
                };
                let x: Vec<Vec<f64>> = others.iter().map(|&a| logs(a)).collect();
                let base = logs(baseline);
                let n = x
                    .iter()
                    .map(Vec::len)
                    .chain([base.len()])
                    .min()
                    .unwrap_or(0);
                (
                    unpaired_contrasts(&x, &base, effect, confidence, m.better),
                    n,
                )
            } else {
                let d: Vec<Vec<f64>> = others
                    .iter()
                    .map(|&a| log_ratios(trials, a, baseline, &m.name))
                    .collect();
                let complete = others
                    .iter()
                    .map(|&a| block_log_ratios(trials, a, baseline, &m.name).len())
                    .min()
                    .unwrap_or(0);
                let mut c = contrasts(&d, effect, confidence, m.better, design);
                if m.cost {
                    super::verdict::few_blocks::fill(&mut c, &d, effect, m.better, design);
                }
                (c, complete)
            };
            let nested = trials.iter().any(|t| t.lifetime.is_some());
            let comps: Vec<(String, Option<Components>)> = if nested {
                others
                    .iter()
                    .map(|&a| {
                        let p = placed_log_ratios(trials, a, baseline, &m.name);
                        (arms[a].clone(), components(&p))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let lifetimes = if nested {
                others
                    .iter()
                    .map(|&a| log_ratios(trials, a, baseline, &m.name).len())
                    .min()
                    .unwrap_or(0)
            } else {
                0
            };
            MetricAnalysis {
                metric: m.clone(),
                arms: arm_metrics,
                contrasts: others
                    .iter()
                    .zip(cs)
                    .map(|(&a, c)| (arms[a].clone(), c))
                    .collect(),
                complete_blocks: complete,
                lifetimes,
                components: comps,
            }
        })
        .collect();
    if *design != Design::Unpaired {
        rows_as_one_family(
            &mut metric_reports,
            trials,
            baseline,
            &others,
            effect,
            confidence,
            design,
        );
    }
    let evidence = (0..arms.len())
        .map(|a| arm_evidence(&arms[a], trials.iter().filter(|t| t.arm == a).collect()))
        .collect();
    ExperimentAnalysis {
        baseline: arms[baseline].clone(),
        effect,
        confidence,
        design: design.clone(),
        metrics: metric_reports,
        evidence,
        conditions: Vec::new(),
        warmup: None,
    }
}

/// One arm's summary and diagnostics of a metric (its trials' huge coverage tells the
/// diagnostics whether two modes could be the pages').
fn arm_metric(trials: &[TrialData], a: usize, arm: &str, metric: &str) -> ArmMetric {
    let v = values(trials, a, metric);
    let spread = trials
        .iter()
        .filter(|t| t.arm == a && t.ok)
        .filter_map(|t| t.coverage_at_peak)
        .fold(None, |r: Option<(f64, f64)>, c| {
            Some(r.map_or((c, c), |(lo, hi)| (lo.min(c), hi.max(c))))
        });
    ArmMetric {
        arm: arm.to_string(),
        summary: summarize(&v),
        diagnostics: diagnose(&v, spread),
    }
}

/// One arm's evidence over its trials: failures, flags, coverage, counters, kernel activity.
fn arm_evidence(arm: &str, ts: Vec<&TrialData>) -> ArmEvidence {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for t in &ts {
        for (k, v) in &t.counters {
            let e = sums.entry(k.clone()).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    ArmEvidence {
        mean_counters: sums
            .into_iter()
            .map(|(k, (s, n))| (k, s / n as f64))
            .collect(),
        arm: arm.to_string(),
        trials: ts.len(),
        failed: ts.iter().filter(|t| !t.ok).count(),
        flagged: ts.iter().filter(|t| t.flagged.is_some()).count(),
        first_flag: ts.iter().find_map(|t| t.flagged.clone()),
        partial: ts.iter().filter(|t| t.partial.is_some()).count(),
        first_partial: ts.iter().find_map(|t| t.partial.clone()),
        mean_share: mean(ts.iter().filter_map(|t| t.share)),
        mean_coverage_at_peak: mean(ts.iter().filter_map(|t| t.coverage_at_peak)),
        mean_max_coverage: mean(ts.iter().filter_map(|t| t.max_coverage)),
        mean_matters: mean(ts.iter().filter_map(|t| t.matters.map(|v| v as f64))),
        mean_entries: mean(ts.iter().filter_map(|t| t.entries.map(|v| v as f64))),
        mean_hot: mean(ts.iter().filter_map(|t| t.hot.map(|v| v as f64))),
        mean_kernel: means_by_key(ts.iter().filter_map(|t| t.kernel.as_ref())),
        mean_gauges: means_by_key(ts.iter().map(|t| &t.gauges).filter(|g| !g.is_empty())),
        events: event_tally(&ts),
    }
}

// `run --condition`: the analysis under each condition (`analyze::conditions` computes it).

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
}

#[cfg(test)]
mod tests;
