//! `hugelab advise`: from stored evidence to the settings that put it into effect. Pure: the
//! command reads the runs and the machine; this module decides, and every decision carries the
//! contrast it rests on.
//!
//! By construction a setting can only come from an arm whose contrast on the primary metric
//! was FASTER by at least δ and whose trials were never FLAGGED ([`Finding::Adopt`]); any other
//! evidence gives "no change" with what was reached. Each target (`machine`, `postgres`,
//! `redis`, `jvm`, `qemu`, `kubernetes`) is one file that turns the chosen arm into settings.

pub mod adopt;
pub mod jvm;
pub mod kubernetes;
pub mod machine;
pub mod postgres;
pub mod qemu;
pub mod redis;
pub mod weigh;

use crate::analyze::experiment::ExperimentAnalysis;
use crate::analyze::verdict::{Better, Verdict};
use crate::backing::arm::Arm;
use crate::control::Knob;
pub use crate::model::advice::{
    Advice, EvidenceLine, Finding, RunEvidence, SCHEMA, ServiceLine, Setting, Target,
};

/// Per stored run, every non-baseline arm's contrast on the primary metric with its finding;
/// the best FASTER unflagged arm across the runs is [`Finding::Adopt`].
pub fn findings(runs: &[RunEvidence]) -> Vec<EvidenceLine> {
    let mut lines = Vec::new();
    for run in runs {
        for (condition, report) in adopt::analyses(&run.report) {
            let Some(m) = report.primary() else {
                continue;
            };
            for (arm, c) in &m.contrasts {
                let Some(c) = c else { continue };
                lines.push(line(run, report, m, condition, arm, c));
            }
        }
    }
    adopt::choose(runs, &mut lines);
    lines
}

/// One arm's contrast on the primary metric, under one condition (or the run's only state).
fn line(
    run: &RunEvidence,
    report: &ExperimentAnalysis,
    m: &crate::analyze::experiment::MetricAnalysis,
    condition: Option<&str>,
    arm: &str,
    c: &crate::analyze::verdict::Contrast,
) -> EvidenceLine {
    let ev = report.evidence.iter().find(|e| e.arm == arm);
    let flagged = ev.map_or(0, |e| e.flagged);
    let gain = match m.metric.better {
        Better::Lower => -c.percent.point,
        Better::Higher => c.percent.point,
    };
    let (costs, weighed) = weigh::costs(report, m, arm, gain, &run.stalls);
    let finding = if flagged > 0 {
        Finding::Flagged
    } else {
        match c.verdict {
            Verdict::Faster if c.clears_effect && costs.iter().any(|c| c.outweighs) => {
                Finding::Costly
            }
            Verdict::Faster if c.clears_effect => Finding::Runner,
            Verdict::Faster => Finding::BelowEffect,
            Verdict::Slower => Finding::Slower,
            Verdict::Equivalent => Finding::Equivalent,
            Verdict::Inconclusive => Finding::Inconclusive,
        }
    };
    let stalls = run
        .stalls
        .iter()
        .filter(|s| s.arm == arm)
        .map(|s| {
            let e = &s.difference_ms;
            let interval = match (e.lo, e.hi) {
                (Some(lo), Some(hi)) => format!(" {}", crate::units::fmt_interval(lo, hi, 1)),
                _ => String::new(),
            };
            format!(
                "{} {:+.1} ms per trial{interval} ({:.1} vs {:.1} ms)",
                s.kind, e.point, s.arm_mean_ms, s.baseline_mean_ms
            )
        })
        .collect();
    EvidenceLine {
        run_id: run.run_id,
        condition: condition.map(String::from),
        arm: arm.to_string(),
        baseline: report.baseline.clone(),
        metric: m.metric.name.clone(),
        better: m.metric.better,
        percent: c.percent,
        verdict: c.verdict,
        half_width: c.min_detectable_percent,
        finding,
        coverage: ev.and_then(|e| e.mean_coverage_at_peak),
        flagged,
        trials: ev.map_or(0, |e| e.trials),
        stalls,
        costs,
        weighed,
        against: Vec::new(),
    }
}

/// The run and arm of the adopted line, if any.
pub fn adopted<'a>(
    runs: &'a [RunEvidence],
    lines: &[EvidenceLine],
) -> Option<(&'a RunEvidence, &'a Arm)> {
    let l = lines.iter().find(|l| l.finding == Finding::Adopt)?;
    let run = runs.iter().find(|r| r.run_id == l.run_id)?;
    let arm = run.arms.iter().find(|a| a.name == l.arm)?;
    Some((run, arm))
}

/// What every target starts from: the advice with its evidence, the common notes and the
/// target's `verify` line, and — when an arm was adopted — that arm (with its run's command)
/// and the evidence line that says why, its system settings already in the advice and the
/// summary set to "adopt arm …".
pub fn begin(
    target: Target,
    runs: &[RunEvidence],
    lines: Vec<EvidenceLine>,
    verify: &str,
) -> (Advice, Option<Adopted>) {
    let chosen = adopted(runs, &lines).map(|(r, a)| (r.command.clone(), r.shell, a.clone()));
    let mut a = base_advice(target, lines);
    machine::common_notes(&mut a);
    if !verify.is_empty() {
        a.verify.push(verify.into());
    }
    let Some((command, shell, arm)) = chosen else {
        return (a, None);
    };
    let why = a
        .evidence
        .iter()
        .find(|l| l.finding == Finding::Adopt)
        .map_or(String::new(), EvidenceLine::describe);
    a.adopt = Some(arm.name.clone());
    a.settings = arm_settings(&arm, &why);
    a.service.extend(memory_thp(&arm, &why));
    a.summary = format!("adopt arm {} — {why}", arm.name);
    (
        a,
        Some(Adopted {
            arm,
            why,
            command,
            shell,
        }),
    )
}

/// The adopted arm, as a target needs it.
#[derive(Debug, Clone)]
pub struct Adopted {
    pub arm: Arm,
    /// The evidence line that adopted it, in words.
    pub why: String,
    /// Its run's command (a QEMU command line says the guest's RAM).
    pub command: Vec<String>,
    pub shell: bool,
}

/// "No change" in words, from the lines that were considered: its reason first — settings
/// that did not gain everywhere (where not, cost first), a resolved cost beside an unresolved
/// gain — then each line's finding.
pub fn no_change(lines: &[EvidenceLine]) -> String {
    if lines.is_empty() {
        return "no change: no stored run compares arms on this (give run ids, or measure first)"
            .into();
    }
    if let Some(l) = lines.iter().find(|l| l.finding == Finding::Conditional) {
        return format!(
            "no change: {} gained in {} ({} {:+.1}%) but not everywhere its settings were measured — {}",
            l.arm,
            l.place(),
            l.metric,
            l.percent.point,
            l.against.join("; ")
        );
    }
    let why: Vec<String> = lines
        .iter()
        .map(|l| {
            let outweighing = l.outweighing().join("; ");
            let costly = format!("FASTER, but costs more than it gains: {outweighing}");
            let unresolved = format!(
                "costs {outweighing}, for a gain not resolved ({}{})",
                format!("{:?}", l.verdict).to_uppercase(),
                l.half_width
                    .map_or(String::new(), |h| format!(" at ±{h:.1}%"))
            );
            let what = match l.finding {
                Finding::Adopt | Finding::Runner => "FASTER",
                Finding::Costly => costly.as_str(),
                Finding::Conditional => "FASTER here only",
                Finding::BelowEffect => "FASTER, not clearing δ",
                Finding::Slower => "SLOWER",
                Finding::Equivalent | Finding::Inconclusive if !outweighing.is_empty() => {
                    unresolved.as_str()
                }
                Finding::Equivalent => "EQUIVALENT",
                Finding::Flagged => "FLAGGED (no advice from it)",
                Finding::Inconclusive => "INCONCLUSIVE",
            };
            let half = match l.half_width {
                Some(h) if l.finding == Finding::Inconclusive && outweighing.is_empty() => {
                    format!(" at ±{h:.1}%")
                }
                _ => String::new(),
            };
            let place = match &l.condition {
                Some(c) => format!("run {}, {c}", l.run_id),
                None => format!("run {}", l.run_id),
            };
            format!("{} ({place}) {what}{half}", l.arm)
        })
        .collect();
    let costly = lines.iter().any(|l| l.finding == Finding::Costly);
    let unresolved_with_costs = lines.iter().any(|l| {
        matches!(l.finding, Finding::Inconclusive | Finding::Equivalent)
            && !l.outweighing().is_empty()
    });
    let head = if costly {
        "no change: the measured costs outweigh what was gained"
    } else if unresolved_with_costs {
        "no change: no gain was resolved, and a cost was"
    } else {
        "no change: no arm was measurably better"
    };
    format!("{head} — {}", why.join("; "))
}

/// The current value of every knob a setting names, filled in by the caller's reader.
pub fn fill_now(settings: &mut [Setting], read: impl Fn(&Knob) -> Option<String>) {
    for s in settings {
        s.now = read(&s.knob);
    }
}

/// The memory the hugetlb pools among `settings` reserve, in bytes.
pub fn pool_bytes<'a>(settings: impl IntoIterator<Item = &'a Setting>) -> u64 {
    settings
        .into_iter()
        .filter_map(|s| match s.knob {
            Knob::HugetlbPages { size, .. } => Some(size * s.value.parse::<u64>().unwrap_or(0)),
            _ => None,
        })
        .sum()
}

/// The system settings an arm makes, as advice (its pools, THP and mTHP modes).
pub fn arm_settings(arm: &Arm, why: &str) -> Vec<Setting> {
    arm.system
        .iter()
        .map(|(knob, value)| Setting {
            knob: *knob,
            value: value.clone(),
            now: None,
            why: why.to_string(),
        })
        .collect()
}

/// The first systemd with `MemoryTHP=` in a unit's `[Service]`: `disable` (PR_SET_THP_DISABLE)
/// or `madvise` (with PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18+) for that service alone.
pub const MEMORY_THP_SYSTEMD: u32 = 260;

/// The adopted arm's THP mode for one service alone, as a systemd unit line: `never` or off for
/// the process → `MemoryTHP=disable`, `madvise` or advised for the process →
/// `MemoryTHP=madvise`; nothing for an arm that asks for THP or leaves it alone.
pub fn memory_thp(arm: &Arm, why: &str) -> Option<ServiceLine> {
    let madvise = arm.process.thp_advised
        || arm
            .system
            .iter()
            .any(|(k, v)| *k == Knob::ThpEnabled && v == "madvise");
    let (value, mode) = if arm.thp_never() {
        ("disable", "never")
    } else if madvise {
        ("madvise", "madvise")
    } else {
        return None;
    };
    Some(ServiceLine {
        file: format!("the service's systemd unit, [Service] (systemd {MEMORY_THP_SYSTEMD}+)"),
        line: format!("MemoryTHP={value}"),
        why: format!("THP {mode} for this service alone, whatever the system-wide mode — {why}"),
    })
}

/// Whether this machine's systemd has `MemoryTHP=`, said as a note beside an advice that
/// gives the line: `systemd`, its major version (`systemctl --version`), or `None` without one.
pub fn note_memory_thp(a: &mut Advice, systemd: Option<u32>) {
    if !a.service.iter().any(|s| s.line.starts_with("MemoryTHP=")) {
        return;
    }
    a.notes.push(match systemd {
        Some(v) if v >= MEMORY_THP_SYSTEMD => format!(
            "MemoryTHP= needs systemd {MEMORY_THP_SYSTEMD}+; this machine's systemd {v} has it (checked with `systemctl --version`)"
        ),
        Some(v) => format!(
            "MemoryTHP= needs systemd {MEMORY_THP_SYSTEMD}+; this machine's systemd {v} does not have it (checked with `systemctl --version`): start the service through a wrapper that calls prctl(PR_SET_THP_DISABLE) before exec, or set the mode system-wide"
        ),
        None => format!(
            "MemoryTHP= needs systemd {MEMORY_THP_SYSTEMD}+; no systemctl was found on this machine to check its version"
        ),
    });
}

/// Everything an advice says unmeasured when its evidence is only a bench or nothing.
pub fn base_advice(target: Target, lines: Vec<EvidenceLine>) -> Advice {
    Advice {
        schema: SCHEMA.into(),
        target,
        adopt: None,
        summary: no_change(&lines),
        settings: Vec::new(),
        service: Vec::new(),
        evidence: lines,
        not_measured: Vec::new(),
        notes: Vec::new(),
        verify: Vec::new(),
    }
}

/// What `advise` says from one run alone: for a preset's service (PostgreSQL, Redis) that
/// service's advice, else the machine's — the line a run's answer ends with.
pub fn for_one_run(run: RunEvidence) -> Advice {
    let runs = [run];
    let lines = findings(&runs);
    match runs[0].preset.as_deref() {
        Some("postgres") => postgres::advise(&runs, lines, None),
        Some("redis") => redis::advise(&runs, lines),
        _ => machine::advise(&runs, lines),
    }
}

#[cfg(test)]
pub(crate) mod tests;
