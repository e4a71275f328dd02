//! `hugelab bench` for people: the JVM article's table, plus coverage, ratios and evidence.

use super::Grid;
use crate::backing::Backing;
use crate::model::bench::Direction;
use crate::model::bench::direction;
use crate::model::bench::{BenchResult, CellEvidence};
use crate::model::stats::Estimate;
use crate::probe::pmu::PerfEvent;
use crate::units::Bytes;
use crate::workload::{Metric, Workload};
use std::fmt::Write;

fn workload_of(m: Metric) -> Workload {
    match m {
        Metric::TouchNs => Workload::Touch,
        Metric::ChaseNs => Workload::Chase,
        Metric::CommitGbs | Metric::FreeGbs => Workload::Pretouch,
        Metric::ReadGbs | Metric::WriteGbs => Workload::Stream,
        Metric::FaultNs => Workload::Fault,
        Metric::TlbNs => Workload::Tlb,
    }
}

fn evidence(r: &BenchResult, m: Metric, size: u64, b: Backing) -> Option<&CellEvidence> {
    r.evidence
        .iter()
        .find(|e| e.workload == workload_of(m) && e.size == size && e.backing == b)
}

/// Three significant digits, enough for timings and bandwidths.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A ratio to the baseline as people say it: `-23% (faster)`, `+8% (slower)`, or `4.6× faster`
/// once it is beyond a factor of two; where its interval contains 1 (not resolved at the bench
/// level) the estimate and `(not resolved)`, never a direction it did not show.
pub fn ratio_words(metric: Metric, e: &Estimate) -> String {
    let r = e.point;
    if direction(metric, e) == Direction::Unresolved {
        return if r >= 2.0 || r <= 0.5 {
            format!("×{} (not resolved)", sig3(r))
        } else {
            format!("{:+.0}% (not resolved)", (r - 1.0) * 100.0)
        };
    }
    let faster_if_up = metric.higher_is_better();
    if r >= 2.0 || r <= 0.5 {
        let (factor, up) = if r >= 1.0 {
            (r, true)
        } else {
            (1.0 / r, false)
        };
        let word = if up == faster_if_up {
            "faster"
        } else {
            "slower"
        };
        let d = if factor >= 10.0 { 0 } else { 1 };
        format!("{factor:.d$}× {word}")
    } else {
        // The sign is the metric's own (time per op down, GB/s down): the word says which way
        // is better, so that one line can hold both kinds.
        let word = if (r >= 1.0) == faster_if_up {
            "faster"
        } else {
            "slower"
        };
        format!("{:+.0}% ({word})", (r - 1.0) * 100.0)
    }
}

/// A cell's score with its error, or, when the interval would reach below zero (rounds spread
/// over two modes, one near zero), the range of its rounds instead: a score that cannot be
/// negative has no error bar below zero.
pub fn score_words(c: &crate::model::bench::CellStats) -> String {
    match c.error {
        Some(e) if e >= c.score && c.score > 0.0 => format!(
            "{} (rounds {}–{}: too spread for ±)",
            sig3(c.score),
            sig3(c.summary.min),
            sig3(c.summary.max)
        ),
        e => format!("{} ± {}", sig3(c.score), e.map_or("-".into(), sig3)),
    }
}

/// The answer first: at the largest size measured, per huge backing, each workload's change
/// against the baseline (the bench's paired ratios), and whether the backing was obtained.
pub fn headline(r: &BenchResult) -> Vec<String> {
    let Some(size) = r.cells.iter().map(|c| c.size).max() else {
        return vec!["nothing was measured".into()];
    };
    let baseline = r
        .cells
        .iter()
        .find(|c| c.size == size && c.vs_baseline.is_none())
        .map(|c| c.backing.to_string())
        .unwrap_or_else(|| "4k".into());
    let mut backings: Vec<Backing> = Vec::new();
    for c in r
        .cells
        .iter()
        .filter(|c| c.size == size && c.vs_baseline.is_some())
    {
        if !backings.contains(&c.backing) {
            backings.push(c.backing);
        }
    }
    let mut out = vec![format!(
        "at {} (the largest size), vs {baseline}, each change resolved at {} or said not to be:",
        Bytes(size),
        crate::model::verdict::fmt_level(r.plan.confidence)
    )];
    let w = backings
        .iter()
        .map(|b| b.to_string().len())
        .max()
        .unwrap_or(0);
    for b in backings {
        let mut parts: Vec<String> = Vec::new();
        for c in r.cells.iter().filter(|c| c.size == size && c.backing == b) {
            if let Some(e) = &c.vs_baseline {
                parts.push(format!("{} {}", c.metric.label(), ratio_words(c.metric, e)));
            }
        }
        let degraded: Vec<String> = r
            .evidence
            .iter()
            .filter(|e| e.size == size && e.backing == b && e.coverage.degraded)
            .map(|e| {
                format!(
                    "{} only {} huge",
                    e.workload.name(),
                    e.coverage
                        .fraction
                        .map_or("partly".into(), |f| format!("{:.0}%", f * 100.0))
                )
            })
            .collect();
        if !degraded.is_empty() {
            parts.push(format!("DEGRADED: {}", degraded.join(", ")));
        }
        let head = format!("  {:w$}  ", b.to_string());
        out.extend(super::summary::wrap_hanging(
            &format!("{head}{}", parts.join(" · ")),
            head.len(),
        ));
    }
    out
}

/// A bench's answer, as every view prints it first: for `bench tlb` the reach and the miss cost;
/// for the others the headline at the largest size and why.
pub fn answer_lines(r: &BenchResult) -> Vec<String> {
    if let Some(t) = &r.tlb {
        return super::tlb::answer_lines(t, r.plan.confidence);
    }
    let mut out = headline(r);
    for l in why(r) {
        out.extend(super::summary::wrap_hanging(&l, 2));
    }
    out
}

/// A bench's tables, the same cells in every view: per workload metric one row per size and
/// backing (score ± error, coverage, the ratio to the baseline with its interval, per-op
/// counts); for `bench tlb` the spans.
pub fn grids(r: &BenchResult) -> Vec<Grid> {
    if let Some(t) = &r.tlb {
        return super::tlb::span_grid(t).into_iter().collect();
    }
    let tlb = r
        .evidence
        .iter()
        .any(|e| e.per_op.contains_key(&PerfEvent::DtlbLoadMisses));
    let mut metrics: Vec<Metric> = Vec::new();
    for c in &r.cells {
        if !metrics.contains(&c.metric) {
            metrics.push(c.metric);
        }
    }
    metrics
        .into_iter()
        .map(|m| metric_grid(r, m, tlb))
        .collect()
}

/// One workload metric's table.
fn metric_grid(r: &BenchResult, m: Metric, tlb: bool) -> Grid {
    let mut header = vec![
        "size",
        "backing",
        "score ± error",
        "coverage",
        "vs baseline",
        "faults/op",
    ];
    if tlb {
        header.push("dTLB misses/op");
    }
    let better = if m.higher_is_better() {
        "higher is better"
    } else {
        "lower is better"
    };
    let mut g = Grid::new(format!("{} ({}, {better})", m.label(), m.unit()), &header);
    for c in r.cells.iter().filter(|c| c.metric == m) {
        let ev = evidence(r, c.metric, c.size, c.backing);
        let cov = match ev.map(|e| &e.coverage) {
            None => "-".to_string(),
            Some(cv) => match cv.fraction {
                Some(f) if cv.degraded => format!("{:.1}% DEGRADED", f * 100.0),
                Some(f) => format!("{:.1}%", f * 100.0),
                None => "unverified".into(),
            },
        };
        let vs = match &c.vs_baseline {
            None => String::new(),
            Some(e) => {
                let mark = match direction(c.metric, e) {
                    Direction::Better => " better",
                    Direction::Worse => " worse",
                    Direction::Unresolved => " ~",
                };
                match (e.lo, e.hi) {
                    (Some(lo), Some(hi)) => {
                        format!("{}× [{}, {}]{mark}", sig3(e.point), sig3(lo), sig3(hi))
                    }
                    _ => format!("{}× (too few rounds)", sig3(e.point)),
                }
            }
        };
        let per_op = |e: PerfEvent| {
            ev.and_then(|x| x.per_op.get(&e))
                .map_or("-".to_string(), |v| sig3(*v))
        };
        let mut row = vec![
            Bytes(c.size).to_string(),
            c.backing.to_string(),
            score_words(c),
            cov,
            vs,
            per_op(PerfEvent::PageFaults),
        ];
        if tlb {
            row.push(per_op(PerfEvent::DtlbLoadMisses));
        }
        g.rows.push(row);
    }
    g
}

/// What a bench says after its tables: how to read them, what was not measured as asked, the
/// settings it changed and restored, its notes, the seed and the time.
pub fn closing_lines(r: &BenchResult) -> Vec<String> {
    let mut o = String::new();
    if r.tlb.as_ref().is_some_and(|t| t.headline().is_some()) {
        let _ = writeln!(
            o,
            "× = huge / 4 KiB time per access, paired by round; * that span alone past the 5% rule"
        );
    } else if r.tlb.is_none() {
        let level = crate::model::verdict::fmt_level(r.plan.confidence);
        let _ = writeln!(
            o,
            "{}",
            super::summary::wrap_hanging(&format!("score ± error: mean of {} rounds with its {level} Student-t interval. coverage: share of the region verified on the \
backing's page size (smaps, or folio sizes from pagemap). vs baseline: ratio to the baseline backing paired by round \
(Hodges–Lehmann, {level} signed-rank interval); `better`/`worse` when the interval excludes 1, `~` when it does not.",
            r.plan.rounds), 0).join("\n")
        );
        not_measured_lines(r, &mut o);
    }
    footer(r, &mut o);
    o.lines().map(str::to_string).collect()
}

/// A stored bench (`results show`): the notes on how it was read (rebuilt, or at another level
/// than its own), then everything it printed.
pub fn render_stored(r: &BenchResult, read_as: &[String]) -> String {
    let mut o = String::new();
    for n in read_as {
        for l in super::summary::wrap_hanging(&format!("note: {n}"), 2) {
            let _ = writeln!(o, "{l}");
        }
    }
    o + &render(r)
}

/// `bench` on a terminal: the answer, every table, then the closing lines.
pub fn render(r: &BenchResult) -> String {
    let mut o: String = answer_lines(r).into_iter().map(|l| l + "\n").collect();
    for g in grids(r) {
        // The TLB's spans follow its answer directly; each workload's table stands apart.
        if r.tlb.is_none() {
            o.push('\n');
        }
        o.push_str(&g.terminal());
    }
    for l in closing_lines(r) {
        let _ = writeln!(o, "{l}");
    }
    o
}

/// What was not measured as asked: cells whose backing was not (fully) obtained, backings
/// skipped, and sizes below one page of a backing.
fn not_measured_lines(r: &BenchResult, o: &mut String) {
    let degraded: Vec<&CellEvidence> = r
        .evidence
        .iter()
        .filter(|e| e.coverage.degraded || e.coverage.fraction.is_none())
        .collect();
    if !degraded.is_empty() {
        let _ = writeln!(o, "\nbacking not (fully) obtained:");
        for e in degraded {
            let _ = writeln!(
                o,
                "  {} {} {}: {}",
                e.workload.name(),
                Bytes(e.size),
                e.backing,
                e.coverage.note.as_deref().unwrap_or("unverified")
            );
        }
    }
    for s in r.skipped.iter().filter(|s| !s.below_page) {
        let at = s
            .size
            .map(|x| format!(" at {}", Bytes(x)))
            .unwrap_or_default();
        let _ = writeln!(o, "skipped {}{at}: {}", s.backing, s.reason);
    }
    let mut small: Vec<(Backing, u64)> = Vec::new();
    for s in r.skipped.iter().filter(|s| s.below_page) {
        let size = s.size.unwrap_or(0);
        match small.iter_mut().find(|(b, _)| *b == s.backing) {
            Some((_, max)) => *max = (*max).max(size),
            None => small.push((s.backing, size)),
        }
    }
    if !small.is_empty() {
        let list: Vec<String> = small
            .iter()
            .map(|(b, max)| format!("{b} up to {}", Bytes(*max)))
            .collect();
        let line = format!(
            "pretouch/fault not measured where the region is smaller than one page of the backing: {}",
            list.join(", ")
        );
        for l in super::summary::wrap_hanging(&line, 2) {
            let _ = writeln!(o, "{l}");
        }
    }
}

/// Why, at the largest size of the random-access workloads: the dTLB misses per operation
/// where a PMU counted them (measured, first), then the entries the region needs on each
/// backing's pages against the reach `bench tlb` measured here (a model, labelled so).
fn why(r: &BenchResult) -> Vec<String> {
    let mut out = Vec::new();
    let Some(size) = r.cells.iter().map(|c| c.size).max() else {
        return out;
    };
    let random = [Workload::Touch, Workload::Chase];
    let Some(w) = random.into_iter().find(|w| r.plan.workloads.contains(w)) else {
        return out;
    };
    let misses: Vec<String> = r
        .evidence
        .iter()
        .filter(|e| e.size == size && e.workload == w)
        .filter_map(|e| {
            e.per_op
                .get(&PerfEvent::DtlbLoadMisses)
                .map(|m| format!("{} {:.3}", e.backing, m))
        })
        .collect();
    if !misses.is_empty() {
        out.push(format!(
            "why (measured): dTLB load misses per {} op at {}: {}",
            w.name(),
            Bytes(size),
            misses.join(" · ")
        ));
    }
    if let (Some(m), Some(y)) = (&r.measured_tlb, &r.why) {
        let what = format!(
            "{}'s {} region (every page of it touched)",
            y.workload.name(),
            Bytes(y.size)
        );
        out.extend(super::tlb::why_line(&what, &y.needs, m, None));
    }
    out
}

/// What was changed and restored, the notes, the seed and the time.
fn footer(r: &BenchResult, o: &mut String) {
    for c in &r.settings_changed {
        let _ = writeln!(o, "changed for the run and restored: {c}");
    }
    for n in &r.notes {
        for l in super::summary::wrap_hanging(&format!("note: {n}"), 2) {
            let _ = writeln!(o, "{l}");
        }
    }
    let _ = writeln!(o, "seed {}; {:.0} s", r.plan.seed, r.elapsed_s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::Summary;

    fn est(point: f64, lo: f64, hi: f64) -> Estimate {
        Estimate {
            point,
            lo: Some(lo),
            hi: Some(hi),
            confidence: 0.999,
        }
    }

    #[test]
    fn one_line_holds_time_and_throughput_with_the_better_way_in_words() {
        // ns/op down 30%: faster; GB/s down 23%, not resolved: slower, with its mark.
        assert_eq!(
            ratio_words(Metric::TouchNs, &est(0.70, 0.65, 0.75)),
            "-30% (faster)"
        );
        assert_eq!(
            ratio_words(Metric::CommitGbs, &est(0.77, 0.5, 1.1)),
            "-23% (not resolved)"
        );
        assert_eq!(
            ratio_words(Metric::TouchNs, &est(0.4, 0.1, 1.2)),
            "×0.400 (not resolved)"
        );
        assert_eq!(
            ratio_words(Metric::CommitGbs, &est(4.0, 3.5, 4.5)),
            "4.0× faster"
        );
    }

    #[test]
    fn a_score_whose_interval_reaches_below_zero_is_given_as_its_rounds_range() {
        let rounds = [0.1, 0.12, 10.6, 10.7];
        let cell = |error| crate::model::bench::CellStats {
            metric: Metric::CommitGbs,
            size: 1 << 30,
            backing: Backing::Thp,
            summary: Summary {
                n: rounds.len(),
                mean: 5.38,
                median: 5.36,
                min: 0.1,
                max: 10.7,
                ..Summary::default()
            },
            score: 5.38,
            error,
            vs_baseline: None,
        };
        assert_eq!(
            score_words(&cell(Some(5.41))),
            "5.38 (rounds 0.100–10.7: too spread for ±)"
        );
        assert_eq!(score_words(&cell(Some(0.5))), "5.38 ± 0.500");
    }
}
