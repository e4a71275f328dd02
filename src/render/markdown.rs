//! Markdown reports (tables, no images) for pull requests and issues: the same cells as the
//! terminal tables, drawn as pipe tables.

use super::Grid;
use crate::model::report::{CompareResult, RunKind, RunView};
use crate::units::Bytes;

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

/// Per bench workload metric: one row per size, one column per backing (median and, for the
/// others, the change vs the baseline backing).
pub fn bench_grids(v: &RunView) -> Vec<Grid> {
    v.curves
        .iter()
        .map(|c| {
            let mut header = vec!["size".to_string()];
            header.extend(c.lines.iter().map(|l| l.backing.clone()));
            let mut sizes: Vec<u64> = c
                .lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.size))
                .collect();
            sizes.sort_unstable();
            sizes.dedup();
            let mut g = Grid {
                title: format!(
                    "{} by region size (median; vs {}: Hodges–Lehmann change with its interval; huge coverage of the region; * below 99%)",
                    c.metric, c.baseline
                ),
                header,
                rows: Vec::new(),
                notes: Vec::new(),
            };
            let baseline = c.baseline.as_str();
            for s in sizes {
                let mut row = vec![Bytes(s).to_string()];
                for l in &c.lines {
                    row.push(match l.points.iter().find(|p| p.size == s) {
                        None => "-".into(),
                        Some(p) => {
                            let vs = p.vs_baseline.map_or(String::new(), |e| match (e.lo, e.hi) {
                                (Some(lo), Some(hi)) => {
                                    format!(" ({:+.1}% [{lo:+.1}, {hi:+.1}])", e.point)
                                }
                                _ => format!(" ({:+.1}%)", e.point),
                            });
                            // Huge backings show the coverage they really got.
                            let cov = match p.coverage {
                                Some(c) if l.backing != baseline => {
                                    format!(" · {:.0}% huge", c * 100.0)
                                }
                                _ => String::new(),
                            };
                            format!(
                                "{:.4}{vs}{cov}{}",
                                p.median,
                                if p.degraded { " *" } else { "" }
                            )
                        }
                    });
                }
                g.rows.push(row);
            }
            g
        })
        .collect()
}

/// Every table of one run's report, in order.
pub fn run_grids(v: &RunView) -> Vec<Grid> {
    let mut grids = Vec::new();
    if v.kind == RunKind::Bench {
        grids.extend(bench_grids(v));
    }
    grids.extend(super::run::report_grids(&v.report));
    if let Some(s) = system(v) {
        grids.push(super::status::snapshot_grid(&s));
    }
    grids
}

/// The stored `status` snapshot, when the run has one this version can read.
pub fn system(v: &RunView) -> Option<crate::probe::status::Status> {
    v.system.clone()
}

/// The answer lines of a stored run as it printed them (after a note when it was re-analysed),
/// as the terminal's `results show` prints them first.
pub fn answer_lines(v: &RunView) -> Vec<String> {
    let reanalysed = v
        .decided
        .as_ref()
        .and_then(|d| d.reanalysed.as_ref())
        .map(|n| format!("note: {n}"));
    let answer = match &v.record {
        Some(r) => super::run::answer_lines(r),
        // An imported run: its analysis alone.
        None => {
            let facts = super::summary::RunFacts {
                blocks: v.report.primary().map_or(0, |m| m.complete_blocks),
                ..Default::default()
            };
            super::summary::answer(&v.report)
                .into_iter()
                .chain(super::summary::run_line(&v.report, &facts))
                .collect()
        }
    };
    reanalysed.into_iter().chain(answer).collect()
}

/// What the run said beside its answer: its design, servers and notes (after the charts in a
/// report).
pub fn detail_lines(v: &RunView) -> Vec<String> {
    super::run::stored_details(&v.report, &v.said)
}

pub fn runs(views: &[RunView]) -> String {
    let mut o = String::new();
    for v in views {
        o += &format!("## {}\n\n", cell(&heading(v)));
        if v.kind != RunKind::Bench {
            o += &format!("```\n{}\n```\n\n", answer_lines(v).join("\n"));
            let details = detail_lines(v);
            if !details.is_empty() {
                o += &format!("```\n{}\n```\n\n", details.join("\n"));
            }
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
