//! The answer's lines for `run --during`: per arm, the trials where the operator's event did
//! not run (the load ended before its moment) or failed, with the failure's own words — so a
//! BGSAVE that never happened is never read as measured.

use super::words::wrap_hanging;
use crate::model::analysis::ExperimentAnalysis;

/// One line per arm whose event did not run or failed in some trial; none when it ran in all.
pub fn lines(r: &ExperimentAnalysis) -> Vec<String> {
    let mut out = Vec::new();
    for e in &r.evidence {
        let Some(t) = &e.events else { continue };
        if t.not_run > 0 {
            let ended = t.load_wall_s.map_or(String::new(), |w| {
                format!(
                    ": the load ended at {} (median), before the event's moment (--during-at)",
                    ms(w)
                )
            });
            out.extend(wrap_hanging(
                &format!(
                    "--during did not run in {} of {} trials of {}{ended}",
                    t.not_run, t.trials, e.arm
                ),
                2,
            ));
        }
        if t.failed > 0 {
            let why = t
                .failure
                .as_deref()
                .filter(|w| !w.is_empty())
                .map_or(String::new(), |w| format!(": {w}"));
            out.extend(wrap_hanging(
                &format!(
                    "--during failed in {} of {} trials of {}{why}",
                    t.failed, t.trials, e.arm
                ),
                2,
            ));
        }
    }
    out
}

fn ms(seconds: f64) -> String {
    crate::units::Unit::Time(1.0)
        .fmt_for(seconds, 0.0)
        .show(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::analysis::{ArmEvidence, EventTally};

    #[test]
    fn events_that_did_not_run_or_failed_are_counted_per_arm() {
        let r = ExperimentAnalysis {
            baseline: "a".into(),
            effect: 0.01,
            confidence: 0.99,
            design: Default::default(),
            metrics: vec![],
            evidence: vec![
                ArmEvidence {
                    arm: "a".into(),
                    events: Some(EventTally {
                        trials: 8,
                        not_run: 8,
                        load_wall_s: Some(0.07),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ArmEvidence {
                    arm: "b".into(),
                    events: Some(EventTally {
                        trials: 4,
                        failed: 4,
                        failure: Some("Could not connect to Redis at 127.0.0.1:1".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ArmEvidence {
                    arm: "c".into(),
                    events: Some(EventTally {
                        trials: 4,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            conditions: vec![],
            warmup: None,
            stalls: Vec::new(),
            tails: Vec::new(),
            warning_kinds: Vec::new(),
            unchanged_costs: Vec::new(),
        };
        let l = lines(&r).join("\n");
        assert_eq!(
            l,
            "--during did not run in 8 of 8 trials of a: the load ended at 70.0 ms (median), before the event's\n  moment (--during-at)\n--during failed in 4 of 4 trials of b: Could not connect to Redis at 127.0.0.1:1"
        );
    }
}
