//! Analysis of an A/B/n experiment (`run`, `results show`): per arm and metric a summary and
//! diagnostics; per non-baseline arm the contrast and verdict (paired over complete blocks, or
//! unpaired for imported runs); per arm the backing evidence, the flag for a configuration
//! that did not take effect, and how much of the spread the machine's noise explains.

use super::diagnostics::diagnose;
use super::lifetimes::{Components, Placed, components, lifetime_means};
use super::verdict::{Better, Design, contrasts, unpaired_contrasts};
use crate::stats::summarize;
use std::collections::BTreeMap;

mod noise;

use super::trial_data::means_by_key;
pub use super::trial_data::{TrialData, TrialEvent, judge_trial, trial_data};
pub use crate::model::analysis::{
    ArmEvidence, ArmMetric, ArmState, ConditionAnalysis, EventTally, ExperimentAnalysis,
    Interaction, MetricAnalysis, MetricDef, primary_index,
};
use crate::stats::mean_of as mean;
pub use noise::{HEAVY_STEAL, NoiseAttribution, noise_attribution};

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

/// Per-block log-ratios with their block, lifetime (`usize::MAX` when not nested; the restart,
/// with replicas) and replica.
pub fn placed_log_ratios(
    trials: &[TrialData],
    arm: usize,
    baseline: usize,
    metric: &str,
) -> Vec<Placed> {
    // With replicas a trial's lifetime is `restart·replicas + replica`: placed by restart.
    let replicas = trials
        .iter()
        .filter_map(|t| t.replica)
        .max()
        .map_or(1, |r| r + 1);
    let placed = |b: usize| {
        let t = trials.iter().find(|t| t.block == b && t.arm == arm);
        match t.and_then(|t| t.lifetime) {
            Some(l) => (l / replicas, t.and_then(|t| t.replica).unwrap_or(0)),
            None => (usize::MAX, 0),
        }
    };
    block_log_ratios(trials, arm, baseline, metric)
        .into_iter()
        .map(|(block, value)| {
            let (lifetime, replica) = placed(block);
            Placed {
                lifetime,
                replica,
                block,
                value,
            }
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
    let mut report = ExperimentAnalysis {
        baseline: arms[baseline].clone(),
        effect,
        confidence,
        design: design.clone(),
        warning_kinds: super::diagnostics::warning_kinds(&metric_reports),
        metrics: metric_reports,
        evidence,
        conditions: Vec::new(),
        warmup: None,
        stalls: super::stalls::stall_counts(arms, baseline, trials, confidence),
        tails: tails(arms, baseline, trials, metrics, confidence, design),
        unchanged_costs: Vec::new(),
    };
    report.unchanged_costs = unchanged_costs(&report, arms);
    report
}

/// Per arm, the costs whose interval resolved no change (the brief answer counts them).
fn unchanged_costs(report: &ExperimentAnalysis, arms: &[String]) -> Vec<(String, usize)> {
    arms.iter()
        .map(|a| (a.clone(), crate::model::costs::unchanged(report, a)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The tail of the trial times as a contrast, where wall time is a contrasted metric of a
/// paired design.
fn tails(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    confidence: f64,
    design: &Design,
) -> Vec<crate::model::analysis::TailContrast> {
    metrics
        .iter()
        .find(|m| m.name == "wall_s" && !m.context && *design != Design::Unpaired)
        .map(|m| super::tail::tail_contrasts(arms, baseline, trials, &m.name, m.better, confidence))
        .unwrap_or_default()
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
    let mean_counters: BTreeMap<String, f64> = sums
        .into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect();
    let walk_share = mean_counters
        .get("dtlb_walk_cycles")
        .zip(mean_counters.get("cycles"))
        .filter(|(_, c)| **c > 0.0)
        .map(|(w, c)| w / c);
    ArmEvidence {
        mean_counters,
        walk_share,
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
        kernel_shared: ts.iter().filter(|t| t.kernel_shared).count(),
        events: event_tally(&ts),
    }
}

// `run --condition`: the analysis under each condition (`analyze::conditions` computes it).

#[cfg(test)]
mod tests;
