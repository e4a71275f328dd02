//! Which arm is adopted. A setting is adopted only where it gained everywhere it was measured:
//! under every condition of its run (`run --condition`: each condition's own analysis, never the
//! first one alone) and in every other run given to `advise` that measured the same system
//! settings. The best FASTER-by-δ arm with no outweighing cost and no such conflict is
//! [`Finding::Adopt`]; an arm that gained here but not there is [`Finding::Conditional`], with
//! the lines that speak against it in its `against` (a resolved cost first).

use super::{EvidenceLine, Finding, RunEvidence};
use crate::analyze::experiment::ExperimentAnalysis;
use crate::analyze::verdict::Better;
use crate::control::Knob;

/// The analyses a run's advice reads: each condition's, or the run's own when it had none.
pub fn analyses(report: &ExperimentAnalysis) -> Vec<(Option<&str>, &ExperimentAnalysis)> {
    if report.conditions.is_empty() {
        vec![(None, report)]
    } else {
        report
            .conditions
            .iter()
            .map(|c| (Some(c.name.as_str()), &c.analysis))
            .collect()
    }
}

/// The system settings an arm makes, sorted, so that two runs' arms compare by what they set.
fn settings_of(runs: &[RunEvidence], line: &EvidenceLine) -> Vec<(Knob, String)> {
    let mut v = runs
        .iter()
        .find(|r| r.run_id == line.run_id)
        .and_then(|r| r.arms.iter().find(|a| a.name == line.arm))
        .map(|a| a.system.clone())
        .unwrap_or_default();
    v.sort_by_key(|(k, _)| k.to_string());
    v
}

/// Whether `other` measured the same thing as `line`: the same arm of the same run (another
/// condition), or the same non-empty system settings in another run.
fn same_settings(runs: &[RunEvidence], line: &EvidenceLine, other: &EvidenceLine) -> bool {
    if other.run_id == line.run_id {
        return other.arm == line.arm && other.condition != line.condition;
    }
    let mine = settings_of(runs, line);
    !mine.is_empty() && mine == settings_of(runs, other)
}

/// Mark lines that gained here but not everywhere their settings were measured
/// [`Finding::Conditional`], then adopt the best remaining runner.
pub fn choose(runs: &[RunEvidence], lines: &mut [EvidenceLine]) {
    let runners: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i].finding == Finding::Runner)
        .collect();
    for i in runners {
        let against: Vec<String> = lines
            .iter()
            .filter(|o| same_settings(runs, &lines[i], o))
            .filter(|o| o.finding != Finding::Runner && o.finding != Finding::Adopt)
            .map(EvidenceLine::describe_cost_first)
            .collect();
        if !against.is_empty() {
            lines[i].finding = Finding::Conditional;
            lines[i].against = against;
        }
    }
    let gain = |l: &EvidenceLine| match l.better {
        Better::Lower => -l.percent.point,
        Better::Higher => l.percent.point,
    };
    if let Some(best) = (0..lines.len())
        .filter(|i| lines[*i].finding == Finding::Runner)
        .max_by(|a, b| gain(&lines[*a]).total_cmp(&gain(&lines[*b])))
    {
        lines[best].finding = Finding::Adopt;
    }
}
