//! `hugelab bench` for people: the JVM article's table, plus coverage, ratios and evidence.

use super::table;
use crate::analyze::bench::{Direction, direction};
use crate::backing::Backing;
use crate::model::bench::{BenchResult, CellEvidence};
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

pub fn render(r: &BenchResult) -> String {
    let mut o = String::new();
    let level = format!("{}%", r.plan.confidence * 100.0);
    let mut t = table(&[
        "benchmark",
        "size",
        "backing",
        "score ± error",
        "unit",
        "coverage",
        "vs 4k",
        "faults/op",
        "dTLB misses/op",
    ]);
    for c in &r.cells {
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
                    (Some(lo), Some(hi)) => format!("{:.3}× [{:.3}, {:.3}]{mark}", e.point, lo, hi),
                    _ => format!("{:.3}× (too few rounds for an interval)", e.point),
                }
            }
        };
        let per_op = |e: PerfEvent| {
            ev.and_then(|x| x.per_op.get(&e))
                .map_or("-".to_string(), |v| format!("{v:.4}"))
        };
        t.add_row(vec![
            c.metric.label().to_string(),
            Bytes(c.size).to_string(),
            c.backing.to_string(),
            format!("{} ± {}", sig3(c.score), c.error.map_or("-".into(), sig3)),
            c.metric.unit().to_string(),
            cov,
            vs,
            per_op(PerfEvent::PageFaults),
            per_op(PerfEvent::DtlbLoadMisses),
        ]);
    }
    let _ = writeln!(o, "{}", super::fit(&mut t));
    let _ = writeln!(
        o,
        "score ± error: mean of {} rounds with its {level} Student-t interval. coverage: share of the region verified on the \
backing's page size (smaps, or folio sizes from pagemap). vs 4k: ratio to the 4k backing paired by round \
(Hodges–Lehmann, {level} signed-rank interval); `better`/`worse` when the interval excludes 1, `~` when it does not.",
        r.plan.rounds
    );
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
        let _ = writeln!(
            o,
            "pretouch/fault not measured where the region is smaller than one page of the backing: {}",
            list.join(", ")
        );
    }
    for c in &r.settings_changed {
        let _ = writeln!(o, "changed for the run and restored: {c}");
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(o, "seed {}; {:.0} s", r.plan.seed, r.elapsed_s);
    o
}
