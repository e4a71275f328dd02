//! The progress line's words during a run: which block (of how many, or until when) and the
//! live, unadjusted estimate of each arm, for orientation only.

use crate::analyze::experiment;
use crate::analyze::stored::trial_data;
use crate::model::analysis::TrialData;
use crate::model::run::Plan;
use crate::store::TrialRow;

/// The live estimate the progress line shows: each arm against the baseline, unadjusted.
pub(super) fn estimate_line(names: &[String], plan: &Plan, trials: &[TrialRow]) -> String {
    let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
    let mut parts = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if i == plan.baseline {
            continue;
        }
        let d = experiment::log_ratios(&data, i, plan.baseline, &plan.primary().name);
        if let Some(e) = crate::stats::hodges_lehmann(&d, plan.confidence) {
            let p = crate::analyze::verdict::to_percent(e);
            parts.push(match (p.lo, p.hi) {
                (Some(lo), Some(hi)) => format!(
                    "{n} {:+.1}% {}",
                    p.point,
                    crate::units::fmt_interval(lo, hi, 1)
                ),
                _ => format!("{n} {:+.1}%", p.point),
            });
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(
            " · {}: {} (unadjusted, for orientation)",
            plan.primary().name,
            parts.join(", ")
        )
    }
}

/// The estimate line with the warm design's forecast of the half-width at the run's end.
pub(super) fn with_forecast(line: String, forecast: Option<&str>) -> String {
    match forecast {
        Some(f) => format!("{line} · {f}"),
        None => line,
    }
}

/// `block 3/40`, or `block 3 (until 2m00s)` when the run stops at a time rather than a count.
pub(super) fn block_label(plan: &Plan, block: usize) -> String {
    match plan.max_time {
        Some(t) if plan.blocks >= crate::experiment::plan::UNBOUNDED_BLOCKS => format!(
            "block {} (until {})",
            block + 1,
            crate::units::fmt_elapsed(t.as_secs_f64())
        ),
        _ if plan.blocks >= crate::experiment::plan::UNBOUNDED_BLOCKS => {
            format!("block {} (until the verdicts settle)", block + 1)
        }
        _ => format!("block {}/{}", block % plan.blocks + 1, plan.blocks),
    }
}

/// Blocks run so far, in words: with replicas every block of the schedule is a round of
/// `replicas` stored blocks at once, so the rounds are named with the blocks they stored.
pub(super) fn blocks_done(done: usize, replicas: usize) -> String {
    match replicas {
        0 | 1 => format!("{done} blocks"),
        r => format!("{done} rounds ({} blocks, {r} replicas at once)", done * r),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_of_replicas_name_the_blocks_they_stored() {
        assert_eq!(super::blocks_done(12, 1), "12 blocks");
        assert_eq!(
            super::blocks_done(12, 8),
            "12 rounds (96 blocks, 8 replicas at once)"
        );
    }
}
