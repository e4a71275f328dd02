//! Stored runs as the advice's evidence.

use super::Request;
use crate::analyze::advice::{RunEvidence, Target};
use crate::backing::arm::{Arm, parse_arm};
use crate::error::UsageError;
use crate::options::Redecide;
use crate::store::Store;

/// The evidence of the runs `req` names (or of every stored run that fits its target), and a
/// line for each run read otherwise than at its own decision as stored.
pub(super) fn load(
    store: &Store,
    req: &Request,
) -> anyhow::Result<(Vec<RunEvidence>, Vec<String>)> {
    let named = !req.runs.is_empty();
    let ids: Vec<i64> = if named {
        req.runs.to_vec()
    } else {
        store.runs()?.iter().map(|(m, _)| m.id).collect()
    };
    let (mut runs, mut read_as) = (Vec::new(), Vec::new());
    for id in ids {
        match of(store, id, req.decision)? {
            Some((r, how)) if named || fits(req.target, &r) => {
                read_as.extend(how.map(|h| format!("run {id}: {h}")));
                runs.push(r)
            }
            None if named => {
                return Err(UsageError(format!(
                    "run {id} compares no arms (a bench, an import or a single arm): `hugelab results list` shows the runs"
                ))
                .into());
            }
            _ => {}
        }
    }
    Ok((runs, read_as))
}

/// A stored run as evidence (its planned arms, with the pools the planner sized, the analysis
/// at the asked level, and its stall contrasts), and how it was read when not at its own
/// decision as stored. `None`: the run compares no arms.
fn of(
    store: &Store,
    id: i64,
    d: &Redecide,
) -> anyhow::Result<Option<(RunEvidence, Option<String>)>> {
    let (meta, arm_rows, trials) = store.load(id)?;
    if meta.status == "imported" || meta.plan.is_bench() || arm_rows.len() < 2 {
        return Ok(None);
    }
    let given = crate::stored_runs::Trials::Given(&trials);
    let recalled = crate::stored_runs::recall(store, &meta, &arm_rows, &given, d)?;
    let note = recalled.notes().first().cloned();
    let crate::stored_runs::Answer::Run(record) = recalled.answer else {
        return Ok(None);
    };
    let arms: Vec<Arm> = meta.plan.arms().map_or_else(
        || {
            arm_rows
                .iter()
                .filter_map(|a| parse_arm(&format!("{}={}", a.name, a.spec)).ok())
                .collect()
        },
        <[Arm]>::to_vec,
    );
    let evidence = RunEvidence {
        run_id: id,
        shell: meta.command.len() == 1,
        command: meta.command.clone(),
        arms,
        baseline: meta.plan.baseline(),
        preset: meta.plan.preset().map(String::from),
        stalls: record.trace_stalls,
        report: record.report,
    };
    Ok(Some((evidence, note)))
}

/// Whether a run measures what the target is about (for the default choice of runs).
fn fits(target: Target, r: &RunEvidence) -> bool {
    match target {
        Target::Machine | Target::Kubernetes => true,
        Target::Postgres => r.preset.as_deref() == Some("postgres"),
        Target::Redis => r.preset.as_deref() == Some("redis"),
        Target::Jvm => r.arms.iter().any(|a| a.process.jvm.is_some()),
        Target::Qemu => r.arms.iter().any(|a| a.process.qemu.is_some()),
    }
}
