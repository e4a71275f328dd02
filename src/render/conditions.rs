//! The answer's lines for `run --condition`: under each condition, each arm's contrast on the
//! primary metric with its costs and, past the first condition, how much the effect changed
//! against it (the interaction); then the state the trials started in and the kernel's compaction and reclaim
//! per trial of each arm.

use super::words::{contrast_words, percent_interval, wrap_hanging};
use crate::model::analysis::ConditionAnalysis;
use crate::model::analysis::ExperimentAnalysis;
use crate::model::analysis::primary_index;
use crate::model::analysis::{ArmState, StartState};
use crate::model::costs::SHOWN_COUNTERS;
use crate::units::Bytes;

/// Every condition's lines (none for a run without `--condition`).
pub fn lines(r: &ExperimentAnalysis) -> Vec<String> {
    let first = r.conditions.first().map(|c| c.name.as_str());
    let mut out = Vec::new();
    for c in &r.conditions {
        // The first condition's contrasts are the answer's own lines, above.
        let against = first.filter(|f| *f != c.name);
        out.extend(condition_lines(c, against, against.is_some()));
    }
    out
}

fn condition_lines(c: &ConditionAnalysis, against: Option<&str>, several: bool) -> Vec<String> {
    let a = &c.analysis;
    let mut out = wrap_hanging(&format!("under {}: {}", c.name, c.description), 4);
    let primary = a
        .metrics
        .get(primary_index(a.metrics.iter().map(|m| &m.metric)));
    if let Some(m) = primary.filter(|_| several) {
        for (arm, contrast) in &m.contrasts {
            let words = match contrast {
                Some(x) => contrast_words(a, x, false),
                None => "too few complete blocks for an interval".into(),
            };
            let mut line = format!("  {arm} vs {}  {}  {words}", a.baseline, m.metric.name);
            if let Some(name) = against {
                let i = c
                    .interaction
                    .iter()
                    .find(|(x, _)| x == arm)
                    .and_then(|(_, i)| i.as_ref());
                line.push_str(&match i {
                    Some(i) => {
                        let changed = i
                            .percent
                            .lo
                            .zip(i.percent.hi)
                            .is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0);
                        let at = if (i.level - a.confidence).abs() > 1e-9 {
                            format!(" @{}", crate::model::verdict::fmt_level(i.level))
                        } else {
                            String::new()
                        };
                        format!(
                            "; the effect against {name}'s: {}{at} {}",
                            percent_interval(&i.percent),
                            if changed {
                                "CHANGED"
                            } else {
                                "no change resolved"
                            }
                        )
                    }
                    None => format!("; against {name}: too few blocks"),
                });
            }
            out.extend(wrap_hanging(&line, 4));
            // What the arm cost under this condition, as the first condition's answer says it.
            if let Some(costs) = super::costs::line(a, arm) {
                out.extend(wrap_hanging(&format!("    {costs}"), 6));
            }
        }
    }
    if let Some(s) = c.at_start.as_ref().map(state_words) {
        out.extend(wrap_hanging(&format!("  at trial start: {s}"), 4));
    }
    let mut seen: Vec<&str> = SHOWN_COUNTERS
        .iter()
        .map(|(k, _)| *k)
        .chain(
            c.arms
                .iter()
                .flat_map(|a| a.per_trial.keys().map(String::as_str)),
        )
        .filter(|k| {
            c.arms
                .iter()
                .any(|a| a.per_trial.get(*k).is_some_and(|v| *v > 0.0))
        })
        .collect();
    let mut i = 0;
    while i < seen.len() {
        if seen[..i].contains(&seen[i]) {
            seen.remove(i);
        } else {
            i += 1;
        }
    }
    let kernel: Vec<String> = c
        .arms
        .iter()
        .filter_map(|a| kernel_words(a, &seen))
        .collect();
    if c.arms.iter().any(|a| a.trials > 0) {
        let read = c.arms.iter().any(|a| a.counters_read > 0);
        let line = if !read {
            "  per trial: /proc/vmstat could not be read, so direct compaction, kcompactd and direct reclaim were not counted"
                .to_string()
        } else if seen.is_empty() {
            "  per trial: no direct compaction, kcompactd scanning or direct reclaim in any arm"
                .to_string()
        } else {
            format!("  per trial: {}", kernel.join("; "))
        };
        out.extend(wrap_hanging(&line, 4));
    }
    out
}

/// The state the trials started in, over every arm's trials (the same for each by design).
fn state_words(at: &StartState) -> String {
    let mut s = format!("{:.0} free 2 MiB blocks", at.free_2m_blocks);
    if let Some(u) = at.unusable_2m {
        s.push_str(&format!(
            ", {:.0}% of free memory unusable for them",
            u * 100.0
        ));
    }
    if let Some(m) = at.mem_available {
        s.push_str(&format!(", MemAvailable {}", Bytes(m as u64)));
    }
    s + " (means)"
}

/// One arm's kernel work per trial: of the counters and traced stalls any arm saw (`seen`).
fn kernel_words(a: &ArmState, seen: &[&str]) -> Option<String> {
    if a.trials == 0 {
        return None;
    }
    let words = |k: &str| -> String {
        let v = a.per_trial.get(k).copied().unwrap_or(0.0);
        match SHOWN_COUNTERS.iter().find(|(c, _)| *c == k) {
            Some((_, w)) => format!("{} {w}", count(v)),
            None => format!("{v:.1} ms {} (traced)", k.trim_end_matches(" ms")),
        }
    };
    let parts: Vec<String> = seen.iter().map(|k| words(k)).collect();
    Some(format!("{} {}", a.arm, parts.join(", ")))
}

/// A mean count: whole numbers past 10, one decimal below.
fn count(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        super::words::thousands(v.round() as usize)
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(counters_read: usize, stalls: f64) -> ConditionAnalysis {
        ConditionAnalysis {
            name: "fragmented".into(),
            description: "free memory in 4 KiB pieces".into(),
            analysis: ExperimentAnalysis {
                baseline: "never".into(),
                effect: 0.01,
                confidence: 0.99,
                design: Default::default(),
                metrics: Vec::new(),
                evidence: Vec::new(),
                conditions: Vec::new(),
                warmup: None,
                stalls: Vec::new(),
                tails: Vec::new(),
                warning_kinds: Vec::new(),
                unchanged_costs: Vec::new(),
            },
            interaction: Vec::new(),
            at_start: None,
            arms: vec![ArmState {
                arm: "madvise".into(),
                trials: 4,
                free_2m_blocks: None,
                unusable_2m: None,
                mem_available: None,
                per_trial: [("compact_stall".to_string(), stalls)].into(),
                counters_read,
            }],
        }
    }

    /// Counters that could not be read are not "no direct compaction".
    #[test]
    fn unread_counters_are_said_to_be_unread_not_zero() {
        let said = |c: &ConditionAnalysis| condition_lines(c, None, false).join(" ");
        assert!(said(&condition(4, 0.0)).contains("no direct compaction"));
        assert!(said(&condition(4, 3.0)).contains("direct compaction stalls"));
        let unread = said(&condition(0, 0.0));
        assert!(
            unread.contains("/proc/vmstat could not be read"),
            "{unread}"
        );
        assert!(!unread.contains("no direct compaction"), "{unread}");
    }
}
