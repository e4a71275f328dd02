//! Forest plot: each arm's interval against the baseline, percent, with the ±δ band.

use super::{figure, rows_chart, span, svg};
use crate::model::analysis::ExperimentAnalysis;
use crate::render::html::colour;
use plotters::prelude::*;
/// What a forest plot draws for one arm: its interval vs the baseline, percent.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    pub arm: String,
    pub point: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub verdict: String,
    /// The level the text prints it at (`words::contrast_level`).
    pub level: f64,
}

/// The forest plot's rows for one metric of a run (the stored contrasts, unchanged); a cost's
/// verdicts in a cost's words (MORE, LESS, SAME), never a speed's.
pub fn forest_rows(report: &ExperimentAnalysis, metric: usize) -> Vec<ForestRow> {
    let m = &report.metrics[metric];
    let cost = m.metric.cost;
    m.contrasts
        .iter()
        .filter_map(|(arm, c)| {
            let c = c.as_ref()?;
            Some(ForestRow {
                arm: arm.clone(),
                point: c.percent.point,
                lo: c.percent.lo,
                hi: c.percent.hi,
                verdict: if cost {
                    crate::render::costs::verdict_word(c.verdict).to_string()
                } else {
                    crate::render::run::verdict_cell(c)
                },
                level: crate::render::words::contrast_level(c),
            })
        })
        .collect()
}

/// The plot; `axis` names what a positive change means (`change vs baseline, %` for a
/// speed; `more memory →` for a cost).
pub fn forest(rows: &[ForestRow], effect_percent: f64, axis: &str, caption: &str) -> String {
    let h = 70 + 40 * rows.len() as u32;
    let (lo, hi) = span(
        rows.iter()
            .flat_map(|r| [Some(r.point), r.lo, r.hi])
            .flatten()
            .chain([-effect_percent * 1.5, effect_percent * 1.5]),
    );
    let n = rows.len();
    let svg = svg(900, h, |root| {
        let mut c = rows_chart(
            root,
            &rows.iter().map(|r| r.arm.clone()).collect::<Vec<_>>(),
            lo..hi,
            axis,
        )?;
        // The equivalence band ±δ and the zero line.
        c.draw_series(std::iter::once(Rectangle::new(
            [(-effect_percent, -0.5), (effect_percent, n as f64 - 0.5)],
            RGBColor(0, 158, 115).mix(0.12).filled(),
        )))?;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, -0.5), (0.0, n as f64 - 0.5)],
            BLACK.stroke_width(1),
        )))?;
        for (i, r) in rows.iter().enumerate() {
            let y = i as f64;
            let col = colour(i + 1);
            if let (Some(a), Some(b)) = (r.lo, r.hi) {
                c.draw_series(std::iter::once(PathElement::new(
                    vec![(a, y), (b, y)],
                    col.stroke_width(3),
                )))?;
            }
            c.draw_series(std::iter::once(Circle::new((r.point, y), 5, col.filled())))?;
            c.draw_series(std::iter::once(Text::new(
                format!(
                    "{} @{}",
                    r.verdict,
                    crate::model::verdict::fmt_level(r.level)
                ),
                (r.point, y + 0.3),
                ("sans-serif", 13).into_font(),
            )))?;
        }
        Ok(())
    });
    figure(svg, caption)
}
