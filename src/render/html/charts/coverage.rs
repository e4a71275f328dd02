//! Huge coverage at peak per arm, 0–100 %.

use super::{rows_chart, svg};
use crate::model::analysis::ExperimentAnalysis;
use crate::render::html::colour;
use plotters::prelude::*;
/// Huge coverage at peak per arm, 0–100 %.
pub fn coverage_bars(report: &ExperimentAnalysis) -> Option<String> {
    let rows: Vec<(String, f64)> = report
        .evidence
        .iter()
        .filter_map(|e| Some((e.arm.clone(), e.mean_coverage_at_peak? * 100.0)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let svg = svg(900, 60 + 35 * n as u32, |root| {
        let mut c = rows_chart(
            root,
            &rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
            0f64..100f64,
            "huge coverage at peak resident memory, % (mean over trials)",
        )?;
        for (i, (_, pct)) in rows.iter().enumerate() {
            let y = i as f64;
            c.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.3), (*pct, y + 0.3)],
                colour(i).filled(),
            )))?;
        }
        Ok(())
    });
    Some(svg)
}
