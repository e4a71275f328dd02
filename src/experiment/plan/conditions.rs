//! The plan's `--condition`s and `--during` event, checked before anything runs.

use super::RunArgs;
use crate::backing::arm::Arm;
use crate::backing::condition::Condition;
use crate::error::UsageError;
use crate::model::run::ServerPlan;

/// `--condition`s, checked: known, distinct, root where one holds a system setting, and more
/// than one only with a fixed number of blocks (they run one after another).
pub(super) fn parse_conditions(
    a: &RunArgs,
    privileged: bool,
) -> Result<Vec<Condition>, UsageError> {
    let mut out: Vec<Condition> = Vec::new();
    for s in &a.conditions {
        let c: Condition = s.parse().map_err(UsageError)?;
        if out.iter().any(|x| x.name() == c.name()) {
            return Err(UsageError(format!(
                "--condition {s}: given twice; give each condition once"
            )));
        }
        if c.needs_root() && !privileged {
            return Err(UsageError(format!(
                "--condition {s} holds vm.compaction_proactiveness, which needs root"
            )));
        }
        let undone = match c {
            Condition::Fragmented { .. } if a.compact => Some("--compact"),
            Condition::Cache { .. } if a.drop_caches => Some("--drop-caches"),
            _ => None,
        };
        if let Some(flag) = undone {
            return Err(UsageError(format!(
                "--condition {s} with {flag}: {flag} before every trial would undo the condition; give one of them"
            )));
        }
        out.push(c);
    }
    if out.len() > 1 && (a.sequential || a.looks.is_some() || a.calibrate.is_some()) {
        return Err(UsageError(
            "several --condition run one after another, each for the blocks given: they take a fixed --blocks, not --sequential, --looks or --calibrate".into(),
        ));
    }
    Ok(out)
}

/// `--during`: for a server only; a share of the burst needs the warm design's timed bursts.
pub(super) fn during(
    a: &RunArgs,
    server: Option<&ServerPlan>,
    load: &[String],
) -> Result<Option<crate::model::run::During>, UsageError> {
    use crate::model::run::{During, DuringAt};
    let Some(command) = &a.during else {
        return Ok(None);
    };
    let Some(sp) = server else {
        return Err(UsageError(
            "--during runs an event against a server: give --server (or a server --preset)".into(),
        ));
    };
    let at = match a.during_at.strip_suffix('%') {
        Some(p) => match p.parse::<f64>() {
            Ok(p) if (0.0..100.0).contains(&p) => DuringAt::Share(p / 100.0),
            _ => {
                return Err(UsageError(format!(
                    "--during-at {}: a share of the burst is 0% to 99%, e.g. 20%",
                    a.during_at
                )));
            }
        },
        None => DuringAt::After(crate::units::parse_positive_duration(&a.during_at).map_err(
            |e| {
                UsageError(format!(
                    "--during-at {}: {e}; give 20% or 500ms",
                    a.during_at
                ))
            },
        )?),
    };
    let timed = sp.warm.is_some() && crate::collect::load::fixed_duration(load);
    if matches!(at, DuringAt::Share(_)) && !timed {
        return Err(UsageError(format!(
            "--during-at {}: a share of the burst needs the warm design's timed bursts ({{burst}} in the load, or pgbench -T); for this load give a time after its start, e.g. --during-at 500ms",
            a.during_at
        )));
    }
    Ok(Some(During {
        command: command.clone(),
        at,
        fork_report: crate::backing::services::fork_report(sp.preset.as_deref()).map(String::from),
    }))
}

/// A `pressure=SIZE` condition needs SIZE to be below what is available now.
pub(super) fn check_conditions_fit(
    conditions: &[Condition],
    available: u64,
) -> Result<(), UsageError> {
    for c in conditions {
        if let Condition::Pressure { headroom } = c
            && *headroom + (64 << 20) >= available
        {
            return Err(UsageError(format!(
                "--condition {}: MemAvailable is {} now, so there is no pressure to make; give a headroom below it",
                c.name(),
                crate::units::Bytes(available)
            )));
        }
    }
    Ok(())
}

/// Under a condition, an arm whose THP setting is `always` while defrag is `madvise` never
/// compacts directly for memory without MADV_HUGEPAGE: say so, since no stall is then a
/// consequence of the configuration.
pub(super) fn no_direct_compaction(arms: &[Arm], defrag_now: Option<&str>) -> Vec<String> {
    use crate::control::knob::Knob;
    arms.iter()
        .filter(|x| x.system.iter().any(|(k, v)| *k == Knob::ThpEnabled && v == "always"))
        .filter_map(|x| {
            let defrag = x
                .system
                .iter()
                .find(|(k, _)| *k == Knob::ThpDefrag)
                .map(|(_, v)| v.as_str())
                .or(defrag_now)?;
            (defrag == "madvise").then(|| format!(
                "arm {}: THP always with defrag madvise never compacts directly for memory without MADV_HUGEPAGE (such faults fall back to 4 KiB pages, khugepaged collapses later); a host with defrag=always would stall there",
                x.name
            ))
        })
        .collect()
}
