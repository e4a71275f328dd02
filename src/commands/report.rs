//! `hugelab report`: one self-contained HTML file (inline SVG charts, no JavaScript) or a
//! Markdown document for stored runs, benches and a comparison of two runs. The report is drawn
//! from the same records, and the same table cells, as the terminal output.

use super::UsageError;
use super::options::{Database, Decision, MetricChoice, ReportFormat};
use super::results::{compare_runs, open};
use crate::analyze::stats::{quantile_interval, sorted};
use crate::backing::Backing;
use crate::model::report::{
    ArmStalls, BenchCurve, BenchLine, BenchPoint, CompareResult, Point, RunKind, RunView, Series,
    StallHistogram,
};
use crate::store::analysis::reanalyse;
use crate::store::{ArmRow, RunMeta, TrialRow};
use crate::units::Bytes;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Stored run or bench ids (`hugelab results list`)
    #[arg(required_unless_present = "compare")]
    pub runs: Vec<i64>,
    /// Report a comparison of two runs (ids or exported JSON files) instead
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "runs")]
    pub compare: Option<Vec<String>>,
    /// With --compare: the metric compared, and its direction
    #[command(flatten)]
    pub metric: MetricChoice,
    /// Output file (default: report.html or report.md)
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// The document to write
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    #[command(flatten)]
    pub decision: Decision,
    #[command(flatten)]
    pub store: Database,
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
        let w = &t.evidence["trace"];
        let Some(arm) = index(t.arm_idx).filter(|_| !w.is_null()) else {
            continue;
        };
        traced[arm] += 1;
        for l in w["latencies"].as_array().into_iter().flatten() {
            let kind = l["kind"].as_str().unwrap_or("?").to_string();
            let cell = by_kind.entry(kind).or_default().entry(arm).or_default();
            cell.1 += l["hist"]["total_ns"].as_u64().unwrap_or(0);
            for b in l["hist"]["log2"].as_array().into_iter().flatten() {
                if let (Some(edge), Some(n)) = (b[0].as_u64(), b[1].as_u64()) {
                    *cell.0.entry(edge).or_default() += n;
                }
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
    report: &crate::analyze::experiment::ExperimentReport,
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

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let md = a.format == ReportFormat::Md;
    let text = if let Some(ab) = &a.compare {
        let c: CompareResult = compare_runs(
            &ab[0],
            &ab[1],
            &a.metric.metric,
            a.metric.higher,
            a.decision.effect,
            a.decision.confidence,
            &a.store.db,
        )?;
        if md {
            crate::render::markdown::compare(&c)
        } else {
            crate::render::html::compare(&c)
        }
    } else {
        let store = open(&a.store.db)?;
        let mut views = Vec::new();
        for id in &a.runs {
            let (meta, arms, trials) = store.load(*id)?;
            if trials.is_empty() {
                return Err(UsageError(format!(
                    "run {id} has no trials to report (`hugelab results list` shows what each run holds)"
                ))
                .into());
            }
            views.push(view(
                meta,
                &arms,
                &trials,
                a.decision.effect,
                a.decision.confidence,
            ));
        }
        if md {
            crate::render::markdown::runs(&views)
        } else {
            crate::render::html::runs(&views)
        }
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(if md { "report.md" } else { "report.html" }));
    std::fs::write(&out, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e} (use -o PATH)", out.display()))?;
    crate::eprintln_safe!("wrote {} ({})", out.display(), Bytes(text.len() as u64));
    Ok(0)
}
