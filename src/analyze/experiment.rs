//! Analysis of an A/B/n experiment (`run`, `results show`): per arm and metric a summary and
//! diagnostics; per non-baseline arm the paired contrast and verdict over complete blocks.

use super::diagnostics::{Diagnostics, diagnose};
use super::stats::{Summary, summarize};
use super::verdict::{Better, Contrast, contrasts};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialData {
    pub block: usize,
    pub arm: usize,
    pub ok: bool,
    pub flagged: Option<String>,
    pub metrics: BTreeMap<String, f64>,
    /// Huge coverage of the child's memory at its peak resident size.
    pub coverage_at_peak: Option<f64>,
    /// perf counts of the trial (page_faults, dtlb_load_misses, …).
    #[serde(default)]
    pub counters: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricDef {
    pub name: String,
    pub better: Better,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmMetric {
    pub arm: String,
    pub summary: Option<Summary>,
    pub diagnostics: Diagnostics,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricReport {
    pub metric: MetricDef,
    pub arms: Vec<ArmMetric>,
    /// Non-baseline arm name → contrast vs the baseline (None: too few complete blocks).
    pub contrasts: Vec<(String, Option<Contrast>)>,
    pub complete_blocks: usize,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmEvidence {
    pub arm: String,
    pub trials: usize,
    pub failed: usize,
    pub flagged: usize,
    pub first_flag: Option<String>,
    pub mean_coverage_at_peak: Option<f64>,
    /// Mean perf counts per trial, over trials where they were counted.
    pub mean_counters: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExperimentReport {
    pub baseline: String,
    pub effect: f64,
    pub confidence: f64,
    pub metrics: Vec<MetricReport>,
    pub evidence: Vec<ArmEvidence>,
}

/// Per-block log-ratios of `arm` vs `baseline` for `metric` over blocks where both succeeded.
pub fn log_ratios(trials: &[TrialData], arm: usize, baseline: usize, metric: &str) -> Vec<f64> {
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
        .filter_map(|b| Some((value(b, arm)? / value(b, baseline)?).ln()))
        .collect()
}

pub fn analyse(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    effect: f64,
    confidence: f64,
) -> ExperimentReport {
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let metric_reports = metrics
        .iter()
        .map(|m| {
            let arm_metrics = (0..arms.len())
                .map(|a| {
                    let mut ts: Vec<&TrialData> =
                        trials.iter().filter(|t| t.arm == a && t.ok).collect();
                    ts.sort_by_key(|t| t.block);
                    let v: Vec<f64> = ts
                        .iter()
                        .filter_map(|t| t.metrics.get(&m.name).copied())
                        .collect();
                    ArmMetric {
                        arm: arms[a].clone(),
                        summary: summarize(&v),
                        diagnostics: diagnose(&v),
                    }
                })
                .collect();
            let d: Vec<Vec<f64>> = others
                .iter()
                .map(|&a| log_ratios(trials, a, baseline, &m.name))
                .collect();
            let complete = d.iter().map(Vec::len).min().unwrap_or(0);
            let cs = contrasts(&d, effect, confidence, m.better);
            MetricReport {
                metric: m.clone(),
                arms: arm_metrics,
                contrasts: others
                    .iter()
                    .zip(cs)
                    .map(|(&a, c)| (arms[a].clone(), c))
                    .collect(),
                complete_blocks: complete,
            }
        })
        .collect();
    let evidence = (0..arms.len())
        .map(|a| {
            let ts: Vec<&TrialData> = trials.iter().filter(|t| t.arm == a).collect();
            let covs: Vec<f64> = ts.iter().filter_map(|t| t.coverage_at_peak).collect();
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
                arm: arms[a].clone(),
                trials: ts.len(),
                failed: ts.iter().filter(|t| !t.ok).count(),
                flagged: ts.iter().filter(|t| t.flagged.is_some()).count(),
                first_flag: ts.iter().find_map(|t| t.flagged.clone()),
                mean_coverage_at_peak: (!covs.is_empty())
                    .then(|| covs.iter().sum::<f64>() / covs.len() as f64),
            }
        })
        .collect();
    ExperimentReport {
        baseline: arms[baseline].clone(),
        effect,
        confidence,
        metrics: metric_reports,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::verdict::Verdict;

    fn trial(block: usize, arm: usize, wall: f64) -> TrialData {
        TrialData {
            block,
            arm,
            ok: true,
            flagged: None,
            metrics: [("wall_s".to_string(), wall)].into(),
            coverage_at_peak: None,
            counters: BTreeMap::new(),
        }
    }

    #[test]
    fn pairs_by_block_and_skips_incomplete_blocks() {
        let mut t = Vec::new();
        for b in 0..30 {
            let drift = 1.0 + b as f64 * 0.01;
            t.push(trial(b, 0, 10.0 * drift * (1.0 + 0.001 * (b % 5) as f64)));
            t.push(trial(b, 1, 9.0 * drift * (1.0 + 0.001 * (b % 3) as f64)));
            t.push(trial(b, 2, 10.0 * drift * (1.0 + 0.001 * (b % 4) as f64)));
        }
        t[3].ok = false; // block 1, arm 0 failed: block 1 drops out
        let r = analyse(
            &["base".into(), "fast".into(), "same".into()],
            0,
            &t,
            &[MetricDef {
                name: "wall_s".into(),
                better: Better::Lower,
            }],
            0.01,
            0.99,
        );
        let m = &r.metrics[0];
        assert_eq!(m.complete_blocks, 29);
        let fast = m.contrasts[0].1.as_ref().unwrap();
        assert_eq!(fast.verdict, Verdict::Faster);
        assert!(
            (fast.percent.point + 10.0).abs() < 0.5,
            "{:?}",
            fast.percent
        );
        assert_eq!(
            m.contrasts[1].1.as_ref().unwrap().verdict,
            Verdict::Equivalent
        );
        assert_eq!(r.evidence[0].failed, 1);
        assert!(
            m.arms[0]
                .diagnostics
                .warnings
                .iter()
                .any(|w| w.contains("drift"))
        );
    }
}
