//! `results export --format json`: a superset of hyperfine's `--export-json` — per arm its
//! `command`, `mean`, `stddev`, `median`, `user`, `system`, `min`, `max` (seconds), `times` and
//! `exit_codes`, as hyperfine writes them, plus hugelab's arm, spec and every trial with its
//! metrics and evidence, and the run's row and its answer as stored (a run's record, a bench's
//! result); `hugelab import` reads it back whole. Schema `hugelab.export/1`.

use crate::stats::summarize;
use crate::store::{ArmRow, RunMeta, TrialRow};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "hugelab.export/1";

/// The whole file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Export<'a> {
    pub results: Vec<ArmExport<'a>>,
    pub hugelab: ExportRun<'a>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportRun<'a> {
    pub schema: &'static str,
    pub run: &'a RunMeta,
    /// A run's record as stored (its answer, time, stop reason, advice), read back whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<&'a crate::model::record::RunRecord>,
    /// A bench's whole result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<&'a crate::model::bench::BenchResult>,
}

/// One arm, as hyperfine writes one command, with hugelab's trials under `hugelab`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArmExport<'a> {
    /// `ARM (COMMAND)`.
    pub command: String,
    pub mean: Option<f64>,
    pub stddev: Option<f64>,
    pub median: Option<f64>,
    /// Mean user and system CPU seconds per successful trial.
    pub user: f64,
    pub system: f64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Wall seconds of the successful measured trials (the ones the statistics above are of).
    pub times: Vec<f64>,
    /// The exit code of each trial in `times`, in the same order (failed trials are under
    /// `hugelab.trials` with `ok: false`).
    pub exit_codes: Vec<Option<i32>>,
    pub hugelab: ArmTrials<'a>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ArmTrials<'a> {
    pub arm: &'a str,
    pub spec: &'a str,
    pub trials: Vec<TrialExport<'a>>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TrialExport<'a> {
    pub block: i64,
    pub ok: bool,
    pub flagged: &'a Option<String>,
    pub metrics: &'a BTreeMap<String, f64>,
    pub evidence: &'a crate::store::Evidence,
}

/// The export of a stored run's measured trials (warm-ups left out) and its answer as stored
/// (`kept`: read at its own decision).
pub fn export<'a>(
    meta: &'a RunMeta,
    arms: &'a [ArmRow],
    trials: &'a [TrialRow],
    kept: &'a super::Recalled,
) -> Export<'a> {
    let results = arms
        .iter()
        .map(|a| {
            let ts: Vec<&TrialRow> = trials
                .iter()
                .filter(|t| t.arm_idx == a.idx && t.block >= 0)
                .collect();
            let ok: Vec<&TrialRow> = ts
                .iter()
                .copied()
                .filter(|t| t.ok && t.metrics.contains_key("wall_s"))
                .collect();
            let times: Vec<f64> = ok.iter().map(|t| t.metrics["wall_s"]).collect();
            let s = summarize(&times);
            let secs = |ns: fn(&crate::store::Evidence) -> u64| {
                ok.iter().map(|t| ns(&t.evidence) as f64).sum::<f64>()
                    / 1e9
                    / times.len().max(1) as f64
            };
            ArmExport {
                command: format!("{} ({})", a.name, meta.command.join(" ")),
                mean: s.as_ref().map(|s| s.mean),
                stddev: s.as_ref().map(|s| s.sd),
                median: s.as_ref().map(|s| s.median),
                user: secs(|e| e.outcome.user_ns),
                system: secs(|e| e.outcome.sys_ns),
                min: s.as_ref().map(|s| s.min),
                max: s.as_ref().map(|s| s.max),
                exit_codes: ok.iter().map(|t| t.evidence.outcome.exit_code).collect(),
                times,
                hugelab: ArmTrials {
                    arm: &a.name,
                    spec: &a.spec,
                    trials: ts
                        .iter()
                        .map(|t| TrialExport {
                            block: t.block,
                            ok: t.ok,
                            flagged: &t.flagged,
                            metrics: &t.metrics,
                            evidence: &t.evidence,
                        })
                        .collect(),
                },
            }
        })
        .collect();
    Export {
        results,
        hugelab: ExportRun {
            schema: SCHEMA,
            run: meta,
            record: kept.record(),
            bench: kept.bench(),
        },
    }
}
