//! A stored result read back with what its charts need: its record (or a bench's whole result)
//! at the decision it is read at, every trial value in run order, the stall histograms and, for
//! a bench, the per-size lines drawn from the bench's own cells.

use crate::model::bench::{BenchResult, direction};
use crate::model::report::{
    ArmStalls, BenchCurve, BenchLine, BenchPoint, Point, RunKind, RunView, Series, StallHistogram,
};
use crate::store::{ArmRow, RunMeta, TrialRow};
use std::collections::BTreeMap;

/// A stored result with what its charts need, read as [`super::recall`] reads it.
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
    let given = super::Trials::Given(trials);
    let recalled = super::recall(store, &meta, arms, &given, over)?;
    let read_as = recalled.notes();
    let arm_names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let index = |idx: i64| arms.iter().position(|a| a.idx == idx);
    let (record, bench) = match recalled.answer {
        super::Answer::Run(r) => (Some(*r), None),
        super::Answer::Bench(b) => (None, Some(*b)),
    };
    let series = record.as_ref().map_or(Vec::new(), |r| {
        r.report
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
            .collect()
    });
    let curves = bench.as_ref().map_or(Vec::new(), bench_curves);
    let stalls = stall_histograms(&arm_names, &index, trials);
    let said = match &record {
        Some(r) => super::said(&meta, arms, &given, r)?,
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
        decided: recalled.decision,
        read_as,
        record,
        bench,
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

/// Per workload metric one line per backing over the sizes, drawn from the bench's own cells:
/// the score and its interval, the paired ratio to the baseline and its direction, the coverage
/// its region was verified at.
fn bench_curves(b: &BenchResult) -> Vec<BenchCurve> {
    let baseline = b
        .cells
        .iter()
        .find(|c| c.vs_baseline.is_none())
        .map_or_else(|| "4k".to_string(), |c| c.backing.to_string());
    let mut curves: Vec<BenchCurve> = Vec::new();
    for c in &b.cells {
        let at = match curves.iter().position(|x| x.metric == c.metric.label()) {
            Some(i) => i,
            None => {
                curves.push(BenchCurve {
                    metric: c.metric.label().to_string(),
                    unit: c.metric.unit().to_string(),
                    better: crate::model::verdict::Better::of(c.metric.higher_is_better()),
                    baseline: baseline.clone(),
                    lines: Vec::new(),
                });
                curves.len() - 1
            }
        };
        let curve = &mut curves[at];
        let backing = c.backing.to_string();
        let line = match curve.lines.iter().position(|l| l.backing == backing) {
            Some(i) => &mut curve.lines[i],
            None => {
                curve.lines.push(BenchLine {
                    backing,
                    points: Vec::new(),
                });
                curve.lines.last_mut().expect("just pushed")
            }
        };
        let coverage = b
            .evidence
            .iter()
            .find(|e| {
                e.size == c.size
                    && e.backing == c.backing
                    && e.workload.metrics().contains(&c.metric)
            })
            .map(|e| &e.coverage);
        line.points.push(BenchPoint {
            size: c.size,
            n: c.summary.n,
            score: c.score,
            lo: c.error.map(|e| c.score - e),
            hi: c.error.map(|e| c.score + e),
            vs_baseline: c.vs_baseline.map(|e| e.map(|r| (r - 1.0) * 100.0)),
            direction: c.vs_baseline.map(|e| direction(c.metric, &e)),
            coverage: coverage.and_then(|v| v.fraction),
            degraded: coverage.is_some_and(|v| v.degraded),
        });
    }
    for c in &mut curves {
        for l in &mut c.lines {
            l.points.sort_by_key(|p| p.size);
        }
    }
    curves
}
