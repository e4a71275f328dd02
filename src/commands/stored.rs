//! What the commands on stored results share (not a command itself): opening the results
//! database for reading, and the unpaired comparison of two stored or exported runs
//! (`compare`, `report --compare`).

use super::UsageError;
use crate::analyze::stats::{mann_whitney_shift, quantile_interval, sorted, summarize};
use crate::analyze::verdict::{Better, decide, to_percent};
use crate::backing::Backing;
use crate::model::report::{
    ArmStalls, BenchCurve, BenchLine, BenchPoint, Point, RunKind, RunView, Series, StallHistogram,
};
use crate::model::report::{CompareResult, CompareRow};
use crate::store::Store;
use crate::store::analysis::reanalyse;
use crate::store::{ArmRow, RunMeta, TrialRow};
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The results database for reading: it must exist (a read-only command creates nothing).
pub fn open(db: &Option<PathBuf>) -> anyhow::Result<Store> {
    Store::open_existing(&db.clone().unwrap_or_else(crate::store::default_path))
}

/// The TLB reach `bench tlb` last measured on this host, from the results database; `None`
/// when nothing was measured (or there is no database).
pub fn measured_tlb(db: &Option<PathBuf>) -> Option<crate::analyze::tlb::Measured> {
    let store = open(db).ok()?;
    let (run, created, v) = store.latest_summary("tlb").ok()??;
    Some(crate::analyze::tlb::Measured {
        run,
        created,
        reach: serde_json::from_value(v).ok()?,
    })
}

/// Arm name → successful values of `metric`, from a run id or an exported file.
fn values_of(
    src: &str,
    metric: &str,
    db: &Option<PathBuf>,
) -> anyhow::Result<(String, BTreeMap<String, Vec<f64>>)> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    if let Ok(id) = src.parse::<i64>() {
        let (meta, arms, trials) = open(db)?.load(id)?;
        for t in trials.iter().filter(|t| t.ok && t.block >= 0) {
            if let (Some(a), Some(v)) = (
                arms.iter().find(|a| a.idx == t.arm_idx),
                t.metrics.get(metric),
            ) {
                out.entry(a.name.clone()).or_default().push(*v);
            }
        }
        return Ok((format!("run {} ({})", meta.id, meta.host), out));
    }
    let text = std::fs::read_to_string(src).map_err(|e| {
        UsageError(format!(
            "{src:?} is neither a run id nor a readable file: {e}"
        ))
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| UsageError(format!("{src}: not JSON: {e}")))?;
    for (i, r) in v["results"].as_array().into_iter().flatten().enumerate() {
        let name = r["hugelab"]["arm"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("cmd{}", i + 1));
        let vals: Vec<f64> = if metric == "wall_s" {
            r["times"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_f64())
                .collect()
        } else {
            r["hugelab"]["trials"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| t["ok"] == true)
                .filter_map(|t| t["metrics"][metric].as_f64())
                .collect()
        };
        out.insert(name, vals);
    }
    Ok((src.to_string(), out))
}

/// The arms two runs share, compared unpaired on `metric` (B vs A).
pub fn compare_runs(
    a: &str,
    b: &str,
    metric: &str,
    higher: bool,
    effect: f64,
    confidence: f64,
    db: &Option<PathBuf>,
) -> anyhow::Result<CompareResult> {
    let (la, va) = values_of(a, metric, db)?;
    let (lb, vb) = values_of(b, metric, db)?;
    // A run against itself (the same id or file, or the same values) compares nothing.
    if a == b || va == vb {
        return Err(super::UsageError(format!(
            "{a} and {b} are {}: a comparison with itself says nothing; give two different runs (hugelab results list)",
            if a == b { "the same run" } else { "the same data" }
        ))
        .into());
    }
    let better = Better::of(higher);
    let mut rows = Vec::new();
    for (arm, xa) in &va {
        let Some(xb) = vb.get(arm) else { continue };
        let lb_: Vec<f64> = xb.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
        let la_: Vec<f64> = xa.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
        let shift = mann_whitney_shift(&lb_, &la_, confidence);
        rows.push(CompareRow {
            arm: arm.clone(),
            n_a: xa.len(),
            n_b: xb.len(),
            median_a: summarize(xa).map(|s| s.median),
            median_b: summarize(xb).map(|s| s.median),
            b_vs_a_percent: shift.map(|s| to_percent(s.estimate)),
            p_value: shift.map(|s| s.p_value),
            verdict: shift
                .and_then(|s| Some(decide(s.estimate.lo?, s.estimate.hi?, effect, better).0)),
            values_a: xa.clone(),
            values_b: xb.clone(),
        });
    }
    if rows.is_empty() {
        return Err(UsageError(format!(
            "{a} and {b} share no arm names with values of {metric:?}"
        ))
        .into());
    }
    Ok(CompareResult {
        schema: "hugelab.compare/1",
        a: la,
        b: lb,
        metric: metric.to_string(),
        better,
        effect,
        confidence,
        rows,
    })
}

/// A stored run with what its charts need: the analysis at `confidence`/`effect`, every trial
/// value in run order and, for a bench, the per-size lines.
pub fn view(
    meta: RunMeta,
    arms: &[ArmRow],
    trials: &[TrialRow],
    effect: f64,
    confidence: f64,
) -> RunView {
    let report = reanalyse(&meta, arms, trials, effect, confidence);
    let kind = if meta.status == "imported" {
        RunKind::Imported
    } else if meta.plan.get("bench").is_some() {
        RunKind::Bench
    } else {
        RunKind::Run
    };
    let arm_names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let index = |idx: i64| arms.iter().position(|a| a.idx == idx);
    let series = report
        .metrics
        .iter()
        .map(|m| Series {
            metric: m.metric.name.clone(),
            better: m.metric.better,
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
    RunView {
        system: meta.plan.get("system").cloned(),
        meta,
        kind,
        arms: arm_names,
        report,
        series,
        curves,
        stalls,
    }
}

/// `run --trace` stored each trial's latency histograms: sum them per kind and arm over the
/// successful measured trials that were traced.
fn stall_histograms(
    arm_names: &[String],
    index: &dyn Fn(i64) -> Option<usize>,
    trials: &[TrialRow],
) -> Vec<StallHistogram> {
    use std::collections::BTreeMap;
    let mut traced = vec![0usize; arm_names.len()];
    // Per arm: bucket → events, and the total ns.
    type Arms = BTreeMap<usize, (BTreeMap<u64, u64>, u64)>;
    let mut by_kind: BTreeMap<String, Arms> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok && t.block >= 0) {
        let (Some(arm), Some(w)) = (index(t.arm_idx), t.trace()) else {
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
                .filter_map(|t| t.evidence["memory"]["coverage_at_peak"].as_f64())
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
                median: crate::analyze::stats::quantile_sorted(&s, 0.5),
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
