//! One self-contained HTML report: inline CSS (`report.css`), inline SVG charts (plotters' SVG
//! backend, in [`charts`]), no JavaScript, nothing loaded from the network. Tables are the
//! terminal's cells ([`Grid`]); every chart names its units, the level of its intervals and n.
//! Colours are the Okabe–Ito palette, which stays distinguishable with the common
//! colour-vision deficiencies.

mod charts;

use super::Grid;
use super::markdown::{heading, run_grids};
use crate::model::report::{CompareResult, RunView};
pub use charts::{ForestRow, forest_rows};
use charts::{
    bench_chart, coverage_bars, figure, forest, progression, readable, stall_chart, strip,
};
use plotters::prelude::RGBColor;

/// Okabe–Ito, without its yellow (too light on white).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(86, 180, 233),
    RGBColor(204, 121, 167),
    RGBColor(0, 0, 0),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const CSS: &str = include_str!("report.css");

/// Text for HTML element content and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head>\n<body>\n<h1>{}</h1>\n{body}</body></html>\n",
        esc(title),
        esc(title)
    )
}

/// A grid as an HTML table with its title above and notes below.
pub fn table(g: &Grid) -> String {
    let mut o = String::new();
    for (i, l) in g.title.lines().enumerate() {
        if i == 0 {
            o += &format!("<h3>{}</h3>\n", esc(l));
        } else {
            o += &format!("<p class=\"meta\">{}</p>\n", esc(l));
        }
    }
    o += "<table><thead><tr>";
    for h in &g.header {
        o += &format!("<th>{}</th>", esc(h));
    }
    o += "</tr></thead><tbody>\n";
    for r in &g.rows {
        o += "<tr>";
        for c in r {
            o += &format!("<td>{}</td>", esc(c));
        }
        o += "</tr>\n";
    }
    o += "</tbody></table>\n";
    if !g.notes.is_empty() {
        o += "<ul class=\"notes\">";
        for n in &g.notes {
            o += &format!("<li>{}</li>", esc(n.trim()));
        }
        o += "</ul>\n";
    }
    o
}

/// The answer a stored result printed first, as `results show` prints it.
fn answer(v: &RunView) -> String {
    format!(
        "<pre class=\"answer\">{}</pre>\n",
        esc(&super::markdown::answer_lines(v).join("\n"))
    )
}

/// The body of one stored result's section: its heading, its answer, its charts, the lines it
/// said beside its tables, then every table.
fn run_section(v: &RunView) -> String {
    let mut o = format!("<h2>{}</h2>\n", esc(&heading(v)));
    o += &answer(v);
    let level = crate::model::verdict::fmt_level(v.decided.confidence);
    for c in &v.curves {
        o += &bench_chart(c, &level);
    }
    if let Some(report) = v.report() {
        o += &run_charts(v, report);
    }
    let details = super::markdown::detail_lines(v);
    if !details.is_empty() {
        o += &format!(
            "<pre class=\"details\">{}</pre>\n",
            esc(&details.join("\n"))
        );
    }
    for g in run_grids(v) {
        o += &table(&g);
    }
    o
}

/// A run's charts: the primary metric's contrasts, then its costs'; then every trial, primary
/// metric first and the context metrics (recorded, not compared) last; the stall histograms and
/// the backing evidence.
fn run_charts(v: &RunView, report: &crate::model::analysis::ExperimentAnalysis) -> String {
    let mut o = String::new();
    let primary = crate::model::analysis::primary_index(report.metrics.iter().map(|m| &m.metric));
    let rank = |mi: usize| {
        let m = &report.metrics[mi].metric;
        (mi != primary, m.context, !m.cost, mi)
    };
    let mut order: Vec<usize> = (0..report.metrics.len()).collect();
    order.sort_by_key(|&mi| rank(mi));
    for &mi in &order {
        let m = &report.metrics[mi];
        let rows = forest_rows(report, mi);
        if rows.is_empty() {
            continue;
        }
        let axis = if m.metric.cost {
            format!(
                "{} vs baseline, % (right: MORE, left: LESS)",
                crate::model::costs::label(&m.metric.name)
            )
        } else {
            format!(
                "{} vs baseline, % (interval at the level shown)",
                m.metric.name
            )
        };
        o += &forest(
            &rows,
            report.effect * 100.0,
            &axis,
            &format!(
                "{}: each arm's change vs {} (point: Hodges–Lehmann estimate; bar: its interval at the level printed beside it; green band: ±δ = ±{}%); {} complete blocks.",
                m.metric.name,
                report.baseline,
                report.effect * 100.0,
                m.complete_blocks
            ),
        );
    }
    order.sort_by_key(|&mi| {
        let m = &report.metrics[mi].metric;
        (mi != primary, m.context, mi)
    });
    for &mi in &order {
        let m = &report.metrics[mi];
        // A metric no trial measured (a peak the sampler missed) has nothing to draw.
        if let Some(s) = v
            .series
            .iter()
            .find(|s| s.metric == m.metric.name && !s.points.is_empty())
        {
            let (s, u) = readable(s);
            let (s, u) = (&s, u.as_str());
            o += &figure(
                strip(s, &v.arms, u),
                &format!(
                    "{}: every successful trial per arm ({u}; n = {} in all; black bar: median; red crosses: flagged trials). Outliers are kept and visible.",
                    s.metric,
                    s.points.len()
                ),
            );
            o += &figure(
                progression(s, &v.arms, u),
                &format!(
                    "{} by position in the run (n = {}): the arms are interleaved in randomized blocks, so drift or a burst of host noise shows up in every arm at once.",
                    s.metric,
                    s.points.len()
                ),
            );
        }
    }
    for h in &v.stalls {
        o += &stall_chart(h);
    }
    if let Some(svg) = coverage_bars(report) {
        let n: Vec<String> = report
            .evidence
            .iter()
            .map(|e| format!("{} {}", e.arm, e.trials))
            .collect();
        o += &figure(
            svg,
            &format!(
                "Backing evidence: huge coverage of the child's memory at its peak resident size, per arm, % (mean over the sampled trials; trials: {}).",
                n.join(", ")
            ),
        );
    }
    o
}

pub fn runs(views: &[RunView]) -> String {
    let ids: Vec<String> = views.iter().map(|v| v.meta.id.to_string()).collect();
    let title = format!("hugelab report: run {}", ids.join(", "));
    page(&title, &views.iter().map(run_section).collect::<String>())
}

pub fn compare(c: &CompareResult) -> String {
    let n = c.rows.len();
    let rows: Vec<ForestRow> = c
        .rows
        .iter()
        .filter_map(|r| {
            let e = r.b_vs_a_percent?;
            Some(ForestRow {
                arm: r.arm.clone(),
                point: e.point,
                lo: e.lo,
                hi: e.hi,
                verdict: r
                    .verdict
                    .map_or("INCONCLUSIVE".into(), |v| format!("{v:?}").to_uppercase()),
                level: c.confidence,
            })
        })
        .collect();
    let mut body = String::new();
    if !rows.is_empty() {
        body += &forest(
            &rows,
            c.effect * 100.0,
            "change vs baseline, % (interval at the level shown)",
            &format!(
                "B vs A per arm, % of {} (unpaired: Hodges–Lehmann shift of log values, Mann–Whitney interval at {}; green band ±δ = ±{}%); {n} arms.",
                c.metric,
                crate::model::verdict::fmt_level(c.confidence),
                c.effect * 100.0
            ),
        );
    }
    body += &table(&super::compare::compare_grid(c));
    page("hugelab compare", &body)
}
