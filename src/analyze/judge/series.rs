//! A group's series as the judgement reads them: the group's value per step, the hosts' own
//! rows, the paired blocks of two groups, and the autocorrelation of their differences.

use super::*;

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
pub(super) fn blocks(c: &[Option<f64>], b: &[Option<f64>]) -> (Vec<f64>, usize) {
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
pub(super) fn per_step_lag1(canary: &[Series], baseline: &[Series]) -> Option<f64> {
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
                before_mean: None,
            })
        })
        .collect()
}

/// The blocks' lag-1 autocorrelation and the widening it costs. The lag-1 estimate is biased
/// low by about (1 + 4ρ)/n (Kendall 1954): corrected before it widens the interval.
pub(super) fn autocorrelation(d: &[f64]) -> Autocorrelation {
    let r = lag1(d);
    let rho = r
        .map_or(0.0, |r| r + (1.0 + 4.0 * r) / d.len() as f64)
        .clamp(0.0, MAX_RHO);
    Autocorrelation {
        per_step: None,
        blocks: r,
        corrected: rho,
        widened: ((1.0 + rho) / (1.0 - rho)).sqrt(),
    }
}
