//! `hugelab judge` on a terminal: one line per metric (the effect with its interval and
//! verdict), the overall verdict, the backing evidence and kernel activity per group, then how
//! the blocks were formed (autocorrelation) and what was fetched; hosts with `--verbose`.

use super::summary::{level_mark_at, level_words_of, percent_interval, thousands, wrap_hanging};
use crate::model::judge::Basis;
use crate::model::judge::Composition;
use crate::model::judge::JudgeResult;
use crate::model::judge::MetricJudgement;
use crate::model::judge::Overall;
use crate::model::verdict::Better;
use crate::model::verdict::Verdict;
use crate::units::{Unit, fmt_elapsed, fmt_span, fmt_utc};
use std::fmt::Write;

fn word(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "BETTER",
        Verdict::Slower => "WORSE",
        Verdict::Equivalent => "EQUIVALENT",
        Verdict::Inconclusive => "INCONCLUSIVE",
    }
}

pub fn overall_word(o: Overall) -> &'static str {
    match o {
        Overall::Better => "BETTER",
        Overall::Worse => "WORSE",
        Overall::Equivalent => "EQUIVALENT",
        Overall::Inconclusive => "INCONCLUSIVE",
        Overall::Flagged => "FLAGGED",
    }
}

/// One metric's answer: `p99  -4.8% [-6.1, -3.2] @99.5%  BETTER (lower is better)`.
fn metric_line(r: &JudgeResult, m: &MetricJudgement, width: usize) -> Vec<String> {
    let head = format!("  {:<width$}  ", m.name);
    let text = match (&m.contrast, &m.why_not) {
        (Some(c), _) => {
            let dir = match m.better {
                Better::Lower => "lower is better",
                Better::Higher => "higher is better",
            };
            let mut s = format!(
                "{}{}  {}",
                percent_interval(&c.percent),
                level_mark_at(r.confidence, c),
                word(c.verdict)
            );
            match c.verdict {
                Verdict::Equivalent => s += &format!(" (within ±{}%)", r.effect * 100.0),
                Verdict::Faster | Verdict::Slower if !c.clears_effect => {
                    s += &format!(" (by less than {}%)", r.effect * 100.0)
                }
                Verdict::Inconclusive => {
                    if let Some(more) = c.more_blocks {
                        s += &format!(
                            " (≈{} more intervals of {} to settle ±{}%)",
                            more,
                            fmt_span(r.interval_s),
                            r.effect * 100.0
                        );
                    }
                }
                _ => {}
            }
            s += &format!(" · {dir}");
            if m.critical {
                s += " · critical";
            }
            s
        }
        (None, Some(why)) => format!("not judged: {why}"),
        (None, None) => "not judged".into(),
    };
    let mut lines = wrap_hanging(&format!("{head}{text}"), width + 4);
    let pad = format!("  {:<width$}  ", "");
    let mut more = |l: String| lines.extend(wrap_hanging(&format!("{pad}{l}"), width + 4));
    if let (Some(b), Some(before), Some(after)) = (
        &m.before,
        m.before.as_ref().and_then(|b| b.ratio),
        m.after_ratio,
    ) {
        more(format!(
            "canary/baseline before {} → after {} ({} and {} intervals)",
            percent_interval(&before),
            percent_interval(&after),
            b.blocks,
            m.contrast.as_ref().map_or(0, |c| c.blocks)
        ));
    }
    if let (Some(comp), Some(_)) = (&m.composition, &m.contrast)
        && let Some(l) = composition_line(m, comp)
    {
        more(l);
    }
    lines
}

/// How hosts entered the interval, in words (nothing for one host switched back and forth).
fn composition_line(m: &MetricJudgement, c: &Composition) -> Option<String> {
    let units = format!("{} vs {} hosts", c.canary_units, c.baseline_units);
    let what = if m.before.is_some() {
        "changes from the before window"
    } else {
        "window means"
    };
    let spread = c.host_sd_percent.map_or(String::new(), |sd| {
        format!("host {what} spread {sd:.1}% within groups, ")
    });
    match c.basis {
        Basis::OneHost | Basis::TooFewHosts => None,
        Basis::HostsAsUnits => Some(format!(
            "{spread}more than time explains: the interval is hosts as units ({units}, Welch t, {:.0} df){}",
            c.df.unwrap_or(0.0),
            if m.before.is_none() {
                "; --before would calibrate the groups"
            } else {
                ""
            }
        )),
        Basis::TimePaired => Some(match c.hosts {
            Some(h) => format!(
                "{spread}no more than time explains (as units {}): time-paired interval",
                percent_interval(&h)
            ),
            None => format!(
                "time-paired over both windows; with {units}, host levels drifting between the windows cannot be measured"
            ),
        }),
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.0}%", v * 100.0))
}

fn rate(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "—".into(),
        Some(v) if unit == "ratio" => format!("{:.1}%", v * 100.0),
        Some(v) => format!("{}{unit}", Unit::Plain.fmt_for(v, v.abs() / 20.0).bare(v)),
    }
}

/// The whole answer.
pub fn text(r: &JudgeResult, verbose: bool) -> String {
    let mut o = String::new();
    o.push_str(&head_line(r));
    let width = r.metrics.iter().map(|m| m.name.len()).max().unwrap_or(4);
    for m in &r.metrics {
        for l in metric_line(r, m, width) {
            let _ = writeln!(o, "{l}");
        }
    }
    let critical: Vec<&str> = r
        .metrics
        .iter()
        .filter(|m| m.critical)
        .map(|m| m.name.as_str())
        .collect();
    let _ = writeln!(
        o,
        "overall: {}{}",
        overall_word(r.overall),
        if critical.is_empty() {
            String::new()
        } else {
            format!(" (critical: {})", critical.join(", "))
        }
    );
    let groups = groups_line(r);
    for l in wrap_hanging(&groups, 2) {
        let _ = writeln!(o, "{l}");
    }
    let e = &r.evidence;
    let backing = backing_line(r);
    for l in wrap_hanging(&backing, 2) {
        let _ = writeln!(o, "{l}");
    }
    if let Some(f) = &e.flagged {
        for l in wrap_hanging(&format!("FLAGGED: {f}"), 2) {
            let _ = writeln!(o, "{l}");
        }
    }
    if let Some(k) = kernel_line(r) {
        for l in wrap_hanging(&k, 2) {
            let _ = writeln!(o, "{l}");
        }
    }
    for l in wrap_hanging(&autocorrelation_line(r), 2) {
        let _ = writeln!(o, "{l}");
    }
    let judged = r.metrics.iter().filter(|m| m.contrast.is_some()).count();
    for l in wrap_hanging(
        &format!(
            "{}, δ = {}% · {} samples in {} requests, {}",
            level_words_of(&r.design, judged, "metrics", r.confidence),
            r.effect * 100.0,
            thousands(r.samples as usize),
            r.requests,
            fmt_elapsed(r.elapsed_s)
        ),
        2,
    ) {
        let _ = writeln!(o, "{l}");
    }
    for m in &r.metrics {
        for w in m.contrast.iter().flat_map(|c| &c.warnings) {
            let _ = writeln!(o, "warning: {}: {w}", m.name);
        }
    }
    if verbose {
        for m in &r.metrics {
            o += &hosts_table(r, m);
        }
    }
    o
}

/// The first line: which groups (or a switchback's arms), over which span.
fn head_line(r: &JudgeResult) -> String {
    let mut o = String::new();
    let hosts = |canary: bool| {
        r.metrics
            .iter()
            .map(|m| {
                if canary {
                    m.canary_hosts
                } else {
                    m.baseline_hosts
                }
            })
            .max()
            .unwrap_or(0)
    };
    match &r.switchback {
        Some(sb) => {
            let _ = writeln!(
                o,
                "switchback on {{{}}}: {} vs {} ({} pairs of {} periods), {} → {}:",
                sb.host,
                sb.arms[1].0,
                sb.arms[0].0,
                sb.periods.len() / 2,
                fmt_span(sb.period_s),
                fmt_utc(r.from, false).trim_end_matches(" UTC"),
                fmt_utc(r.to, false)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "canary vs baseline ({} vs {} hosts), {} → {}:",
                hosts(true),
                hosts(false),
                fmt_utc(r.judged_from, false).trim_end_matches(" UTC"),
                fmt_utc(r.to, false)
            );
        }
    }
    o
}

/// The groups judged: the canary's and baseline's selectors (or a switchback's periods), the
/// block length, the before window and the burn-in.
fn groups_line(r: &JudgeResult) -> String {
    match &r.switchback {
        Some(sb) => format!(
            "canary = the {} periods ({}) · baseline = the {} periods ({}) · random order within each pair (seed {}){}{} · settings restored: {}",
            sb.arms[1].0,
            sb.arms[1].1,
            sb.arms[0].0,
            sb.arms[0].1,
            sb.seed,
            if r.burn_in_s > 0.0 {
                format!(
                    " · the first {} of each period left out",
                    fmt_span(r.burn_in_s)
                )
            } else {
                String::new()
            },
            sb.stopped
                .as_ref()
                .map(|w| format!(" · stopped early by {w}"))
                .unwrap_or_default(),
            if sb.restored.is_empty() {
                "nothing was changed".to_string()
            } else {
                sb.restored.join(", ")
            }
        ),
        None => format!(
            "canary {{{}}} · baseline {{{}}} · blocks of {}{}{}",
            r.canary,
            r.baseline,
            fmt_span(r.interval_s),
            r.before.map_or(String::new(), |(f, t)| format!(
                " · before window {} → {} ({})",
                fmt_utc(f, false).trim_end_matches(" UTC"),
                fmt_utc(t, false),
                fmt_span(t - f)
            )),
            if r.burn_in_s > 0.0 {
                format!(
                    " · the first {} after the change left out (burn-in)",
                    fmt_span(r.burn_in_s)
                )
            } else {
                String::new()
            }
        ),
    }
}

/// The backing's evidence: the watched processes' huge coverage per group, and what each
/// group was meant to be on.
fn backing_line(r: &JudgeResult) -> String {
    let e = &r.evidence;
    let meant = match r.huge_on {
        crate::model::judge::HugeOn::Canary => "canary meant to be on huge pages",
        crate::model::judge::HugeOn::Baseline => "baseline meant to be on huge pages",
        crate::model::judge::HugeOn::Both => "both meant to be on huge pages",
    };
    if e.canary_coverage.is_none() && e.baseline_coverage.is_none() {
        match &e.cgroups {
            Some(m) => format!("backing: NOT VERIFIED — no hugelab_cgroup_huge_ratio{{{m}}} from either group (`hugelab exporter` exports the largest cgroups: raise --cgroups or --cgroup-depth)"),
            None => "backing: NOT VERIFIED — no hugelab_process_huge_coverage_ratio from either group (run `hugelab exporter --name COMM` on the hosts)".to_string(),
        }
    } else {
        format!(
            "backing: huge-page coverage of the {} canary {} · baseline {} ({meant}){}",
            e.whose(),
            pct(e.canary_coverage),
            pct(e.baseline_coverage),
            if e.hosts_without.is_empty() {
                String::new()
            } else {
                format!("; below 10%: {}", e.hosts_without.join(", "))
            }
        ) + &e.before.as_ref().map_or(String::new(), |b| {
            format!(
                "; before: canary {} · baseline {}",
                pct(b.canary),
                pct(b.baseline)
            )
        })
    }
}

/// The kernel's counters per group (window means), with the before window's beside them.
fn kernel_line(r: &JudgeResult) -> Option<String> {
    let e = &r.evidence;
    let kernel: Vec<String> = e
        .kernel
        .iter()
        .filter(|k| k.canary.is_some() || k.baseline.is_some())
        .map(|k| {
            let before = if r.before.is_some()
                && (k.canary_before.is_some() || k.baseline_before.is_some())
            {
                format!(
                    " (before {} / {})",
                    rate(k.canary_before, &k.unit),
                    rate(k.baseline_before, &k.unit)
                )
            } else {
                String::new()
            };
            format!(
                "{} {} / {}{before}",
                k.name,
                rate(k.canary, &k.unit),
                rate(k.baseline, &k.unit)
            )
        })
        .collect();
    (!kernel.is_empty()).then(|| {
        format!(
            "kernel (canary / baseline, window means): {}",
            kernel.join(" · ")
        )
    })
}

/// `autocorrelation (lag-1): p99 0.93 per 30s sample → 0.05 per 10m block; …`
fn autocorrelation_line(r: &JudgeResult) -> String {
    let parts: Vec<String> = r
        .metrics
        .iter()
        .filter_map(|m| {
            let a = &m.autocorrelation;
            let r1 = a.blocks?;
            let mut s = m.name.clone();
            if let Some(p) = a.per_step {
                s += &format!(" {p:.2} per {} sample →", fmt_span(r.step_s));
            }
            s += &match r.switchback {
                Some(_) => format!(" {r1:.2} from pair to pair"),
                None => format!(" {r1:.2} per {} block", fmt_span(r.interval_s)),
            };
            if a.widened > 1.0005 {
                s += &format!(" (interval widened ×{:.2})", a.widened);
            }
            if let Some(b) = m
                .before
                .as_ref()
                .and_then(|b| b.autocorrelation.blocks.map(|r| (r, b)))
            {
                s += &format!(", before window {:.2}", b.0);
                if b.1.autocorrelation.widened > 1.0005 {
                    s += &format!(" (×{:.2})", b.1.autocorrelation.widened);
                }
            }
            Some(s)
        })
        .collect();
    if parts.is_empty() {
        "autocorrelation: too few blocks to measure".into()
    } else {
        format!("autocorrelation (lag-1): {}", parts.join("; "))
    }
}

fn hosts_table(r: &JudgeResult, m: &MetricJudgement) -> String {
    let mut t = super::table(&["host", "group", "mean", "vs baseline", "samples"]);
    let unit = Unit::of_metric(&m.name);
    let base = m.baseline_typical;
    for h in &m.hosts {
        t.add_row(vec![
            h.host.clone(),
            if h.canary { "canary" } else { "baseline" }.to_string(),
            unit.fmt_for(h.mean, h.mean.abs() / 100.0).show(h.mean),
            base.filter(|b| *b > 0.0).map_or("—".into(), |b| {
                format!("{:+.1}%", (h.mean / b - 1.0) * 100.0)
            }),
            thousands(h.samples),
        ]);
    }
    format!(
        "\n{} ({} blocks of {}, {} intervals with a group missing):\n{}\n",
        m.name,
        m.contrast.as_ref().map_or(0, |c| c.blocks),
        fmt_span(r.interval_s),
        m.missing,
        super::fit(&mut t)
    )
}

/// One line per `--follow` look, on stderr.
pub fn look_line(r: &JudgeResult) -> String {
    let parts: Vec<String> = r
        .metrics
        .iter()
        .map(|m| match &m.contrast {
            Some(c) => format!(
                "{} {} {}",
                m.name,
                percent_interval(&c.percent),
                word(c.verdict)
            ),
            None => format!("{} —", m.name),
        })
        .collect();
    format!(
        "look {} at {}: {} · {}",
        r.look,
        fmt_utc(r.to, false),
        parts.join(" · "),
        overall_word(r.overall)
    )
}
