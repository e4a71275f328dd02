//! A run's "why" against the measured TLB reach: the entries each arm's memory needs on the
//! pages it was on, built once when the run ends and kept in its record ([`RunWhy`]), so `run`,
//! `results show` and the report say the same.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::tlb::{Measured, RunWhy};
use crate::model::verdict::Verdict;

/// What the TLB model is given for a run: per arm its memory that matters on its pages (scaled
/// to the hot bytes with `--hot`, in the same mix of page sizes); an arm whose backing was not
/// judged (4 KiB-indifferent) and had no huge coverage, one entry per 4 KiB of its own peak
/// memory.
pub fn why(report: &ExperimentAnalysis, measured: Measured) -> RunWhy {
    let size = report
        .evidence
        .iter()
        .filter_map(|e| e.mean_matters)
        .fold(0.0f64, f64::max);
    let hot = report.evidence.iter().any(|e| e.mean_hot.is_some());
    let entries: Vec<(String, u64)> = report
        .evidence
        .iter()
        .filter_map(|e| {
            let own = e.mean_matters.or_else(|| peak_memory(report, &e.arm));
            let bytes = if hot { e.mean_hot? } else { own? };
            match (e.mean_entries, e.mean_matters, e.mean_coverage_at_peak) {
                (Some(n), Some(m), _) if m > 0.0 => {
                    Some((e.arm.clone(), (n * bytes / m).ceil() as u64))
                }
                (None, _, Some(c)) if c < 0.1 && bytes > 0.0 => {
                    Some((e.arm.clone(), bytes as u64 / 4096))
                }
                _ => None,
            }
        })
        .collect();
    let hot_bytes = report
        .evidence
        .iter()
        .filter_map(|e| e.mean_hot)
        .fold(0.0f64, f64::max);
    let primary = report.primary();
    let resolved = primary.is_some_and(|p| {
        p.contrasts.iter().any(|(_, c)| {
            c.as_ref()
                .is_some_and(|c| matches!(c.verdict, Verdict::Faster | Verdict::Slower))
        })
    });
    RunWhy {
        measured,
        entries,
        hot,
        hot_bytes: hot_bytes as u64,
        matters_bytes: size as u64,
        unresolved: (!resolved).then(|| primary.map_or(String::new(), |p| p.metric.name.clone())),
        rows: report
            .metrics
            .iter()
            .filter(|x| x.metric.row)
            .map(|x| x.metric.name.clone())
            .collect(),
    }
}

/// An arm's median peak memory (the cost metric), where the run recorded it.
fn peak_memory(r: &ExperimentAnalysis, arm: &str) -> Option<f64> {
    let m = r.metrics.iter().find(|m| {
        m.metric.cost && crate::units::Unit::of_metric(&m.metric.name) == crate::units::Unit::Bytes
    })?;
    crate::model::costs::arm_median(m, arm)
}
