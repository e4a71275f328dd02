//! An import read and checked — the one reader of the files `import`, `compare` and `report
//! --compare` take: hyperfine's `--export-json` output (one unpaired trial per `times` item, one
//! arm per `results[]` entry) or a hugelab export (`results export`: every metric, the block
//! pairing, failures and flags kept, with the run's record, its host and its time). Every value
//! is checked before anything is stored, and a bad one is named by its path in the file.

use super::{ArmRow, Evidence, TrialRow};
use crate::model::analysis::MetricDef;
use crate::model::stored::{PlanHead, StoredRunPlan};
use crate::workload::child::TrialOutcome;
use std::collections::BTreeMap;

/// Why an import was refused: the value, by its path in the file, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(pub String);

/// What an import stores: its arms, its trials (in the order they ran, numbered), its plan, where
/// and when it ran (as far as the file says), and — from a hugelab export — the answer its run
/// kept.
#[derive(Debug, Clone)]
pub struct Import {
    pub arms: Vec<ArmRow>,
    pub trials: Vec<TrialRow>,
    pub plan: StoredRunPlan,
    pub source: Source,
    /// A hugelab export's record of its run (read back whole).
    pub record: Option<crate::model::record::RunRecord>,
    /// A hugelab export of a bench: its whole result.
    pub bench: Option<crate::model::bench::BenchResult>,
}

/// Where and when the imported results were measured, as the file says (hyperfine's says
/// neither).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Source {
    pub created: Option<String>,
    pub host: Option<String>,
    pub kernel: Option<String>,
    /// The command as its run stored it.
    pub command: Option<Vec<String>>,
    pub label: Option<String>,
}

/// A value read from an imported file: finite, not negative, and (for times) above zero.
fn checked(v: &serde_json::Value, what: &str, time: bool) -> Result<f64, ImportError> {
    let x = v.as_f64().ok_or_else(|| {
        ImportError(format!(
            "{what} = {v}: not a number; fix or remove it in the file"
        ))
    })?;
    if !x.is_finite() || x < 0.0 || (time && x == 0.0) || x > 1e12 {
        return Err(ImportError(format!(
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

/// The arms, trials and plan of an import from the file's text, all checked before anything is
/// stored. A hugelab export keeps its trials as they were: every metric, the block pairing,
/// failures and flags. hyperfine JSON gives one arm per `results[]` entry and one unpaired
/// trial per `times` item.
pub fn read(text: &str, file: &std::path::Path) -> Result<Import, ImportError> {
    let named = |why: String| ImportError(format!("{}: {why}", file.display()));
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| named(format!("not JSON: {e}")))?;
    read_value(&v, file).map_err(|e| named(e.0))
}

fn read_value(v: &serde_json::Value, file: &std::path::Path) -> Result<Import, ImportError> {
    let results = v["results"].as_array().ok_or_else(|| {
        ImportError(
            "no `results` array (expected hyperfine --export-json output or a hugelab export)"
                .into(),
        )
    })?;
    if results.is_empty() {
        return Err(ImportError("`results` is empty".into()));
    }
    let hugelab = v["hugelab"]["schema"] == "hugelab.export/1"
        && results.iter().all(|r| r["hugelab"]["trials"].is_array());
    let mut arms = Vec::new();
    let mut trials = Vec::new();
    for (i, r) in results.iter().enumerate() {
        arms.push(ArmRow {
            idx: i as i64,
            // The name the file gives: a hugelab arm, else hyperfine's `command` (its `-n`
            // name when one was given), unless another arm has it already.
            name: r["hugelab"]["arm"]
                .as_str()
                .or(r["command"].as_str())
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .filter(|n| {
                    !results[..i].iter().any(|o| {
                        o["hugelab"]["arm"]
                            .as_str()
                            .or(o["command"].as_str())
                            .map(str::trim)
                            == Some(n)
                    })
                })
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
                    evidence: Evidence::decode(&t["evidence"].to_string()),
                });
            }
            continue;
        }
        let times = r["times"]
            .as_array()
            .ok_or_else(|| ImportError(format!("results[{i}] has no `times` array")))?;
        if times.is_empty() {
            return Err(ImportError(format!(
                "results[{i}].times is empty: an arm with no trials; rerun hyperfine for it or remove results[{i}] from the file"
            )));
        }
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
                evidence: Evidence {
                    outcome: TrialOutcome {
                        exit_code: Some(code as i32),
                        ..Default::default()
                    },
                    imported: true,
                    ..Default::default()
                },
            });
        }
    }
    // Trials in the order they ran (by block, then arm), numbered.
    trials.sort_by_key(|t| (t.block, t.arm_idx));
    for (n, t) in trials.iter_mut().enumerate() {
        t.seq = n as i64;
    }
    let mut imp = Import {
        arms,
        trials,
        plan: plan_of(v, hugelab).imported_from(file),
        source: Source::default(),
        record: None,
        bench: None,
    };
    if hugelab {
        kept_of(v, &mut imp);
    }
    Ok(imp)
}

/// What a hugelab export kept beside its trials: where, when and what ran, and its answer (a
/// run's record or a bench's result) — each only in a shape this version reads.
fn kept_of(v: &serde_json::Value, imp: &mut Import) {
    let run = &v["hugelab"]["run"];
    let text = |k: &str| run[k].as_str().map(String::from);
    imp.source = Source {
        created: text("created"),
        host: text("host"),
        kernel: text("kernel"),
        command: serde_json::from_value(run["command"].clone()).ok(),
        label: text("label"),
    };
    imp.record = serde_json::from_value(v["hugelab"]["record"].clone())
        .ok()
        .filter(|r: &crate::model::record::RunRecord| {
            r.schema == crate::model::record::RECORD_SCHEMA
        });
    imp.bench = serde_json::from_value(v["hugelab"]["bench"].clone())
        .ok()
        .filter(|b: &crate::model::bench::BenchResult| b.schema == crate::model::bench::SCHEMA);
}

/// hyperfine's runs are unpaired, of wall time; a hugelab export keeps the plan it ran.
fn plan_of(v: &serde_json::Value, hugelab: bool) -> StoredRunPlan {
    if hugelab {
        return serde_json::from_value(v["hugelab"]["run"]["plan"].clone())
            .unwrap_or_else(|_| StoredRunPlan::Partial(Box::default()));
    }
    StoredRunPlan::Partial(Box::new(PlanHead {
        paired: Some(false),
        metrics: vec![MetricDef::contrasted(
            "wall_s",
            crate::model::verdict::Better::Lower,
        )],
        ..PlanHead::default()
    }))
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
            match read_value(&v, std::path::Path::new("f.json")) {
                Ok(Import { trials, .. }) => {
                    prop_assert_eq!(trials.len(), times.len());
                    for t in &trials {
                        let w = t.metrics["wall_s"];
                        prop_assert!(w.is_finite() && w > 0.0);
                    }
                }
                Err(e) if times.is_empty() => {
                    prop_assert!(e.0.contains("results[0].times is empty"), "{}", e.0)
                }
                Err(e) => prop_assert!(e.0.contains("results[0].times["), "{}", e.0),
            }
        }
    }

    #[test]
    fn an_arm_with_no_times_refuses_the_whole_file_and_arms_keep_their_names() {
        let f = std::path::Path::new("h.json");
        let v = serde_json::json!({"results": [
            {"command": "a", "times": [0.1, 0.2]},
            {"command": "b", "times": []},
        ]});
        let e = read_value(&v, f).unwrap_err();
        assert!(e.0.contains("results[1].times is empty"), "{}", e.0);
        let v = serde_json::json!({"results": [
            {"command": "a", "times": [0.1]},
            {"command": "sleep 0.2", "times": [0.2]},
            {"command": "a", "times": [0.3]},
            {"times": [0.4]},
        ]});
        let names: Vec<String> = read(&v.to_string(), f)
            .unwrap()
            .arms
            .into_iter()
            .map(|a| a.name)
            .collect();
        assert_eq!(names, ["a", "sleep 0.2", "cmd3", "cmd4"]);
    }
}
