//! The answer first: the lines a person reads before any table. One line per contrast and
//! metric (effect, interval, verdict), the FLAGGED arms, then one line on the run itself.
//! `run`, `results show` and `report` print the same lines.

pub use super::words::{
    WIDTH, contrast_words, level_mark, level_mark_at, percent_interval, thousands, two_significant,
    wrap_aligned, wrap_hanging, wrap_lines,
};
use crate::model::analysis::ArmEvidence;
use crate::model::analysis::ExperimentAnalysis;
use crate::model::analysis::primary_index;
use crate::model::report::CompareResult;
use crate::model::verdict::Design;
use crate::model::verdict::Verdict;
use crate::model::verdict::fmt_level;
use crate::units::fmt_elapsed;

/// A contrast's name, the (metric, words) shown, and the metrics left unsettled.
type Group = (String, Vec<(String, String)>, Vec<String>);

pub use crate::model::record::RunFacts;

/// The answer lines of an analysed experiment: per contrast, the primary metric (the one
/// `--fail-on` and `--sequential` decide on) and every other metric with a verdict; the other
/// metrics, still inconclusive, are named in one line. Then the FLAGGED arms.
pub fn answer(r: &ExperimentAnalysis) -> Vec<String> {
    let primary = primary_index(r.metrics.iter().map(|m| &m.metric));
    let groups = contrast_groups(r, primary);
    let one_line = groups
        .iter()
        .all(|(_, s, rest)| s.len() == 1 && rest.is_empty());
    let mut out = Vec::new();
    if one_line {
        let w0 = groups
            .iter()
            .map(|g| g.0.chars().count())
            .max()
            .unwrap_or(0);
        let w1 = groups
            .iter()
            .map(|g| g.1[0].0.chars().count())
            .max()
            .unwrap_or(0);
        for (what, shown, _) in &groups {
            let (metric, words) = &shown[0];
            let head = format!("{what:w0$}  {metric:w1$}  ");
            out.extend(wrap_hanging(
                &format!("{head}{words}"),
                head.chars().count(),
            ));
            out.extend(no_interval_line(r, what, shown));
            out.extend(cost_lines(r, what));
        }
    } else {
        let w1 = groups
            .iter()
            .flat_map(|g| g.1.iter().map(|x| x.0.chars().count()))
            .max()
            .unwrap_or(0);
        for (what, shown, rest) in &groups {
            out.push(format!("{what}:"));
            for (metric, words) in shown {
                let head = format!("  {metric:w1$}  ");
                out.extend(wrap_hanging(
                    &format!("{head}{words}"),
                    head.chars().count(),
                ));
            }
            if !rest.is_empty() {
                out.extend(wrap_hanging(
                    &format!("  {} more INCONCLUSIVE: {}", rest.len(), rest.join(", ")),
                    4,
                ));
            }
            out.extend(no_interval_line(r, what, shown));
            out.extend(cost_lines(r, what));
        }
    }
    let rows = r.metrics.iter().filter(|m| m.metric.row).count();
    if rows > 1 {
        let arms = r.evidence.len().saturating_sub(1);
        out.extend(wrap_hanging(
            &format!(
                "the load's {rows} result rows × {arms} arm{} are one family: Holm across their {} contrasts at {}",
                if arms == 1 { "" } else { "s" },
                rows * arms,
                crate::model::verdict::fmt_level(r.confidence)
            ),
            2,
        ));
    }
    out.extend(super::events::lines(r));
    out.extend(super::conditions::lines(r));
    out.extend(super::thp_activity::lines(r));
    out.extend(flag_lines(r));
    out
}

/// Per contrast: its name, the (metric, words) shown — the primary metric, every settled one,
/// the first p99 and every result row — and the metrics left unsettled.
fn contrast_groups(r: &ExperimentAnalysis, primary: usize) -> Vec<Group> {
    // Metrics in the order the answer gives them: the primary first.
    let mut order: Vec<usize> = (0..r.metrics.len()).collect();
    if primary < order.len() {
        order.remove(primary);
        order.insert(0, primary);
    }
    let arms: Vec<&str> = r
        .metrics
        .get(primary)
        .map(|m| m.contrasts.iter().map(|(a, _)| a.as_str()).collect())
        .unwrap_or_default();
    // Per contrast: its name, the (metric, words) shown, and the metrics left unsettled.
    let mut groups: Vec<Group> = Vec::new();
    for arm in arms {
        let mut shown = Vec::new();
        let mut rest = Vec::new();
        for (k, &mi) in order
            .iter()
            .filter(|&&i| !r.metrics[i].metric.cost)
            .enumerate()
        {
            let m = &r.metrics[mi];
            let Some((_, c)) = m.contrasts.iter().find(|(a, _)| a == arm) else {
                continue;
            };
            let settled = c
                .as_ref()
                .is_some_and(|c| c.verdict != Verdict::Inconclusive);
            // The tail beside the primary metric: the first p99 is always shown.
            let first_p99 = m.metric.name.contains("p99")
                && !m.metric.name.contains("p999")
                && !shown
                    .iter()
                    .any(|(n, _): &(String, String)| n.contains("p99"));
            if k == 0 || settled || first_p99 || m.metric.row {
                let words = match c {
                    None => "too few complete blocks for an interval".to_string(),
                    Some(c) => contrast_words(r, c, k == 0),
                };
                shown.push((m.metric.name.clone(), words));
            } else {
                rest.push(m.metric.name.clone());
            }
        }
        groups.push((format!("{arm} vs {}", r.baseline), shown, rest));
    }
    groups
}

/// The FLAGGED and PARTIAL arms, each with its first trial's reason.
fn flag_lines(r: &ExperimentAnalysis) -> Vec<String> {
    let mut out = Vec::new();
    for e in &r.evidence {
        if let Some(f) = &e.first_flag {
            let head = format!("FLAGGED {} ({} of {} trials): ", e.arm, e.flagged, e.trials);
            out.extend(wrap_hanging(&format!("{head}{f}"), 2));
        }
        if let Some(f) = &e.first_partial {
            let head = format!("PARTIAL {} ({} of {} trials): ", e.arm, e.partial, e.trials);
            out.extend(wrap_hanging(&format!("{head}{f}"), 2));
        }
    }
    out
}

/// Why a contrast shown without an interval has none, on its own line under it (its first
/// warning that says so: too few blocks at the level asked).
fn no_interval_line(r: &ExperimentAnalysis, what: &str, shown: &[(String, String)]) -> Vec<String> {
    let arm = what
        .strip_suffix(&format!(" vs {}", r.baseline))
        .unwrap_or(what);
    let why = shown.iter().find_map(|(name, _)| {
        let m = r.metrics.iter().find(|m| &m.metric.name == name)?;
        let c = m.contrasts.iter().find(|(a, _)| a == arm)?.1.as_ref()?;
        if c.percent.lo.is_some() {
            return None;
        }
        c.warnings.iter().find(|w| w.contains("too few")).cloned()
    });
    why.map(|w| wrap_hanging(&format!("  no interval: {w}"), 4))
        .unwrap_or_default()
}

/// The cost line under a contrast (`render::costs`), wrapped under its words.
fn cost_lines(r: &ExperimentAnalysis, what: &str) -> Vec<String> {
    let arm = what
        .strip_suffix(&format!(" vs {}", r.baseline))
        .unwrap_or(what);
    super::costs::line(r, arm)
        .map(|l| wrap_hanging(&format!("  {l}"), 4))
        .unwrap_or_default()
}

/// Why a run stopped, as its run line says it — the one author for command and service runs:
/// nothing where it ran as planned (all its blocks; in a service's brief answer, its time up
/// as well), else ` (stopped: …)` with the reason, a refusal's included.
pub fn stopped_clause(reason: Option<&str>, time_up_as_planned: bool) -> String {
    let Some(why) = reason.filter(|w| !w.is_empty() && !w.ends_with("blocks done")) else {
        return String::new();
    };
    let time_up = (why.starts_with("--max-time ") || why.starts_with("--calibrate "))
        && why.contains(" s reached after ");
    if time_up && time_up_as_planned {
        return String::new();
    }
    format!(" (stopped: {why})")
}

/// One line on the run: blocks, time, why it stopped, failures, flags, coverage per arm,
/// heavy steal, and the level the verdicts were computed at.
pub fn run_line(r: &ExperimentAnalysis, f: &RunFacts) -> Vec<String> {
    let mut parts = Vec::new();
    let unit = match (r.design == Design::Unpaired, f.blocks == 1) {
        (true, true) => "run",
        (true, false) => "runs",
        (false, true) => "block",
        (false, false) => "blocks",
    };
    let mut head = format!("{} {unit}", f.blocks);
    if let Some(s) = f.elapsed_s {
        head += &format!(" in {}", fmt_elapsed(s));
    }
    head += &stopped_clause(f.stop_reason.as_deref(), false);
    parts.push(head);
    let failed: usize = r.evidence.iter().map(|e| e.failed).sum();
    let flagged: usize = r.evidence.iter().map(|e| e.flagged).sum();
    parts.push(match f.warmup_failed {
        0 => format!("{failed} failed"),
        w => format!(
            "{failed} failed (and {w} warm-up trial{} before them)",
            if w == 1 { "" } else { "s" }
        ),
    });
    parts.push(format!("{flagged} flagged"));
    let partial: usize = r.evidence.iter().map(|e| e.partial).sum();
    if partial > 0 {
        parts.push(format!("{partial} partial"));
    }
    // Per arm, `93% / -`: a share each arm got, when any arm has one.
    let shares = |f: fn(&ArmEvidence) -> Option<f64>| {
        r.evidence.iter().any(|e| f(e).is_some()).then(|| {
            r.evidence
                .iter()
                .map(|e| f(e).map_or("-".into(), |c| format!("{:.0}%", c * 100.0)))
                .collect::<Vec<String>>()
                .join(" / ")
        })
    };
    if let Some(cov) = shares(|e| e.mean_coverage_at_peak) {
        let names: Vec<&str> = r.evidence.iter().map(|e| e.arm.as_str()).collect();
        // Huge pages that came and went: the peak's walk is not the whole story.
        let came_and_went = r.evidence.iter().any(|e| {
            e.mean_max_coverage
                .zip(e.mean_coverage_at_peak)
                .is_some_and(|(m, p)| m - p >= 0.05)
        });
        let most = shares(|e| e.mean_max_coverage).filter(|_| came_and_went);
        parts.push(match most {
            Some(m) => format!(
                "huge coverage at peak memory {cov}, at most {m} at any walk ({})",
                names.join(" / ")
            ),
            None => format!("huge coverage {cov} ({})", names.join(" / ")),
        });
    }
    if let Some(share) = shares(|e| e.mean_share) {
        parts.push(format!(
            "memory that matters on the pages asked for {share}"
        ));
    }
    if f.heavy_steal_trials > 0 {
        parts.push(format!("{} trials under heavy steal", f.heavy_steal_trials));
    }
    let contrasts = r.primary().map_or(0, |m| m.contrasts.len());
    parts.push(format!(
        "{}, δ = {}%{}",
        level_words(&r.design, contrasts, r.confidence),
        r.effect * 100.0,
        secondary_words(r)
    ));
    wrap_hanging(&parts.join(" · "), 2)
}

/// What the level does not cover: each metric's contrasts are controlled on their own, so with
/// secondary metrics a verdict on one of them has no control across metrics.
fn secondary_words(r: &ExperimentAnalysis) -> &'static str {
    let contrasted = r
        .metrics
        .iter()
        .filter(|m| !m.metric.context && !m.contrasts.is_empty())
        .count();
    if contrasted > 1 {
        " (the primary metric's; secondary metrics: not adjusted across metrics)"
    } else {
        ""
    }
}

/// The level the verdicts have, in a few words: `99%`, `99% family-wise (Holm, 2 contrasts)`,
/// `99% sequential (Bonferroni, 2 contrasts)`. The tables' titles say it in full.
pub fn level_words(design: &Design, contrasts: usize, confidence: f64) -> String {
    level_words_of(design, contrasts, "contrasts", confidence)
}

/// [`level_words`] naming what the family holds (`contrasts`, `metrics`).
pub fn level_words_of(design: &Design, contrasts: usize, noun: &str, confidence: f64) -> String {
    let lvl = fmt_level(confidence);
    let family = |how: &str| {
        if contrasts > 1 {
            format!(" ({how}, {contrasts} {noun})")
        } else {
            String::new()
        }
    };
    let holm = if contrasts > 1 {
        format!(" family-wise (Holm, {contrasts} {noun})")
    } else {
        String::new()
    };
    match design {
        Design::Fixed => format!("verdicts at {lvl}{holm}"),
        Design::Unpaired => format!("unpaired verdicts at {lvl}{holm}"),
        Design::Sequential { .. } => {
            format!("sequential verdicts at {lvl}{}", family("Bonferroni"))
        }
        Design::GroupSequential { looks, .. } => format!(
            "O'Brien–Fleming verdicts ({looks} looks) at {lvl}{}",
            family("Bonferroni")
        ),
    }
}

/// `compare A B`: per shared arm, B vs A with its interval and verdict, then what A and B are.
pub fn compare_answer(c: &CompareResult) -> Vec<String> {
    let w0 = c
        .rows
        .iter()
        .map(|r| r.arm.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for r in &c.rows {
        let said = match r.b_vs_a_percent {
            Some(e) => {
                let verdict = match r.verdict {
                    Some(Verdict::Faster) => "FASTER".to_string(),
                    Some(Verdict::Slower) => "SLOWER".to_string(),
                    Some(Verdict::Equivalent) => {
                        format!("EQUIVALENT (within ±{}%)", c.effect * 100.0)
                    }
                    Some(Verdict::Inconclusive) | None => "INCONCLUSIVE".to_string(),
                };
                format!("{} {verdict}", percent_interval(&e))
            }
            None => "too few values for an interval".to_string(),
        };
        let head = format!("{:w0$}  B vs A  {}  ", r.arm, c.metric);
        out.extend(wrap_hanging(
            &format!("{head}{said} (n = {}, {})", r.n_a, r.n_b),
            head.chars().count(),
        ));
    }
    out.extend(wrap_hanging(
        &format!(
            "A = {} · B = {} · unpaired (Hodges–Lehmann shift, Mann–Whitney interval), each arm at {}, not adjusted across arms, δ = {}%",
            c.a,
            c.b,
            fmt_level(c.confidence),
            c.effect * 100.0
        ),
        2,
    ));
    out
}

#[cfg(test)]
mod tests;
