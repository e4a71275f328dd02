//! `hugelab results list|show|export`, `hugelab import` (hyperfine JSON) and
//! `hugelab compare A B` (unpaired, e.g. the same benchmark on two machines).

use super::options::{Database, Decision, ExportFormat, Json, MetricChoice};
use super::stored::{compare_runs, open};
use super::{UsageError, print_json};

use crate::analyze::stats::summarize;
use crate::store::{ArmRow, Store, TrialRow};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub action: ResultsAction,
    /// Results database (SQLite; default $XDG_DATA_HOME/hugelab/results.db)
    #[arg(long, global = true, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// Every stored run
    List {
        #[command(flatten)]
        out: Json,
    },
    /// Re-analyse a stored run: the answer lines, then every table
    Show {
        /// The run's id (`hugelab results list`)
        run: i64,
        #[command(flatten)]
        decision: Decision,
        #[command(flatten)]
        out: Json,
    },
    /// Export a run: json (a superset of hyperfine's --export-json), csv (one row per trial) or md
    Export {
        /// The run's id (`hugelab results list`)
        run: i64,
        /// The format to write
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

pub(crate) use crate::store::analysis::reanalyse;

/// hyperfine-compatible export: `results[]` with command, mean, stddev, median, user, system,
/// min, max, times, exit_codes (seconds), plus hugelab's arm, spec, trials and evidence.
pub fn export_json(
    meta: &crate::store::RunMeta,
    arms: &[ArmRow],
    trials: &[TrialRow],
) -> serde_json::Value {
    let results: Vec<serde_json::Value> = arms
        .iter()
        .map(|a| {
            let ts: Vec<&TrialRow> = trials.iter().filter(|t| t.arm_idx == a.idx && t.block >= 0).collect();
            let times: Vec<f64> = ts.iter().filter(|t| t.ok).filter_map(|t| t.metrics.get("wall_s").copied()).collect();
            let s = summarize(&times);
            let secs = |k: &str| ts.iter().filter(|t| t.ok).filter_map(|t| t.evidence[k].as_f64()).sum::<f64>() / 1e9 / times.len().max(1) as f64;
            serde_json::json!({
                "command": format!("{} ({})", a.name, meta.command.join(" ")),
                "mean": s.as_ref().map(|s| s.mean),
                "stddev": s.as_ref().map(|s| s.sd),
                "median": s.as_ref().map(|s| s.median),
                "user": secs("user_ns"),
                "system": secs("sys_ns"),
                "min": s.as_ref().map(|s| s.min),
                "max": s.as_ref().map(|s| s.max),
                "times": times,
                "exit_codes": ts.iter().map(|t| t.evidence["exit_code"].clone()).collect::<Vec<_>>(),
                "hugelab": {
                    "arm": a.name, "spec": a.spec,
                    "trials": ts.iter().map(|t| serde_json::json!({"block": t.block, "ok": t.ok, "flagged": t.flagged, "metrics": t.metrics, "evidence": t.evidence})).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    serde_json::json!({"results": results, "hugelab": {"schema": "hugelab.export/1", "run": meta}})
}

pub fn run(a: ResultsArgs) -> anyhow::Result<i32> {
    let store = open(&a.db)?;
    match a.action {
        ResultsAction::List { out } => {
            let runs = store.runs()?;
            if out.json {
                print_json(
                    &runs
                        .iter()
                        .map(|(m, n)| serde_json::json!({"run": m, "trials": n}))
                        .collect::<Vec<_>>(),
                )?;
            } else {
                let mut t = crate::render::table(&[
                    "run", "created", "status", "trials", "label", "command",
                ]);
                for (m, n) in &runs {
                    t.add_row(vec![
                        m.id.to_string(),
                        m.created.clone(),
                        m.status.clone(),
                        n.to_string(),
                        m.label.clone().unwrap_or_default(),
                        m.command.join(" "),
                    ]);
                }
                println!("{}\n{}", crate::render::fit(&mut t), store.path.display());
            }
        }
        ResultsAction::Show { run, decision, out } => {
            let (meta, arms, trials) = store.load(run)?;
            let report = reanalyse(&meta, &arms, &trials, decision.effect, decision.confidence);
            if out.json {
                print_json(
                    &serde_json::json!({"schema": "hugelab.results-show/1", "run": meta, "report": report}),
                )?;
            } else {
                println!(
                    "run {} ({}, {}): {}",
                    meta.id,
                    meta.created,
                    meta.status,
                    meta.command.join(" ")
                );
                print!("{}", crate::render::run::render_stored(&report));
            }
        }
        ResultsAction::Export { run, format, out } => {
            let (meta, arms, trials) = store.load(run)?;
            let text = match format {
                ExportFormat::Json => {
                    serde_json::to_string_pretty(&export_json(&meta, &arms, &trials))?
                }
                ExportFormat::Csv => crate::render::csv::trials(run, &arms, &trials),
                ExportFormat::Md => crate::render::markdown::runs(&[super::stored::view(
                    meta, &arms, &trials, 0.01, 0.99,
                )]),
            };
            match out {
                Some(p) => std::fs::write(&p, text)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
                None => println!("{text}"),
            }
        }
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A hyperfine --export-json file, or a hugelab JSON export (`results export`; its metrics,
    /// block pairing, failures and flags are kept)
    pub file: PathBuf,
    /// A label for the imported run
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub store: Database,
}

/// A value read from an imported file: finite, not negative, and (for times) above zero.
fn checked(v: &serde_json::Value, what: &str, time: bool) -> Result<f64, UsageError> {
    let x = v.as_f64().ok_or_else(|| {
        UsageError(format!(
            "{what} = {v}: not a number; fix or remove it in the file"
        ))
    })?;
    if !x.is_finite() || x < 0.0 || (time && x == 0.0) || x > 1e12 {
        return Err(UsageError(format!(
            "{what} = {v}: {}; fix or remove it in the file",
            if time {
                "a time must be a finite number of seconds above 0"
            } else {
                "a metric must be a finite number, not negative"
            }
        )));
    }
    Ok(x)
}

/// The arms, trials and plan of an import, all checked before anything is stored. A hugelab
/// export keeps its trials as they were: every metric, the block pairing, failures and flags.
/// hyperfine JSON gives one arm per `results[]` entry and one unpaired trial per `times` item.
fn import_rows(
    v: &serde_json::Value,
    file: &std::path::Path,
) -> Result<(Vec<ArmRow>, Vec<TrialRow>, serde_json::Value), UsageError> {
    let results = v["results"].as_array().ok_or_else(|| {
        UsageError(format!(
            "{}: no `results` array (expected hyperfine --export-json output or a hugelab export)",
            file.display()
        ))
    })?;
    if results.is_empty() {
        return Err(UsageError(format!(
            "{}: `results` is empty",
            file.display()
        )));
    }
    let hugelab = v["hugelab"]["schema"] == "hugelab.export/1"
        && results.iter().all(|r| r["hugelab"]["trials"].is_array());
    let mut arms = Vec::new();
    let mut trials = Vec::new();
    for (i, r) in results.iter().enumerate() {
        arms.push(ArmRow {
            idx: i as i64,
            name: r["hugelab"]["arm"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("cmd{}", i + 1)),
            spec: r["hugelab"]["spec"]
                .as_str()
                .or(r["command"].as_str())
                .unwrap_or("")
                .to_string(),
        });
        if hugelab {
            for (k, t) in r["hugelab"]["trials"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let mut metrics = BTreeMap::new();
                for (name, x) in t["metrics"].as_object().into_iter().flatten() {
                    let what = format!("results[{i}].hugelab.trials[{k}].metrics.{name}");
                    metrics.insert(name.clone(), checked(x, &what, name == "wall_s")?);
                }
                trials.push(TrialRow {
                    block: t["block"].as_i64().unwrap_or(k as i64),
                    arm_idx: i as i64,
                    seq: 0,
                    ok: t["ok"].as_bool().unwrap_or(false),
                    flagged: t["flagged"].as_str().map(String::from),
                    metrics,
                    evidence: t["evidence"].clone(),
                });
            }
            continue;
        }
        let times = r["times"]
            .as_array()
            .ok_or_else(|| UsageError(format!("results[{i}] has no `times` array")))?;
        let codes = r["exit_codes"].as_array();
        for (k, t) in times.iter().enumerate() {
            let t = checked(t, &format!("results[{i}].times[{k}]"), true)?;
            let code = codes
                .and_then(|c| c.get(k))
                .and_then(|c| c.as_i64())
                .unwrap_or(0);
            trials.push(TrialRow {
                block: k as i64,
                arm_idx: i as i64,
                seq: 0,
                ok: code == 0,
                flagged: None,
                metrics: BTreeMap::from([("wall_s".to_string(), t)]),
                evidence: serde_json::json!({"exit_code": code, "imported": true}),
            });
        }
    }
    // Trials in the order they ran (by block, then arm), numbered.
    trials.sort_by_key(|t| (t.block, t.arm_idx));
    for (n, t) in trials.iter_mut().enumerate() {
        t.seq = n as i64;
    }
    let mut plan = if hugelab {
        v["hugelab"]["run"]["plan"].clone()
    } else {
        serde_json::json!({"paired": false, "baseline": 0, "metrics": [{"name": "wall_s", "better": "lower"}]})
    };
    if !plan.is_object() {
        plan = serde_json::json!({});
    }
    plan["imported_from"] = file.display().to_string().into();
    Ok((arms, trials, plan))
}

/// Import hyperfine JSON or a hugelab export. hyperfine runs commands one after another, so
/// its trials are not paired: compare them with `hugelab compare` (unpaired), not as blocks.
/// Everything is checked first and stored in one transaction: a bad file stores nothing.
pub fn import(a: ImportArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.file.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("{} is not JSON: {e}", a.file.display())))?;
    let (arms, trials, plan) = import_rows(&v, &a.file)
        .map_err(|e| UsageError(format!("{}: {}", a.file.display(), e.0)))?;
    let command: Vec<String> = arms.iter().map(|a| a.spec.clone()).collect();
    let mut store = Store::open(
        &a.store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path),
    )?;
    let id = store.import_run(a.label.as_deref(), &command, &plan, &arms, &trials)?;
    println!(
        "imported {} arms, {} trials from {} as run {id}",
        arms.len(),
        trials.len(),
        a.file.display()
    );
    Ok(0)
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A stored run id or an exported JSON file
    pub a: String,
    /// A stored run id or an exported JSON file
    pub b: String,
    #[command(flatten)]
    pub metric: MetricChoice,
    #[command(flatten)]
    pub decision: Decision,
    #[command(flatten)]
    pub store: Database,
    #[command(flatten)]
    pub out: Json,
}

pub fn compare(a: CompareArgs) -> anyhow::Result<i32> {
    let c = compare_runs(
        &a.a,
        &a.b,
        &a.metric.metric,
        a.metric.higher,
        a.decision.effect,
        a.decision.confidence,
        &a.store.db,
    )?;
    if a.out.json {
        print_json(&c)?;
    } else {
        for l in crate::render::summary::compare_answer(&c) {
            println!("{l}");
        }
        println!();
        print!("{}", crate::render::run::compare_grid(&c).terminal());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn an_import_is_all_checked_or_refused_naming_the_value(
            times in proptest::collection::vec(
                prop_oneof![
                    (-1e3f64..1e3).prop_map(|x| serde_json::json!(x)),
                    Just(serde_json::json!(0)),
                    Just(serde_json::json!(1e308)),
                    Just(serde_json::json!("fast")),
                    Just(serde_json::Value::Null),
                ],
                0..8,
            )
        ) {
            let v = serde_json::json!({"results": [{"command": "x", "times": times}]});
            match import_rows(&v, std::path::Path::new("f.json")) {
                Ok((_, trials, _)) => {
                    prop_assert_eq!(trials.len(), times.len());
                    for t in &trials {
                        let w = t.metrics["wall_s"];
                        prop_assert!(w.is_finite() && w > 0.0);
                    }
                }
                Err(e) => prop_assert!(e.0.contains("results[0].times["), "{}", e.0),
            }
        }
    }
}
