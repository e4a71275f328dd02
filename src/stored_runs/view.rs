//! A stored run read back with what its charts need: its analysis, every trial value in run
//! order, the stall histograms and, for a bench, the per-size lines.

use crate::analyze::stored::reanalyse;
use crate::backing::Backing;
use crate::model::report::{
    ArmStalls, BenchCurve, BenchLine, BenchPoint, Point, RunKind, RunView, Series, StallHistogram,
};
use crate::stats::{quantile_interval, sorted};
use crate::store::{ArmRow, RunMeta, TrialRow};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// A stored run with what its charts need: the analysis at `confidence`/`effect`, every trial
/// value in run order and, for a bench, the per-size lines.
pub fn view(
    store: &crate::store::Store,
    meta: RunMeta,
    arms: &[ArmRow],
    trials: &[TrialRow],
    over: &crate::options::Redecide,
) -> anyhow::Result<RunView> {
    let kind = if meta.status == "imported" {
        RunKind::Imported
    } else if meta.plan.is_bench() {
        RunKind::Bench
    } else {
        RunKind::Run
    };
    let (record, decided) = if kind == RunKind::Run {
        let (r, d) = super::recall(store, &meta, arms, trials, over)?;
        (Some(r), Some(d))
    } else {
        (None, None)
    };
    // A bench or an import is analysed at its own decision where it stored one.
    let (effect, own) = meta.plan.decision();
    let confidence = decided
        .as_ref()
        .map_or(over.confidence.or(own).unwrap_or(0.99), |d| d.confidence);
    let report = match &record {
        Some(r) => r.report.clone(),
        None => reanalyse(
            &meta,
            arms,
            trials,
            over.effect.or(effect).unwrap_or(0.01),
            confidence,
        ),
    };
    let arm_names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let index = |idx: i64| arms.iter().position(|a| a.idx == idx);
    let series = report
        .metrics
        .iter()
        .map(|m| Series {
            metric: m.metric.name.clone(),
            better: m.metric.better,
            medians: arm_names
                .iter()
                .map(|a| {
                    let arm = m.arms.iter().find(|x| &x.arm == a)?;
                    arm.summary.as_ref().map(|s| s.median)
                })
                .collect(),
            points: trials
                .iter()
                .filter(|t| t.ok && t.block >= 0)
                .filter_map(|t| {
                    Some(Point {
                        arm: index(t.arm_idx)?,
                        block: t.block,
                        seq: t.seq,
                        value: *t.metrics.get(&m.metric.name)?,
                        flagged: t.flagged.is_some(),
                    })
                })
                .collect(),
        })
        .collect();
    let curves = if kind == RunKind::Bench {
        bench_curves(&report, &arm_names, trials, arms, confidence)
    } else {
        Vec::new()
    };
    let stalls = stall_histograms(&arm_names, &index, trials);
    let said = match &record {
        Some(r) => super::said(&meta, arms, trials, r),
        None => crate::model::report::Said {
            arms: arm_names.clone(),
            ..Default::default()
        },
    };
    Ok(RunView {
        system: meta.plan.system().cloned(),
        meta,
        kind,
        arms: arm_names,
        report,
        record,
        decided,
        series,
        curves,
        stalls,
        said,
    })
}

/// `run --trace` stored each trial's latency histograms: sum them per kind and arm over the
/// successful measured trials that were traced.
fn stall_histograms(
    arm_names: &[String],
    index: &dyn Fn(i64) -> Option<usize>,
    trials: &[TrialRow],
) -> Vec<StallHistogram> {
    let mut traced = vec![0usize; arm_names.len()];
    // Per arm: bucket → events, and the total ns.
    type Arms = BTreeMap<usize, (BTreeMap<u64, u64>, u64)>;
    let mut by_kind: BTreeMap<String, Arms> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok && t.block >= 0) {
        let (Some(arm), Some(w)) = (index(t.arm_idx), t.evidence.trace.clone()) else {
            continue;
        };
        traced[arm] += 1;
        for l in w.latencies {
            let cell = by_kind.entry(l.kind).or_default().entry(arm).or_default();
            cell.1 += l.hist.total_ns;
            for (edge, n) in l.hist.log2 {
                *cell.0.entry(edge).or_default() += n;
            }
        }
    }
    by_kind
        .into_iter()
        .map(|(kind, arms)| StallHistogram {
            kind,
            arms: (0..arm_names.len())
                .filter(|a| traced[*a] > 0)
                .map(|a| {
                    let (buckets, total_ns) = arms.get(&a).cloned().unwrap_or_default();
                    ArmStalls {
                        arm: arm_names[a].clone(),
                        trials: traced[a],
                        buckets: buckets.into_iter().collect(),
                        total_ns,
                    }
                })
                .collect(),
        })
        .collect()
}

/// A bench stores metric `<workload metric>@<size>` per backing: regroup into one line per
/// backing over the sizes, per workload metric.
fn bench_curves(
    report: &crate::analyze::experiment::ExperimentAnalysis,
    arm_names: &[String],
    trials: &[TrialRow],
    arms: &[ArmRow],
    confidence: f64,
) -> Vec<BenchCurve> {
    let mut curves: Vec<BenchCurve> = Vec::new();
    for m in &report.metrics {
        let Some((family, size)) = m.metric.name.rsplit_once('@') else {
            continue;
        };
        let Ok(size) = size.parse::<Bytes>() else {
            continue;
        };
        let c = match curves.iter().position(|c| c.metric == family) {
            Some(i) => &mut curves[i],
            None => {
                curves.push(BenchCurve {
                    metric: family.to_string(),
                    better: m.metric.better,
                    baseline: report.baseline.clone(),
                    lines: arm_names
                        .iter()
                        .map(|a| BenchLine {
                            backing: a.clone(),
                            points: Vec::new(),
                        })
                        .collect(),
                });
                curves.last_mut().expect("just pushed")
            }
        };
        for (ai, line) in c.lines.iter_mut().enumerate() {
            let cell: Vec<&TrialRow> = trials
                .iter()
                .filter(|t| t.ok && t.block >= 0 && t.metrics.contains_key(&m.metric.name))
                .filter(|t| arms.get(ai).is_some_and(|a| a.idx == t.arm_idx))
                .collect();
            if cell.is_empty() {
                continue;
            }
            let s = sorted(
                &cell
                    .iter()
                    .map(|t| t.metrics[&m.metric.name])
                    .collect::<Vec<_>>(),
            );
            let ci = quantile_interval(&s, 0.5, confidence);
            let covs: Vec<f64> = cell
                .iter()
                .filter_map(|t| t.evidence.gathered.memory.coverage_at_peak)
                .collect();
            let coverage = (!covs.is_empty()).then(|| covs.iter().sum::<f64>() / covs.len() as f64);
            let contrast = m
                .contrasts
                .iter()
                .find(|(n, _)| *n == line.backing)
                .and_then(|(_, c)| c.as_ref());
            let huge = line
                .backing
                .parse::<Backing>()
                .is_ok_and(|b| b != Backing::Base);
            line.points.push(BenchPoint {
                size: size.0,
                n: s.len(),
                median: crate::stats::quantile_sorted(&s, 0.5),
                lo: ci.map(|c| c.0),
                hi: ci.map(|c| c.1),
                vs_baseline: contrast.map(|c| c.percent),
                verdict: contrast.map(|c| c.verdict),
                coverage,
                degraded: huge && coverage.is_some_and(|c| c < 0.99),
            });
        }
    }
    for c in &mut curves {
        for l in &mut c.lines {
            l.points.sort_by_key(|p| p.size);
        }
        c.lines.retain(|l| !l.points.is_empty());
    }
    curves
}
