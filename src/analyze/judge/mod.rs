//! Judging a change on live hosts from their time series (`hugelab judge`): a canary group and
//! a baseline group serve production at the same time, so the two are compared interval by
//! interval (paired by time: diurnal load, deploys and traffic spikes hit both and cancel in
//! the ratio), with the same estimators as `run`.
//!
//! Per metric: each group's value of an interval is the mean over its hosts of each host's mean
//! in that interval (every host weighs the same, whatever its scrape gaps); the block is the
//! log-ratio canary / baseline. Samples a few seconds apart are strongly autocorrelated, which
//! is why they are never treated as independent (a per-sample Mann–Whitney test, as Kayenta's
//! judge runs, over-alarms: the simulation study shows how much); blocks of minutes are less so,
//! and what is left is measured and paid for: the lag-1 autocorrelation ρ of the blocks
//! (corrected for its small-sample bias) widens the interval by √((1+ρ)/(1−ρ)), the variance
//! inflation of the mean of an AR(1) series. The interval is Hodges–Lehmann with the
//! signed-rank interval, Holm's step-down across metrics (fixed window), or the confidence
//! sequence with a Bonferroni split (`--follow`, asymptotically valid at every look).
//!
//! Time pairing cannot cancel what differed between the two groups of hosts before anything
//! changed. A before window (the same metrics when neither group had the change) calibrates
//! it: the change is the after blocks' shift over the before blocks. And the interval a verdict
//! rests on includes host-to-host variation where the hosts show it (`views`: time-paired or
//! hosts as units, whichever is wider), or says no interval can be had.
//!
//! Evidence first (`evidence`): the exporter's coverage of the watched services tells whether
//! the group that should be on huge pages was, and whether the other was not — and, in the
//! before window, that the canary was not changed yet; if not, the judgement is FLAGGED.

mod evidence;
mod series;
mod views;

pub use evidence::{
    Evidence, HUGE_COVERAGE, HugeOn, KernelRow, WindowCoverage, before_evidence, evidence,
    window_mean,
};
use series::{autocorrelation, blocks, host_rows, per_step_lag1};
pub use series::{group_values, host_of};
use views::Units;
pub use views::{Basis, Composition, Groups};

use super::diagnostics::lag1;
use super::verdict::{self, Better, Contrast, Design, Verdict};
use crate::collect::prometheus::Series;
pub use crate::model::judge::{
    Autocorrelation, BeforeWindow, HostRow, MetricJudgement, Overall, Window,
};
use crate::stats::{self};

/// Lag-1 autocorrelations above this are capped when widening (the factor stays ≤ 6.2).
const MAX_RHO: f64 = 0.95;

/// How one metric's blocks are turned into an interval.
pub struct Settings {
    pub effect: f64,
    pub confidence: f64,
    /// Fixed window (Holm) or a confidence sequence (`--follow`).
    pub design: Design,
    /// Different hosts, or one host switched back and forth.
    pub groups: Groups,
}

/// One window's blocks, and what they are: missing intervals, a why-not, typical values.
struct Blocks {
    blocks: Vec<f64>,
    missing: usize,
    nonpositive: usize,
    canary_typical: Option<f64>,
    baseline_typical: Option<f64>,
    autocorrelation: Autocorrelation,
}

fn window_blocks(canary: &[Series], baseline: &[Series], w: &Window) -> Blocks {
    let (c, b) = (group_values(canary, w), group_values(baseline, w));
    let missing = c
        .iter()
        .zip(&b)
        .filter(|(x, y)| x.is_none() || y.is_none())
        .count();
    let (d, nonpositive) = blocks(&c, &b);
    let typical = |v: &[Option<f64>]| {
        let x: Vec<f64> = v.iter().flatten().copied().collect();
        (!x.is_empty()).then(|| stats::quantile_sorted(&stats::sorted(&x), 0.5))
    };
    Blocks {
        autocorrelation: autocorrelation(&d),
        blocks: d,
        missing,
        nonpositive,
        canary_typical: typical(&c),
        baseline_typical: typical(&b),
    }
}

/// The blocks of one metric, prepared for the interval.
pub struct Prepared {
    pub judgement: MetricJudgement,
    /// Log-ratios of the judged window, and of the before window when one was given.
    pub blocks: Vec<f64>,
    pub before: Option<Vec<f64>>,
    /// Each host's value as a unit: its log mean over the judged window, less its log mean
    /// over the before window when one was given (hosts with both).
    pub units: Vec<(bool, f64)>,
}

impl Prepared {
    fn units(&self) -> Units<'_> {
        Units {
            after: &self.blocks,
            before: self.before.as_deref(),
            widened_after: self.judgement.autocorrelation.widened,
            widened_before: self
                .judgement
                .before
                .as_ref()
                .map_or(1.0, |b| b.autocorrelation.widened),
            hosts: &self.units,
        }
    }
}

/// The canary's and the baseline's series of one metric.
pub type Pair<'a> = (&'a [Series], &'a [Series]);

/// Everything about one metric except its interval (which needs every metric, for Holm).
pub fn prepare(
    name: &str,
    better: Better,
    critical: bool,
    (canary, baseline): Pair,
    w: &Window,
    before: Option<(Pair, &Window)>,
) -> Prepared {
    let a = window_blocks(canary, baseline, w);
    let mut hosts = host_rows(canary, w, true);
    hosts.extend(host_rows(baseline, w, false));
    let pre = before.map(|((bc, bb), bw)| {
        let b = window_blocks(bc, bb, bw);
        let mut rows = host_rows(bc, bw, true);
        rows.extend(host_rows(bb, bw, false));
        for h in &mut hosts {
            h.before_mean = rows
                .iter()
                .find(|r| r.host == h.host && r.canary == h.canary)
                .map(|r| r.mean);
        }
        b
    });
    let units: Vec<(bool, f64)> = hosts
        .iter()
        .filter(|h| h.mean > 0.0)
        .filter_map(|h| match (&pre, h.before_mean) {
            (None, _) => Some((h.canary, h.mean.ln())),
            (Some(_), Some(b)) if b > 0.0 => Some((h.canary, h.mean.ln() - b.ln())),
            _ => None,
        })
        .collect();
    let count = |ss: &[Series]| ss.iter().map(|s| s.points.len() as u64).sum::<u64>();
    let unusable = |b: &Blocks, window: &str| {
        if b.nonpositive > 0 {
            Some(format!(
                "{} intervals {window}have a value ≤ 0, so no ratio can be taken (a rate of rare events? judge a rate over a longer range, or a ratio of counts)",
                b.nonpositive
            ))
        } else if b.blocks.is_empty() {
            Some(format!("no interval {window}has samples from both groups"))
        } else {
            None
        }
    };
    let why_not = if canary.is_empty() || baseline.is_empty() {
        Some(format!(
            "the query returned no series for the {}",
            match (canary.is_empty(), baseline.is_empty()) {
                (true, true) => "canary nor the baseline",
                (true, false) => "canary",
                _ => "baseline",
            }
        ))
    } else {
        unusable(&a, "of the window ").or_else(|| {
            pre.as_ref()
                .and_then(|b| unusable(b, "of the before window "))
        })
    };
    let usable = why_not.is_none();
    Prepared {
        judgement: MetricJudgement {
            name: name.into(),
            better,
            critical,
            canary_hosts: canary.len(),
            baseline_hosts: baseline.len(),
            samples: count(canary) + count(baseline),
            canary_typical: a.canary_typical,
            baseline_typical: a.baseline_typical,
            missing: a.missing,
            autocorrelation: Autocorrelation {
                per_step: per_step_lag1(canary, baseline),
                ..a.autocorrelation.clone()
            },
            contrast: None,
            after_ratio: None,
            before: pre.as_ref().map(|b| BeforeWindow {
                blocks: b.blocks.len(),
                missing: b.missing,
                canary_typical: b.canary_typical,
                baseline_typical: b.baseline_typical,
                ratio: None,
                autocorrelation: b.autocorrelation.clone(),
            }),
            composition: None,
            hosts,
            why_not,
        },
        blocks: if usable { a.blocks } else { Vec::new() },
        before: pre.map(|b| if usable { b.blocks } else { Vec::new() }),
        units,
    }
}

/// How the interval of a basis is computed, in words.
fn method(basis: Basis, before: bool, design: &Design) -> String {
    let sequential = matches!(design, Design::Sequential { .. });
    match (basis, before, sequential) {
        (Basis::HostsAsUnits, b, seq) => format!(
            "hosts as units: Welch t over each host's {}{}",
            if b {
                "change from the before window"
            } else {
                "log mean over the window"
            },
            if seq {
                " (a fixed-sample interval at each look)"
            } else {
                ""
            }
        ),
        (_, true, true) => "confidence sequence of the after intervals less the before window's interval (Bonferroni halves)".into(),
        (_, true, false) => "Hodges–Lehmann shift of the after intervals over the before intervals, Mann–Whitney".into(),
        (_, false, true) => "confidence sequence (mean log-ratio per interval)".into(),
        (_, false, false) => "Hodges–Lehmann, signed-rank over intervals".into(),
    }
}

/// Intervals and verdicts for every prepared metric at once: Holm's step-down across the
/// metrics that have an interval (fixed window), or the confidence sequence at α/m each
/// (`--follow`). Each metric's interval rests on its composition's basis.
pub fn judge(prepared: Vec<Prepared>, s: &Settings) -> Vec<MetricJudgement> {
    let compositions: Vec<Composition> = prepared
        .iter()
        .map(|p| p.units().compose(s.groups, s.confidence))
        .collect();
    let judged: Vec<usize> = (0..prepared.len())
        .filter(|i| !prepared[*i].blocks.is_empty() && compositions[*i].basis != Basis::TooFewHosts)
        .collect();
    let m = judged.len().max(1);
    let interval = |i: usize, level: f64| {
        prepared[i]
            .units()
            .interval(compositions[i].basis, level, &s.design)
    };
    let raw: Vec<f64> = judged
        .iter()
        .map(|i| prepared[*i].units().p_value(compositions[*i].basis))
        .collect();
    let levels: Vec<f64> = match s.design {
        Design::Sequential { .. } => {
            vec![crate::stats::Level(s.confidence).split(m).get(); judged.len()]
        }
        _ => verdict::holm_levels(&raw, s.confidence, |j, level| {
            interval(judged[j], level).is_some_and(|e| e.excludes(0.0))
        }),
    };
    let adjusted = if m > 1 { verdict::holm(&raw) } else { raw };
    let mut level_of = vec![s.confidence; prepared.len()];
    let mut contrasts: Vec<Option<Contrast>> = vec![None; prepared.len()];
    for (j, &i) in judged.iter().enumerate() {
        let p = &prepared[i];
        level_of[i] = levels[j];
        let basis = compositions[i].basis;
        let Some(e) = interval(i, levels[j]) else {
            continue;
        };
        let sd = stats::sd(&p.blocks);
        let more = |n: usize| {
            let need = match s.design {
                Design::Sequential { n_opt } => {
                    verdict::cs_blocks_to_resolve(sd, s.effect, levels[j], 0.8, n_opt)
                }
                _ => verdict::blocks_to_resolve(sd, s.effect, levels[j], 0.8),
            };
            // Widening costs blocks as its square.
            let f = p.judgement.autocorrelation.widened;
            ((need as f64 * f * f).ceil() as usize)
                .saturating_sub(n)
                .max(1)
        };
        let mut c = verdict::contrast_from(
            p.blocks.len(),
            e,
            None,
            adjusted[j],
            levels[j],
            &method(basis, p.before.is_some(), &s.design),
            s.effect,
            p.judgement.better,
            more,
        );
        if basis == Basis::HostsAsUnits {
            // Longer windows do not narrow how hosts differ: more hosts or a before window do.
            c.more_blocks = None;
        }
        contrasts[i] = Some(c);
    }
    prepared
        .into_iter()
        .zip(contrasts)
        .zip(compositions)
        .zip(level_of)
        .map(|(((p, c), mut comp), level)| {
            let u = p.units();
            if s.groups == Groups::Hosts {
                comp.hosts = u
                    .interval(Basis::HostsAsUnits, level, &s.design)
                    .map(verdict::to_percent);
            }
            let ratio = |d: &[f64], f: f64| {
                stats::hodges_lehmann(d, level).map(|e| verdict::to_percent(views::widen(e, f)))
            };
            let after_ratio = ratio(&p.blocks, p.judgement.autocorrelation.widened);
            let before_ratio = p.judgement.before.as_ref().and_then(|b| {
                ratio(
                    p.before.as_deref().unwrap_or_default(),
                    b.autocorrelation.widened,
                )
            });
            let mut j = p.judgement;
            if c.is_none() && j.why_not.is_none() {
                j.why_not = Some(if comp.basis == Basis::TooFewHosts {
                    format!(
                        "{} vs {} hosts and no before window: what the groups differed by before the change cannot be told from the change, and with one host in a group host-to-host variation cannot be measured; give --before FROM..TO (or --before-last) from before the change, or at least 2 hosts per group",
                        j.canary_hosts, j.baseline_hosts
                    )
                } else {
                    format!("{} blocks are too few for an interval", p.blocks.len())
                });
            }
            j.contrast = c;
            j.after_ratio = after_ratio;
            if let Some(b) = &mut j.before {
                b.ratio = before_ratio;
            }
            j.composition = Some(comp);
            j
        })
        .collect()
}

/// The verdict over every metric: FLAGGED when the evidence says so; WORSE when a critical
/// metric (every metric, if none is marked) is; BETTER when one is better and none worse;
/// EQUIVALENT when all are; INCONCLUSIVE otherwise.
pub fn overall(metrics: &[MetricJudgement], evidence: &Evidence) -> Overall {
    if evidence.flagged.is_some() {
        return Overall::Flagged;
    }
    let verdicts = deciding(metrics);
    if verdicts.contains(&Some(Verdict::Slower)) {
        Overall::Worse
    } else if !verdicts.is_empty() && verdicts.iter().all(|v| *v == Some(Verdict::Equivalent)) {
        Overall::Equivalent
    } else if verdicts.contains(&Some(Verdict::Faster))
        && verdicts
            .iter()
            .all(|v| matches!(v, Some(Verdict::Faster | Verdict::Equivalent)))
    {
        Overall::Better
    } else {
        Overall::Inconclusive
    }
}

/// The verdicts that decide the overall one: the critical metrics', or every metric's when
/// none is marked critical (`None` for a metric without an interval).
fn deciding(metrics: &[MetricJudgement]) -> Vec<Option<Verdict>> {
    let any_critical = metrics.iter().any(|m| m.critical);
    metrics
        .iter()
        .filter(|m| m.critical || !any_critical)
        .map(|m| m.contrast.as_ref().map(|c| c.verdict))
        .collect()
}

/// Whether every deciding metric has a verdict other than INCONCLUSIVE (`--follow` stops).
pub fn settled(metrics: &[MetricJudgement]) -> bool {
    deciding(metrics)
        .iter()
        .all(|v| v.is_some_and(|v| v != Verdict::Inconclusive))
}

#[cfg(test)]
mod tests;
