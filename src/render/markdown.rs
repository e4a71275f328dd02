//! Markdown reports (tables, no images) for pull requests and issues: the same cells as the
//! terminal tables, drawn as pipe tables.

use super::Grid;
use crate::model::report::{CompareResult, RunKind, RunView};

/// A cell safe inside a pipe table.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A grid as a titled pipe table with its notes as a list.
pub fn grid(g: &Grid, level: &str) -> String {
    let mut o = String::new();
    let mut title = g.title.lines();
    if let Some(first) = title.next() {
        o += &format!("{level} {}\n\n", cell(first));
    }
    for l in title {
        o += &format!("{}\n\n", cell(l));
    }
    o += &format!(
        "| {} |\n|{}\n",
        g.header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(g.header.len())
    );
    for r in &g.rows {
        o += &format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    o.push('\n');
    for n in &g.notes {
        o += &format!("- {}\n", n.trim());
    }
    if !g.notes.is_empty() {
        o.push('\n');
    }
    o
}

/// The heading line of one stored run.
pub fn heading(v: &RunView) -> String {
    let what = match v.kind {
        RunKind::Run => "run",
        RunKind::Bench => "bench",
        RunKind::Imported => "imported run",
    };
    // The label only when it says more than the kind of run (a bench is stored as "bench").
    let label = v
        .meta
        .label
        .as_deref()
        .filter(|l| *l != what)
        .map_or(String::new(), |l| format!("“{l}” "));
    format!(
        "{what} {}: {label}{} ({}, {}, {}, kernel {})",
        v.meta.id,
        v.meta.command.join(" "),
        v.meta.created,
        v.meta.status,
        v.meta.host,
        v.meta.kernel.as_deref().unwrap_or("-")
    )
}

/// Every table of one stored result, in order: a bench's own tables; a run's tables as
/// `results show` prints them; the machine's huge-page state when it started.
pub fn run_grids(v: &RunView) -> Vec<Grid> {
    let mut grids = match (&v.bench, &v.record) {
        (Some(b), _) => super::bench::grids(b),
        (None, Some(r)) => {
            let p = super::run::parts(r, &v.said, &[], super::run::Print::Stored);
            p.grids.into_iter().chain(p.calibration).collect()
        }
        (None, None) => Vec::new(),
    };
    if let Some(s) = system(v) {
        grids.push(super::status::snapshot_grid(&s));
    }
    grids
}

/// The stored `status` snapshot, when the run has one this version can read.
pub fn system(v: &RunView) -> Option<crate::probe::status::Status> {
    v.system.clone()
}

/// The answer lines of a stored result as it printed them (after the notes on how it was read:
/// rebuilt, or at another decision than its own), as `results show` prints them first.
pub fn answer_lines(v: &RunView) -> Vec<String> {
    let read_as = v.read_as.iter().map(|n| format!("note: {n}"));
    let answer = match (&v.bench, &v.record) {
        (Some(b), _) => super::bench::answer_lines(b),
        (None, Some(r)) => super::run::parts(r, &v.said, &[], super::run::Print::Stored).answer,
        (None, None) => Vec::new(),
    };
    read_as.chain(answer).collect()
}

/// What a stored result said beside its answer and tables: a run's design, servers, why, notes,
/// stall contrasts and VM advice; a bench's legend, what it did not measure, its settings and
/// notes (after the charts in a report).
pub fn detail_lines(v: &RunView) -> Vec<String> {
    match (&v.bench, &v.record) {
        (Some(b), _) => super::bench::closing_lines(b),
        (None, Some(r)) => {
            let p = super::run::parts(r, &v.said, &[], super::run::Print::Stored);
            p.why
                .iter()
                .chain(&p.after)
                .flat_map(|l| super::summary::wrap_hanging(l, 2))
                .chain(p.servers)
                .chain(p.vm)
                .collect()
        }
        (None, None) => Vec::new(),
    }
}

pub fn runs(views: &[RunView]) -> String {
    let mut o = String::new();
    for v in views {
        o += &format!("## {}\n\n", cell(&heading(v)));
        o += &format!("```\n{}\n```\n\n", answer_lines(v).join("\n"));
        let details = detail_lines(v);
        if !details.is_empty() {
            o += &format!("```\n{}\n```\n\n", details.join("\n"));
        }
        for g in run_grids(v) {
            o += &grid(&g, "###");
        }
        for g in stall_grids(v) {
            o += &grid(&g, "###");
        }
    }
    o
}

/// `run --trace`: per stall kind, events per trial in each power-of-two latency bucket.
pub fn stall_grids(v: &RunView) -> Vec<Grid> {
    v.stalls
        .iter()
        .map(|h| {
            let mut header = vec!["latency ≥".to_string()];
            header.extend(h.arms.iter().map(|a| format!("{} (per trial)", a.arm)));
            let mut edges: Vec<u64> = h
                .arms
                .iter()
                .flat_map(|a| a.buckets.iter().map(|b| b.0))
                .collect();
            edges.sort_unstable();
            edges.dedup();
            let rows = edges
                .iter()
                .map(|e| {
                    let mut row = vec![
                        crate::units::Unit::Time(1e-9)
                            .fmt_for(*e as f64, 0.0)
                            .show(*e as f64),
                    ];
                    for a in &h.arms {
                        let n = a.buckets.iter().find(|b| b.0 == *e).map_or(0, |b| b.1);
                        row.push(format!("{:.2}", n as f64 / a.trials.max(1) as f64));
                    }
                    row
                })
                .collect();
            Grid {
                title: format!(
                    "run --trace, {}: latency histogram, events per traced trial",
                    h.kind
                ),
                header,
                rows,
                notes: Vec::new(),
            }
        })
        .collect()
}

pub fn compare(c: &CompareResult) -> String {
    format!(
        "## hugelab compare\n\n```\n{}\n```\n\n{}",
        super::summary::compare_answer(c).join("\n"),
        grid(&super::compare::compare_grid(c), "###")
    )
}
