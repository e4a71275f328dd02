//! `bench tlb` on a terminal: the reach and the miss cost first, CPUID's geometry beside them,
//! then the spans: 4 KiB time and each huge backing's ratio.

use super::summary::{thousands, wrap_hanging};
use crate::model::stats::Estimate;
use crate::model::tlb::Sweep;
use crate::model::tlb::TlbReach;
use crate::probe::tlb::{TlbKind, TlbLevel};
use crate::units::{Bytes, fmt_interval};

fn ns(e: &Estimate) -> String {
    match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => format!("{:+.1} ns {}", e.point, fmt_interval(lo, hi, 1)),
        _ => format!("{:+.1} ns", e.point),
    }
}

fn span(pages: u64) -> String {
    Bytes(pages * 4096).to_string()
}

/// "second-level data 3,072 × 4K (12M)".
fn level_words(l: &TlbLevel) -> String {
    let kind = match l.kind {
        TlbKind::Data => "data",
        TlbKind::Instruction => "instruction",
        TlbKind::Unified => "unified",
        TlbKind::Load => "load",
        TlbKind::Store => "store",
    };
    format!(
        "L{} {kind} {} × {} ({})",
        l.level,
        thousands(l.entries as usize),
        Bytes(l.page_size),
        Bytes(l.reach())
    )
}

/// The reach in words: where 4 KiB pages fit with confidence and where they miss. The span
/// just below the first miss is "fits" only when its interval says so; otherwise it is named
/// as unresolved, with its ratio.
fn knee_words(s: &Sweep, lo: u64, hi: u64) -> String {
    let fits = |p: &crate::model::tlb::Point| {
        p.ratio
            .lo
            .is_some_and(|l| l >= 1.0 - crate::model::tlb::FASTER_BY)
    };
    let below: Vec<&crate::model::tlb::Point> = s.points.iter().filter(|p| p.pages <= lo).collect();
    let at_lo = below.last().filter(|p| p.pages == lo);
    let entries = format!(
        "about {}–{} entries",
        thousands(lo as usize),
        thousands(hi as usize)
    );
    match at_lo {
        Some(p) if !fits(p) => {
            let unresolved = format!(
                "{} pages: {:.3}×, not resolved at the 5% rule",
                thousands(lo as usize),
                p.ratio.point
            );
            match below.iter().rev().find(|p| fits(p)) {
                Some(f) => format!(
                    "reach: 4 KiB pages fit up to {} pages and miss from {} ({}–{} of span; {unresolved}): {entries}",
                    thousands(f.pages as usize),
                    thousands(hi as usize),
                    span(f.pages),
                    span(hi)
                ),
                None => format!(
                    "reach: 4 KiB pages miss from {} pages ({} of span) and fit with confidence at no smaller span ({unresolved}): {entries}",
                    thousands(hi as usize),
                    span(hi)
                ),
            }
        }
        _ => format!(
            "reach: 4 KiB pages fit up to {} pages and miss from {} ({}–{} of span): {entries}",
            thousands(lo as usize),
            thousands(hi as usize),
            span(lo),
            span(hi)
        ),
    }
}

/// Every level the timing resolved, where it resolved more than one: `levels by timing: 1:
/// about 96–128 entries (384K–512K), a miss there +2.4 ns/access · 2: about 1,536–2,048 entries
/// (6M–8M), a miss there +16 ns/access`.
fn measured_levels(s: &Sweep) -> Option<String> {
    if s.levels.len() < 2 {
        return None;
    }
    let parts: Vec<String> = s
        .levels
        .iter()
        .map(|l| {
            let m = &l.miss_ns;
            let interval = match (m.lo, m.hi) {
                (Some(lo), Some(hi)) => format!(" [{lo:.1}, {hi:.1}]"),
                _ => String::new(),
            };
            format!(
                "{}: about {}–{} entries ({}–{}), a miss there +{:.1}{interval} ns/access",
                l.level,
                thousands(l.entries.0 as usize),
                thousands(l.entries.1 as usize),
                span(l.entries.0),
                span(l.entries.1),
                m.point
            )
        })
        .collect();
    Some(format!("levels by timing: {}", parts.join(" · ")))
}

/// The answer lines of one sweep.
fn reach_lines(t: &TlbReach, s: &Sweep, confidence: f64) -> Vec<String> {
    let mut out = Vec::new();
    let largest = s.points.last().map_or(0, |p| p.pages);
    match (s.knee, &s.located) {
        (Some((0, hi)), located) => out.push(below_smallest(s, hi, located.as_ref())),
        (Some((lo, hi)), located) => {
            out.push(match located {
                Some(l) if l.resolved => format!(
                    "reach: about {}–{} entries of 4 KiB ({}–{} of span), located at {} over the whole sweep ({} resamples of its rounds)",
                    thousands(lo as usize),
                    thousands(hi as usize),
                    span(lo),
                    span(hi),
                    level(l.confidence),
                    thousands(l.resamples)
                ),
                Some(l) => format!(
                    "reach: not resolved between {} and {} pages ({}–{} of span) at this noise (at {} over the whole sweep){}",
                    thousands(lo as usize),
                    thousands(hi as usize),
                    span(lo),
                    span(hi),
                    level(l.confidence),
                    to_settle(l)
                ),
                None => knee_words(s, lo, hi),
            });
            if located.as_ref().is_none_or(|l| l.resolved) {
                out.extend(measured_levels(s));
            }
        }
        (None, Some(l)) if !l.resolved => out.push(format!(
            "reach: not resolved between {} pages ({}) and beyond the largest span, {} pages, at this noise: {:.1}% of {} resamples of the rounds find no knee (at {}){}",
            thousands(l.between.0 as usize),
            span(l.between.0),
            thousands(largest as usize),
            l.no_knee * 100.0,
            thousands(l.resamples),
            level(l.confidence),
            to_settle(l)
        )),
        (None, _) => out.push(format!(
            "reach: not exceeded — {} stayed within {:.0}% of 4 KiB pages up to {} pages ({}); the TLB covers at least that",
            s.backing,
            crate::model::tlb::FASTER_BY * 100.0,
            thousands(largest as usize),
            span(largest)
        )),
    }
    let data: Vec<&TlbLevel> = t
        .geometry
        .levels
        .iter()
        .filter(|l| !matches!(l.kind, TlbKind::Instruction))
        .collect();
    if data.is_empty() {
        out.push(format!(
            "CPUID: no geometry — {}; the timing is the only source",
            t.geometry.source
        ));
    } else {
        let list: Vec<String> = data.iter().map(|l| level_words(l)).collect();
        let verdict = match &t.agreement {
            Some(a) if a.agrees => format!(
                " — its L{} {} entries of 4 KiB agree with the timing",
                a.level,
                thousands(a.entries as usize)
            ),
            Some(a) => format!(
                " — DISAGREES: its L{} {} entries of 4 KiB are not where the timing puts the reach (a hypervisor's CPUID can describe another CPU, or entries are shared with other page sizes)",
                a.level,
                thousands(a.entries as usize)
            ),
            None => String::new(),
        };
        out.push(format!(
            "{}: {}{verdict}",
            t.geometry.source,
            list.join(", ")
        ));
    }
    let (first, last) = s.past();
    if let Some(f) = first {
        let share = f
            .extra_share
            .map_or(String::new(), |s| format!("+{:.0}% ", s * 100.0));
        let mut l = format!(
            "a miss: {} per access at {} pages ({share}on an access whose translation hits, {:.1} ns)",
            ns(&f.extra_ns),
            thousands(f.pages as usize),
            f.huge_ns
        );
        if let Some(z) = last.filter(|z| z.pages != f.pages) {
            l += &format!(
                "; {} at {} pages, as the page tables themselves leave the caches",
                ns(&z.extra_ns),
                thousands(z.pages as usize)
            );
        }
        out.push(l);
    }
    if t.hypervisor {
        out.push("under a hypervisor (cpuinfo): each miss walks the guest's page tables and, for every guest table access, the host's (a two-dimensional walk); the cost above is both, and the host's page size is not visible from inside".into());
    }
    out.push(format!(
        "at {}: each span alone in the table (* when {} is at least {:.0}% faster with that confidence), the reach over all of them",
        level(confidence),
        s.backing,
        crate::model::tlb::FASTER_BY * 100.0
    ));
    out
}

fn level(confidence: f64) -> String {
    crate::model::verdict::fmt_level(confidence)
}

/// The reach line of a range whose lower end is below the smallest span: at the smallest span
/// itself "already miss"; above it "miss from at most"; not resolved, said so, with the rounds.
fn below_smallest(s: &Sweep, hi: u64, located: Option<&crate::model::tlb::Located>) -> String {
    let smallest = s.points.first().map_or(hi, |p| p.pages);
    let at = located.map_or(String::new(), |l| {
        format!(" (at {} over the whole sweep)", level(l.confidence))
    });
    let (n, sp) = (thousands(smallest as usize), span(smallest));
    match located {
        Some(l) if !l.resolved => format!(
            "reach: not resolved below {} pages ({}) at this noise: it may lie below the smallest span, {n} pages ({sp}){at}{}",
            thousands(hi as usize),
            span(hi),
            to_settle(l)
        ),
        _ if hi <= smallest => format!(
            "4 KiB pages already miss at the smallest span, {n} pages ({sp}): the reach is below it{at}"
        ),
        _ => format!(
            "4 KiB pages miss from at most {} pages ({}): the reach is below that, perhaps below the smallest span, {n} pages ({sp}){at}",
            thousands(hi as usize),
            span(hi)
        ),
    }
}

/// How sure a stated reach is: " at 99.9%", ", not resolved at this noise", or nothing for a
/// run stored before the reach was located over the whole sweep.
pub fn sureness(s: &Sweep) -> String {
    match &s.located {
        Some(l) if l.resolved => format!(" at {}", level(l.confidence)),
        Some(_) => ", not resolved at this noise".into(),
        None => String::new(),
    }
}

/// "; about 40 rounds (-r 40) would settle every span in it", where the spans' own intervals
/// say how many.
fn to_settle(l: &crate::model::tlb::Located) -> String {
    l.rounds_to_resolve.map_or(String::new(), |r| {
        format!(
            "; about {} rounds (-r {r}) would settle every span in it",
            thousands(r)
        )
    })
}

/// `bench tlb`'s answer: the reach and the miss cost first, CPUID's geometry beside them.
pub fn answer_lines(t: &TlbReach, confidence: f64) -> Vec<String> {
    let Some(s) = t.headline() else {
        return vec![
            "TLB: no huge backing was measured beside 4 KiB pages, so no reach can be read (give -b 4k,thp)".into(),
        ];
    };
    let mut o = vec![format!(
        "TLB, from timing: one line of every 4 KiB page in random order, 4k against {}:",
        s.backing
    )];
    let mut lines = reach_lines(t, s, confidence);
    // Beside the range: the range against this host's earlier runs.
    if let Some(a) = &t.across {
        lines.insert(1.min(lines.len()), across_line(a, confidence));
    }
    for line in lines {
        o.extend(wrap_hanging(&format!("  {line}"), 4));
    }
    o
}

/// The range against this host's earlier runs at the same level: whether every range overlaps
/// every other, and what that supports (a study is [`STUDY_RUNS`] runs or more).
///
/// [`STUDY_RUNS`]: crate::model::tlb::STUDY_RUNS
fn across_line(a: &crate::model::tlb::AcrossRuns, confidence: f64) -> String {
    use crate::model::tlb::STUDY_RUNS;
    let pages = |(lo, hi): (u64, Option<u64>)| match hi {
        Some(hi) => format!(
            "{}–{} pages",
            thousands(lo as usize),
            thousands(hi as usize)
        ),
        None => format!("above {} pages", thousands(lo as usize)),
    };
    let (n, at) = (a.runs.len(), level(confidence));
    let first = a
        .runs
        .first()
        .map_or("", |r| r.created.get(..10).unwrap_or(""));
    match (a.common, a.apart) {
        (_, Some((i, j))) => {
            let name = |r: &crate::model::tlb::RunRange| {
                r.run
                    .map_or("this run's".to_string(), |id| format!("run {id}'s"))
            };
            let (x, y) = (&a.runs[i], &a.runs[j]);
            let lo = a.runs.iter().map(|r| r.between.0).min().unwrap_or(0);
            let hi = a.runs.iter().map(|r| r.between.1).max().flatten();
            let hi = hi.filter(|_| a.runs.iter().all(|r| r.between.1.is_some()));
            format!(
                "across runs: {} {} and {} {} do not overlap ({n} runs at {at} on this host since {first}): the reach moves between runs by more than one run's range shows, so {at} holds within a run, not across runs; across them it lies in {}",
                name(x),
                pages(x.between),
                name(y),
                pages(y.between),
                pages((lo, hi))
            )
        }
        (Some(common), None) if n >= STUDY_RUNS => format!(
            "across runs: all {n} ranges this host measured at {at} since {first} overlap, in {}: a study of {STUDY_RUNS} or more runs, so the range holds at {at} between runs here, not only within one",
            pages(common)
        ),
        (Some(common), None) if n > 1 => format!(
            "across runs: the {n} ranges this host measured at {at} since {first} overlap, in {}; {} more runs make a study of whether {at} holds between runs, not only within one",
            pages(common),
            STUDY_RUNS - n
        ),
        _ => format!(
            "across runs: the first range this host measured at {at}; one run resamples its own rounds, which cannot show the host moving between runs ({STUDY_RUNS} runs here are a study of that)"
        ),
    }
}

/// The spans: 4 KiB time per access, each huge backing's ratio (* past the 5% rule), and what
/// 4 KiB pages cost beyond the headline backing.
pub fn span_grid(t: &TlbReach) -> Option<super::Grid> {
    let s = t.headline()?;
    let mut header = vec!["span".to_string(), "pages".into(), "4k ns".into()];
    header.extend(t.sweeps.iter().map(|s| format!("{} ×", s.backing)));
    header.push(format!("{} extra ns", s.backing));
    let mut g = super::Grid {
        title: String::new(),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    for p in &s.points {
        let mut row = vec![
            span(p.pages),
            thousands(p.pages as usize),
            format!("{:.2}", p.base_ns),
        ];
        for w in &t.sweeps {
            row.push(
                w.points
                    .iter()
                    .find(|q| q.pages == p.pages)
                    .map_or("—".into(), |q| {
                        format!(
                            "{:.3}{}",
                            q.ratio.point,
                            if q.past_reach() { " *" } else { "" }
                        )
                    }),
            );
        }
        row.push(format!("{:+.1}", p.extra_ns.point));
        g.rows.push(row);
    }
    Some(g)
}

/// One line for `status` and the answers that cite it: "TLB (bench tlb, run 12, 2026-11-25):
/// reach about 2,048–3,072 entries of 4 KiB (8M–12M); a miss +9.2 ns per access at 4,096 pages".
pub fn summary_line(t: &TlbReach, run: i64, created: &str) -> String {
    let when = created.split('T').next().unwrap_or(created);
    let mut s = format!("TLB (measured by bench tlb, run {run}, {when}): ");
    match t.headline() {
        Some(sw) => {
            match sw.knee {
                Some((lo, hi)) => {
                    s += &format!(
                        "reach about {}–{} entries of 4 KiB ({}–{}){}",
                        thousands(lo as usize),
                        thousands(hi as usize),
                        span(lo),
                        span(hi),
                        sureness(sw)
                    )
                }
                None if sw.located.as_ref().is_some_and(|l| !l.resolved) => {
                    let from = sw.located.as_ref().map_or(0, |l| l.between.0);
                    s += &format!(
                        "reach not resolved: beyond {} pages of 4 KiB ({}), perhaps beyond the largest span",
                        thousands(from as usize),
                        span(from)
                    )
                }
                None => {
                    let top = sw.points.last().map_or(0, |p| p.pages);
                    s += &format!(
                        "reach beyond {} pages of 4 KiB ({})",
                        thousands(top as usize),
                        span(top)
                    )
                }
            }
            if let (Some(f), _) = sw.past() {
                s += &format!(
                    "; a miss {} per access at {} pages",
                    ns(&f.extra_ns),
                    thousands(f.pages as usize)
                );
            }
            if let Some(a) = &t.agreement {
                s += &format!(
                    "; CPUID L{} {} entries {}",
                    a.level,
                    thousands(a.entries as usize),
                    if a.agrees { "agrees" } else { "DISAGREES" }
                );
            }
        }
        None => s += "no huge backing was measured",
    }
    s
}

/// "50–265", or "50" when both ends agree.
fn range((lo, hi): (u64, u64)) -> String {
    if lo == hi {
        thousands(lo as usize)
    } else {
        format!("{}–{}", thousands(lo as usize), thousands(hi as usize))
    }
}

/// How many times the reach a need is, in words.
pub fn times(n: &crate::model::tlb::Need) -> String {
    let (a, b) = n.times;
    if b < 1.0 {
        "within it".into()
    } else if a < 1.0 {
        "at its edge".into()
    } else {
        format!("{a:.1}–{b:.1}× the reach")
    }
}

/// A sweep's rows (JMH: `Class.method size=N …`): per row whose `size` parameter is a number,
/// the 4 KiB TLB entries that many bytes need against the measured reach — a model that takes
/// `size` as the bytes the row touches, and says so.
pub fn row_why_line(
    rows: &[crate::model::tlb::Need],
    m: &crate::model::tlb::Measured,
) -> Option<String> {
    let (lo, hi) = m.reach.entries_4k()?;
    let parts: Vec<String> = rows
        .iter()
        .map(|n| {
            format!(
                "{}: {} entries ({}{})",
                n.name,
                thousands(n.entries as usize),
                times(n),
                level_of(n)
            )
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "why, row by row (a model that takes each row's size as the bytes it touches; the 4 KiB TLB reach bench tlb measured here, run {}, {}–{} entries{}): {}",
            m.run,
            thousands(lo as usize),
            thousands(hi as usize),
            reach_sureness(m),
            parts.join(" · ")
        )
    })
}

/// How sure the stored reach is (`sureness` of its headline sweep).
fn reach_sureness(m: &crate::model::tlb::Measured) -> String {
    m.reach.headline().map_or(String::new(), sureness)
}

/// Where a need falls among the levels the timing resolved, when it resolved more than one:
/// `; past level 1, within level 2` — the level whose misses the memory pays.
fn level_of(n: &crate::model::tlb::Need) -> String {
    match n.level {
        None => String::new(),
        Some((0, _)) => "; within level 1".into(),
        Some((past, Some(within))) => format!("; past level {past}, within level {within}"),
        Some((past, None)) => format!("; past level {past}, the last one measured"),
    }
}

/// "why (a model: …)": TLB entries the memory needs on each arm's pages, against the 4 KiB
/// reach `bench tlb` measured (`needs`, as `analyze::tlb::needs` placed them).
pub fn why_line(
    what: &str,
    needs: &[crate::model::tlb::Need],
    m: &crate::model::tlb::Measured,
    unresolved: Option<&str>,
) -> Option<String> {
    let (lo, hi) = m.reach.entries_4k()?;
    if needs.is_empty() {
        return None;
    }
    let parts: Vec<String> = needs
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{}{} on {}'s pages ({}{})",
                thousands(n.entries as usize),
                if i == 0 { " TLB entries" } else { "" },
                n.name,
                times(n),
                level_of(n)
            )
        })
        .collect();
    // Beside no measured effect the model explains nothing: it says what it predicts.
    let head = match unresolved {
        None => "why (a model".to_string(),
        Some(metric) => format!(
            "what the TLB model predicts (no effect on {metric} was resolved, so it explains none; a model"
        ),
    };
    Some(format!(
        "{head}: the 4 KiB TLB reach bench tlb measured here, run {}, {}–{} entries{}): {what} needs {}",
        m.run,
        thousands(lo as usize),
        thousands(hi as usize),
        reach_sureness(m),
        parts.join(" · ")
    ))
}

mod hot;
pub use hot::hot_text;

#[cfg(test)]
mod tests;
