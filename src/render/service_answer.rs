//! The default answer of a service run, sized for the person it is for: one line per arm (the
//! primary metric's change with its interval and verdict, the costs that changed, the tail, how
//! much of the server was on huge pages), one line of evidence, one of what `advise` would say
//! from this run alone, and one saying how the run went and where the details are. The design,
//! lifetimes, warm-up, instance spread, warnings and notes are behind `--verbose` and in
//! `hugelab results show`. Every number is read from the record; a signed percentage is a
//! contrast's estimate as the record holds it.

use super::summary::{level_words, wrap_hanging};
use crate::model::advice::Advice;
use crate::model::analysis::{ArmEvidence, ExperimentAnalysis};
use crate::model::costs;
use crate::model::record::RunRecord;
use crate::model::verdict::{Contrast, Verdict};
use crate::units::fmt_elapsed;

/// The brief answer's lines, each at most `words::WIDTH` columns.
pub fn lines(r: &RunRecord) -> Vec<String> {
    let mut out = Vec::new();
    let conditions = &r.report.conditions;
    if conditions.is_empty() {
        out.extend(arm_lines(&r.report, None));
    } else {
        for c in conditions {
            out.extend(arm_lines(&c.analysis, Some(&c.name)));
        }
    }
    out.extend(super::events::lines(&r.report));
    out.extend(evidence_line(r));
    out.extend(advice_line(r.advice.as_ref(), r.stored.then_some(r.run_id)));
    out.extend(run_line(r));
    out
}

/// Per arm against the baseline: `thp vs off  tps +3.1% [+0.3, +5.8] @99.52% FASTER; costs:
/// server memory (segments whole) +2.4% MORE, CPU/op -4.3% LESS, 1 unchanged; 87% huge`.
fn arm_lines(r: &ExperimentAnalysis, condition: Option<&str>) -> Vec<String> {
    let Some(primary) = r.primary() else {
        return Vec::new();
    };
    let names: Vec<&str> = primary.contrasts.iter().map(|(a, _)| a.as_str()).collect();
    let width = names.iter().map(|a| a.chars().count()).max().unwrap_or(0);
    let mut out = Vec::new();
    for (arm, c) in &primary.contrasts {
        let under = condition.map_or(String::new(), |c| format!("under {c}: "));
        let head = format!("{under}{arm:width$} vs {}", r.baseline);
        let verdict = match c {
            Some(c) => format!("{} {}", primary.metric.name, verdict_words(r, c)),
            None => format!("{}: too few complete blocks", primary.metric.name),
        };
        let mut parts = vec![format!("{head}  {verdict}")];
        parts.extend(cost_words(r, arm));
        if let Some(e) = r.evidence.iter().find(|e| &e.arm == arm) {
            parts.extend(evidence_words(e));
        }
        out.extend(wrap_hanging(&parts.join("; "), 2));
    }
    out
}

/// `+3.1% [+0.3, +5.8] @99.52% FASTER`, worded as every answer words a verdict.
fn verdict_words(r: &ExperimentAnalysis, c: &Contrast) -> String {
    super::words::contrast_words(r, c, true)
}

/// `costs: memory (segments whole) +2.4% MORE, CPU/op -4.3% LESS, 1 not shown to change` and
/// `tail: lat_p99_ms +4.4% WORSE`: the memory cost always, the other costs whose interval
/// resolved a change, each by its estimate (the rest counted), and the load's tail.
fn cost_words(r: &ExperimentAnalysis, arm: &str) -> Vec<String> {
    let mut changed = Vec::new();
    for c in costs::of_arm(r, arm).iter().filter(|c| costs::named(c)) {
        changed.push(format!(
            "{} {} {}",
            costs::short_label(&c.metric.metric.name),
            point(c.contrast),
            crate::render::costs::verdict_word(c.contrast.verdict)
        ));
    }
    for st in r.stalls.iter().filter(|s| s.arm == arm) {
        if matches!(st.verdict, Verdict::Slower | Verdict::Faster) {
            changed.push(format!(
                "{} {:+.1}/trial {}",
                st.kind,
                st.difference.point,
                crate::render::costs::verdict_word(st.verdict)
            ));
        }
    }
    // The rest, as the analysis counted them.
    match r.unchanged_costs.iter().find(|(a, _)| a == arm) {
        Some((_, n)) if *n > 0 => changed.push(format!("{n} not shown to change")),
        _ => {}
    }
    let mut out = Vec::new();
    if !changed.is_empty() {
        out.push(format!("costs: {}", changed.join(", ")));
    }
    let word = |v: Verdict| match v {
        Verdict::Slower => "WORSE",
        Verdict::Faster => "BETTER",
        Verdict::Equivalent => "SAME",
        Verdict::Inconclusive => "not resolved",
    };
    if let Some((name, c)) = tail(r, arm) {
        out.push(format!("tail: {name} {} {}", point(c), word(c.verdict)));
    } else if let Some(t) = r.tails.iter().find(|t| t.arm == arm) {
        out.push(match &t.percent {
            Some(e) => format!("tail: p95 {:+.1}% {}", e.point, word(t.verdict)),
            None => format!("tail: p95 needs {} blocks", t.needed),
        });
    }
    out
}

/// The load's own tail latency (its p99) against the baseline's, when the load reports one.
fn tail<'a>(r: &'a ExperimentAnalysis, arm: &str) -> Option<(&'a str, &'a Contrast)> {
    let m = r
        .metrics
        .iter()
        .find(|m| !m.metric.cost && !m.metric.context && m.metric.name.contains("p99"))?;
    let c = m.contrasts.iter().find(|(a, _)| a == arm)?.1.as_ref()?;
    Some((m.metric.name.as_str(), c))
}

/// A contrast's estimate: `+2.4%`, or `×15.6` once it more than doubles.
fn point(c: &Contrast) -> String {
    let p = c.percent.point;
    if p >= 100.0 {
        format!("×{:.1}", 1.0 + p / 100.0)
    } else {
        format!("{p:+.1}%")
    }
}

/// `87% huge`, and the trials that went wrong.
fn evidence_words(e: &ArmEvidence) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = e.mean_coverage_at_peak {
        out.push(format!("{:.0}% huge", c * 100.0));
    }
    if e.flagged > 0 {
        out.push(format!("FLAGGED in {} of {} trials", e.flagged, e.trials));
    }
    if e.failed > 0 {
        out.push(format!("{} failed", e.failed));
    }
    out
}

/// `evidence: pool 2M for hugetlb-2m: asked 278, got 278, used 276 · the kernel's own
/// accounting with the servers: hugetlb pool in use 340M, ShmemHugePages 340M`.
fn evidence_line(r: &RunRecord) -> Vec<String> {
    let mut parts: Vec<String> = r
        .pools
        .iter()
        .map(|p| {
            let got = p.obtained.map_or("not read".into(), |n| n.to_string());
            let used = p.in_use.map_or("not read".into(), |u| format!("{u:.0}"));
            format!(
                "pool {} for {}: asked {}, got {got}, used {used}",
                crate::units::Bytes(p.page_size),
                p.arm,
                p.asked
            )
        })
        .collect();
    let kernel = kernel_counts(&r.servers);
    if !kernel.is_empty() {
        parts.push(format!("the kernel's own count: {}", kernel.join(", ")));
    }
    if parts.is_empty() {
        return Vec::new();
    }
    wrap_hanging(&format!("evidence: {}", parts.join(" · ")), 2)
}

/// What `advise` would say from this run alone: the settings, or why none, and the command that
/// gives it whole (`stored`: the run's id; None: not stored, so `advise` cannot read it).
fn advice_line(a: Option<&Advice>, stored: Option<i64>) -> Vec<String> {
    let Some(a) = a else {
        return Vec::new();
    };
    let target = match a.target {
        crate::model::advice::Target::Machine => String::new(),
        t => clap::ValueEnum::to_possible_value(&t)
            .map_or(String::new(), |v| format!(" --for {}", v.get_name())),
    };
    let mut set: Vec<String> = a
        .settings
        .iter()
        .map(|s| match s.knob.sysctl() {
            Some(name) => format!("{name} = {}", s.value),
            None => format!("{} = {}", s.knob, s.value),
        })
        .collect();
    set.extend(a.service.iter().map(|s| format!("{}: {}", s.file, s.line)));
    let what = if set.is_empty() {
        first_sentence(&a.summary)
    } else {
        format!("set {}", set.join(", "))
    };
    // Two lines at most: the advice is shortened, marked, and the command that gives it whole
    // is kept.
    let whole = match stored {
        Some(id) => format!("hugelab advise{target} {id}"),
        None => "not stored (--no-save), so hugelab advise cannot read it".into(),
    };
    let line = |what: &str| wrap_hanging(&format!("advise (this run alone): {what} — {whole}"), 2);
    let mut what = what;
    let mut lines = line(&what);
    while lines.len() > 2 {
        let Some((kept, _)) = what.trim_end_matches(" …").rsplit_once(' ') else {
            break;
        };
        what = format!("{kept} …");
        lines = line(&what);
    }
    lines
}

/// The summary's first sentence: the decision and its reason, without the evidence after it.
fn first_sentence(s: &str) -> String {
    s.split(" — ")
        .next()
        .unwrap_or(s)
        .trim_end_matches('.')
        .to_string()
}

/// `84 blocks in 5m01s · 0 failed · verdicts at 99% family-wise (Holm, 2 contrasts), δ = 1% ·
/// design, notes and every table: hugelab results show 12`.
fn run_line(r: &RunRecord) -> Vec<String> {
    let measured: usize = r.report.evidence.iter().map(|e| e.failed).sum();
    let failed = match r.facts.warmup_failed {
        0 => measured.to_string(),
        w => format!("{measured} (+{w} warm-up)"),
    };
    let contrasts = r.report.primary().map_or(0, |m| m.contrasts.len());
    let said = r.notes.len();
    let details = if !r.stored {
        "run --verbose".to_string()
    } else {
        format!("hugelab results show {}", r.run_id)
    };
    let notes = match said {
        0 => String::new(),
        1 => "1 note, ".into(),
        n => format!("{n} notes, "),
    };
    // Why the run ended, unless it ended as planned (its blocks, or its time up).
    let stopped = super::summary::stopped_clause(r.facts.stop_reason.as_deref(), true);
    wrap_hanging(
        &format!(
            "{} block{}{}{}{stopped} · {failed} failed · {}, δ = {}% · the design, {notes}every table: {details}",
            r.facts.blocks,
            if r.facts.blocks == 1 { "" } else { "s" },
            match r.replicas {
                0 | 1 => String::new(),
                n => format!(" ({n} replicas at once)"),
            },
            r.facts
                .elapsed_s
                .map_or(String::new(), |e| format!(" in {}", fmt_elapsed(e))),
            level_words(&r.report.design, contrasts, r.report.confidence),
            r.report.effect * 100.0,
        ),
        2,
    )
}

/// The kernel's machine-wide accounting read with the servers, once (the largest of the arms'
/// medians): `hugetlb pool in use 340M`, `ShmemHugePages 340M`.
pub(crate) fn kernel_counts(servers: &[crate::model::run::ServerSummary]) -> Vec<String> {
    let most = |f: &dyn Fn(&crate::model::run::ServerSummary) -> Option<u64>| {
        servers.iter().filter_map(f).max().filter(|b| *b > 0)
    };
    [
        most(&|s| s.kernel_hugetlb)
            .map(|b| format!("hugetlb pool in use {}", crate::units::Bytes(b))),
        most(&|s| s.kernel_shmem_huge)
            .map(|b| format!("ShmemHugePages {}", crate::units::Bytes(b))),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long "no change" reason is shortened to two lines, marked, and the command that gives
    /// the whole advice stays.
    #[test]
    fn the_advice_line_keeps_two_lines_and_the_command() {
        let a = Advice {
            schema: crate::model::advice::SCHEMA.into(),
            target: crate::model::advice::Target::Postgres,
            adopt: None,
            summary: format!(
                "No change: {} — evidence",
                "every arm was weighed ".repeat(20)
            ),
            settings: Vec::new(),
            service: Vec::new(),
            evidence: Vec::new(),
            not_measured: Vec::new(),
            notes: Vec::new(),
            verify: Vec::new(),
        };
        let l = advice_line(Some(&a), Some(7));
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(
            l.iter()
                .all(|x| x.chars().count() <= crate::render::words::WIDTH)
        );
        let joined = l.join(" ");
        assert!(
            joined.contains(" … — hugelab advise --for postgres 7"),
            "{joined}"
        );
        let short = Advice {
            summary: "No change: no arm was measurably better — evidence".into(),
            ..a
        };
        assert_eq!(
            advice_line(Some(&short), Some(7)),
            [
                "advise (this run alone): No change: no arm was measurably better — hugelab advise --for postgres 7"
            ]
        );
        // Not stored: no run id to give `advise`, which reads stored runs only.
        let unsaved = advice_line(Some(&short), None)
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            unsaved.ends_with("— not stored (--no-save), so hugelab advise cannot read it")
                && !unsaved.contains("advise --for"),
            "{unsaved}"
        );
    }
}
