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
//! Evidence first (`evidence`): the exporter's coverage of the watched services tells whether
//! the group that should be on huge pages was, and whether the other was not; if not, the
//! judgement is FLAGGED.

mod evidence;

pub use evidence::{Evidence, HUGE_COVERAGE, HugeOn, KernelRow, evidence, window_mean};

use super::diagnostics::lag1;
use super::stats::{self, Estimate};
use super::verdict::{self, Better, Contrast, Design, Verdict};
use crate::collect::prometheus::Series;

/// Lag-1 autocorrelations above this are capped when widening (the factor stays ≤ 6.2).
const MAX_RHO: f64 = 0.95;
/// The judged window: blocks start at `start` (the change plus the burn-in) and are `interval`
/// seconds long; a partial last interval is left out.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    pub start: f64,
    pub end: f64,
    pub interval: f64,
}

impl Window {
    pub fn intervals(&self) -> usize {
        ((self.end - self.start) / self.interval).floor().max(0.0) as usize
    }
}

/// How much the blocks were autocorrelated, and what was done about it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Autocorrelation {
    /// Lag-1 autocorrelation of the per-step log-ratio (why samples are not blocks).
    pub per_step: Option<f64>,
    /// Lag-1 autocorrelation of the blocks.
    pub blocks: Option<f64>,
    /// The same, corrected for its small-sample bias and capped at 0.95: what the interval
    /// pays for (0 when negative).
    pub corrected: f64,
    /// The factor the interval was widened by, √((1+ρ)/(1−ρ)) (1 = not widened).
    pub widened: f64,
}

/// One host's series of one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostRow {
    pub host: String,
    pub canary: bool,
    /// Mean of the host's samples over the judged window.
    pub mean: f64,
    pub samples: usize,
}

/// One metric's judgement.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricJudgement {
    pub name: String,
    pub better: Better,
    pub critical: bool,
    pub canary_hosts: usize,
    pub baseline_hosts: usize,
    pub samples: u64,
    /// Median over blocks of each group's value.
    pub canary_typical: Option<f64>,
    pub baseline_typical: Option<f64>,
    /// Intervals of the window where one group had no sample.
    pub missing: usize,
    pub autocorrelation: Autocorrelation,
    /// The canary against the baseline, percent, with its verdict; `None` with `why_not`.
    pub contrast: Option<Contrast>,
    /// Per-host check: canary hosts' window means against the baseline hosts' (Mann–Whitney
    /// shift of log means, percent), when both groups have at least [`HOST_UNITS`] hosts.
    pub per_host: Option<Estimate>,
    pub hosts: Vec<HostRow>,
    pub why_not: Option<String>,
}

/// Hosts per group from which the per-host comparison is made.
pub const HOST_UNITS: usize = 5;

/// The verdict over every metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Overall {
    Better,
    Worse,
    Equivalent,
    Inconclusive,
    Flagged,
}

/// How one metric's blocks are turned into an interval.
pub struct Settings {
    pub effect: f64,
    pub confidence: f64,
    /// Fixed window (Holm) or a confidence sequence (`--follow`).
    pub design: Design,
}

/// Each group's value per interval of the window: the mean over hosts of each host's interval
/// mean (`None` where no host of the group had a sample).
pub fn group_values(series: &[Series], w: &Window) -> Vec<Option<f64>> {
    let n = w.intervals();
    let mut sum = vec![0.0; n];
    let mut hosts = vec![0usize; n];
    let mut acc = vec![(0.0, 0usize); n];
    for s in series {
        acc.iter_mut().for_each(|a| *a = (0.0, 0));
        for &(t, v) in &s.points {
            if t < w.start {
                continue;
            }
            let k = ((t - w.start) / w.interval) as usize;
            if k < n {
                acc[k].0 += v;
                acc[k].1 += 1;
            }
        }
        for (k, (s, c)) in acc.iter().enumerate() {
            if *c > 0 {
                sum[k] += s / *c as f64;
                hosts[k] += 1;
            }
        }
    }
    sum.iter()
        .zip(&hosts)
        .map(|(s, h)| (*h > 0).then(|| s / *h as f64))
        .collect()
}

/// The blocks (log-ratios) of intervals where both groups have a positive value, and how many
/// intervals had a value ≤ 0.
fn blocks(c: &[Option<f64>], b: &[Option<f64>]) -> (Vec<f64>, usize) {
    let mut out = Vec::new();
    let mut nonpositive = 0;
    for (x, y) in c.iter().zip(b) {
        if let (Some(x), Some(y)) = (x, y) {
            if *x > 0.0 && *y > 0.0 {
                out.push((x / y).ln());
            } else {
                nonpositive += 1;
            }
        }
    }
    (out, nonpositive)
}

/// The lag-1 autocorrelation of the per-step log-ratio of the groups' sums (each step where
/// both groups have samples).
fn per_step_lag1(canary: &[Series], baseline: &[Series]) -> Option<f64> {
    use std::collections::BTreeMap;
    let sum = |ss: &[Series]| {
        let mut m: BTreeMap<i64, (f64, usize)> = BTreeMap::new();
        for s in ss {
            for (t, v) in &s.points {
                let e = m.entry((t * 1000.0).round() as i64).or_default();
                e.0 += v;
                e.1 += 1;
            }
        }
        m
    };
    let (c, b) = (sum(canary), sum(baseline));
    let r: Vec<f64> = c
        .iter()
        .filter_map(|(t, (cv, cn))| {
            let (bv, bn) = b.get(t)?;
            let (x, y) = (cv / *cn as f64, bv / *bn as f64);
            (x > 0.0 && y > 0.0).then(|| (x / y).ln())
        })
        .collect();
    lag1(&r)
}

/// The host a series belongs to: its `instance` label, else all its labels.
pub fn host_of(s: &Series) -> String {
    s.labels.get("instance").cloned().unwrap_or_else(|| {
        s.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

pub(super) fn host_rows(series: &[Series], w: &Window, canary: bool) -> Vec<HostRow> {
    series
        .iter()
        .filter_map(|s| {
            let v: Vec<f64> = s
                .points
                .iter()
                .filter(|(t, _)| *t >= w.start && *t < w.start + w.intervals() as f64 * w.interval)
                .map(|p| p.1)
                .collect();
            (!v.is_empty()).then(|| HostRow {
                host: host_of(s),
                canary,
                mean: stats::mean(&v),
                samples: v.len(),
            })
        })
        .collect()
}

/// The blocks of one metric, prepared for the interval.
pub struct Prepared {
    pub judgement: MetricJudgement,
    pub blocks: Vec<f64>,
}

/// Everything about one metric except its interval (which needs every metric, for Holm).
pub fn prepare(
    name: &str,
    better: Better,
    critical: bool,
    canary: &[Series],
    baseline: &[Series],
    w: &Window,
) -> Prepared {
    let (c, b) = (group_values(canary, w), group_values(baseline, w));
    let missing = c
        .iter()
        .zip(&b)
        .filter(|(x, y)| x.is_none() || y.is_none())
        .count();
    let (d, nonpositive) = blocks(&c, &b);
    let r = lag1(&d);
    // The lag-1 estimate is biased low by about (1 + 4ρ)/n (Kendall 1954): corrected before
    // it widens the interval.
    let rho = r
        .map_or(0.0, |r| r + (1.0 + 4.0 * r) / d.len() as f64)
        .clamp(0.0, MAX_RHO);
    let typical = |v: &[Option<f64>]| {
        let x: Vec<f64> = v.iter().flatten().copied().collect();
        (!x.is_empty()).then(|| stats::quantile_sorted(&stats::sorted(&x), 0.5))
    };
    let mut hosts = host_rows(canary, w, true);
    hosts.extend(host_rows(baseline, w, false));
    let count = |ss: &[Series]| ss.iter().map(|s| s.points.len() as u64).sum::<u64>();
    let why_not = if canary.is_empty() || baseline.is_empty() {
        Some(format!(
            "the query returned no series for the {}",
            match (canary.is_empty(), baseline.is_empty()) {
                (true, true) => "canary nor the baseline",
                (true, false) => "canary",
                _ => "baseline",
            }
        ))
    } else if nonpositive > 0 {
        Some(format!(
            "{nonpositive} intervals have a value ≤ 0, so no ratio can be taken (a rate of rare events? judge a rate over a longer range, or a ratio of counts)"
        ))
    } else if d.is_empty() {
        Some("no interval of the window has samples from both groups".into())
    } else {
        None
    };
    Prepared {
        judgement: MetricJudgement {
            name: name.into(),
            better,
            critical,
            canary_hosts: canary.len(),
            baseline_hosts: baseline.len(),
            samples: count(canary) + count(baseline),
            canary_typical: typical(&c),
            baseline_typical: typical(&b),
            missing,
            autocorrelation: Autocorrelation {
                per_step: per_step_lag1(canary, baseline),
                blocks: r,
                corrected: rho,
                widened: ((1.0 + rho) / (1.0 - rho)).sqrt(),
            },
            contrast: None,
            per_host: None,
            hosts,
            why_not,
        },
        blocks: if d.is_empty() || nonpositive > 0 {
            Vec::new()
        } else {
            d
        },
    }
}

/// An interval widened by `f` around its point estimate.
fn widen(e: Estimate, f: f64) -> Estimate {
    Estimate {
        lo: e.lo.map(|lo| e.point - f * (e.point - lo)),
        hi: e.hi.map(|hi| e.point + f * (hi - e.point)),
        ..e
    }
}

/// Intervals and verdicts for every prepared metric at once: Holm's step-down across the
/// metrics that have blocks (fixed window), or the confidence sequence at α/m each (`--follow`).
pub fn judge(prepared: Vec<Prepared>, s: &Settings) -> Vec<MetricJudgement> {
    let judged: Vec<usize> = (0..prepared.len())
        .filter(|i| !prepared[*i].blocks.is_empty())
        .collect();
    let m = judged.len().max(1);
    let alpha = 1.0 - s.confidence;
    let interval = |i: usize, level: f64| {
        let p = &prepared[i];
        verdict::paired_interval(&p.blocks, level, &s.design)
            .map(|e| widen(e, p.judgement.autocorrelation.widened))
    };
    let raw: Vec<f64> = judged
        .iter()
        .map(|i| stats::signed_rank_p(&prepared[*i].blocks))
        .collect();
    let levels: Vec<f64> = match s.design {
        Design::Sequential { .. } => vec![1.0 - alpha / m as f64; judged.len()],
        _ => verdict::holm_levels(&raw, alpha, |j, level| {
            interval(judged[j], level).is_some_and(|e| e.excludes(0.0))
        }),
    };
    let adjusted = if m > 1 { verdict::holm(&raw) } else { raw };
    let method = match s.design {
        Design::Sequential { .. } => "confidence sequence (mean log-ratio per interval)",
        _ => "Hodges–Lehmann, signed-rank over intervals",
    };
    let mut contrasts: Vec<Option<Contrast>> = vec![None; prepared.len()];
    for (j, &i) in judged.iter().enumerate() {
        let p = &prepared[i];
        let Some(e) = interval(i, levels[j]) else {
            continue;
        };
        let sd = {
            let x = &p.blocks;
            let mu = stats::mean(x);
            (x.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (x.len().max(2) - 1) as f64).sqrt()
        };
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
        contrasts[i] = Some(verdict::contrast_from(
            p.blocks.len(),
            e,
            None,
            adjusted[j],
            levels[j],
            method,
            s.effect,
            p.judgement.better,
            more,
        ));
    }
    prepared
        .into_iter()
        .zip(contrasts)
        .map(|(p, c)| {
            let mut j = p.judgement;
            if c.is_none() && j.why_not.is_none() {
                j.why_not = Some(format!(
                    "{} blocks are too few for an interval",
                    p.blocks.len()
                ));
            }
            j.contrast = c;
            j.per_host = per_host(&j.hosts, s.confidence);
            j
        })
        .collect()
}

/// Hosts as units: the shift of canary hosts' log window means against the baseline hosts'
/// (Mann–Whitney), percent, when both groups have [`HOST_UNITS`] hosts with positive means.
fn per_host(hosts: &[HostRow], confidence: f64) -> Option<Estimate> {
    let logs = |canary: bool| -> Vec<f64> {
        hosts
            .iter()
            .filter(|h| h.canary == canary && h.mean > 0.0)
            .map(|h| h.mean.ln())
            .collect()
    };
    let (c, b) = (logs(true), logs(false));
    if c.len() < HOST_UNITS || b.len() < HOST_UNITS {
        return None;
    }
    stats::mann_whitney_shift(&c, &b, confidence).map(|s| verdict::to_percent(s.estimate))
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
mod tests {
    use super::*;

    fn series(host: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            labels: [("instance".to_string(), host.to_string())].into(),
            points,
        }
    }

    #[test]
    fn group_values_weigh_hosts_equally_and_leave_out_the_partial_interval() {
        let w = Window {
            start: 0.0,
            end: 250.0,
            interval: 100.0,
        };
        // Host a has 4 samples in interval 0, host b one; the group value is the mean of means.
        let a = series(
            "a",
            vec![
                (0.0, 1.0),
                (10.0, 1.0),
                (20.0, 1.0),
                (30.0, 1.0),
                (150.0, 5.0),
                (240.0, 9.0),
            ],
        );
        let b = series("b", vec![(50.0, 3.0)]);
        let v = group_values(&[a, b], &w);
        assert_eq!(v, vec![Some(2.0), Some(5.0)]);
    }

    #[test]
    fn a_flag_names_the_group_that_missed_its_pages() {
        let w = Window {
            start: 0.0,
            end: 100.0,
            interval: 50.0,
        };
        let low = vec![
            series("c1", vec![(1.0, 0.01)]),
            series("c2", vec![(1.0, 0.02)]),
        ];
        let high = vec![series("b1", vec![(1.0, 0.8)])];
        let e = evidence(&low, &high, &w, HugeOn::Canary);
        assert!(e.flagged.as_deref().unwrap().contains("canary"), "{e:?}");
        assert_eq!(e.hosts_without, vec!["c1", "c2"]);
        // The same numbers are what turning huge pages off should look like.
        assert_eq!(evidence(&low, &high, &w, HugeOn::Baseline).flagged, None);
        // A baseline with as much coverage as the canary: the change changed nothing.
        let e = evidence(&high, &high, &w, HugeOn::Canary);
        assert!(e.flagged.unwrap().contains("did not change"));
    }
}
