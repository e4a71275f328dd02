//! Every trial's value: a strip plot per arm (flagged trials as crosses, the median as a bar)
//! and the values by position in the run (drift and bursts of host noise).

use super::{axis_number, rows_chart, span, svg};
use crate::model::report::Series;
use crate::render::html::colour;
use plotters::prelude::*;
/// Deterministic jitter in [-0.25, 0.25] from a trial's position in the run.
fn jitter(seq: i64) -> f64 {
    let h = (seq as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (h as f64 / (1u64 << 24) as f64 - 0.5) * 0.5
}

/// Every trial's value per arm on one shared axis; flagged trials as crosses; the median as a bar.
pub fn strip(s: &Series, arms: &[String], unit: &str) -> String {
    let n = arms.len();
    let (lo, hi) = span(s.points.iter().map(|p| p.value));
    svg(900, 60 + 45 * n as u32, |root| {
        let mut c = rows_chart(root, arms, lo..hi, &format!("{} ({unit})", s.metric))?;
        for (ai, _) in arms.iter().enumerate() {
            let col = colour(ai);
            let pts: Vec<_> = s.points.iter().filter(|p| p.arm == ai).collect();
            c.draw_series(pts.iter().filter(|p| !p.flagged).map(|p| {
                Circle::new(
                    (p.value, ai as f64 + jitter(p.seq)),
                    3,
                    col.mix(0.7).filled(),
                )
            }))?;
            c.draw_series(pts.iter().filter(|p| p.flagged).map(|p| {
                Cross::new((p.value, ai as f64 + jitter(p.seq)), 5, RED.stroke_width(2))
            }))?;
            if let Some(med) = s.medians.get(ai).copied().flatten() {
                c.draw_series(std::iter::once(PathElement::new(
                    vec![(med, ai as f64 - 0.35), (med, ai as f64 + 0.35)],
                    BLACK.stroke_width(3),
                )))?;
            }
        }
        Ok(())
    })
}

/// Value by position in the run, one colour per arm: drift and bursts of host noise show here.
pub fn progression(s: &Series, arms: &[String], unit: &str) -> String {
    let (lo, hi) = span(s.points.iter().map(|p| p.value));
    let max_seq = s.points.iter().map(|p| p.seq).max().unwrap_or(1).max(1) as f64;
    svg(900, 300, |root| {
        let mut c = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..max_seq, lo..hi)?;
        c.configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .x_desc("trial, in run order")
            .y_label_formatter(&|y| axis_number(*y, hi - lo))
            .y_desc(format!("{} ({unit})", s.metric))
            .draw()?;
        for (ai, name) in arms.iter().enumerate() {
            let col = colour(ai);
            let mut pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.arm == ai)
                .map(|p| (p.seq as f64, p.value))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            c.draw_series(LineSeries::new(pts.clone(), col.mix(0.6).stroke_width(1)))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(3))
                });
            c.draw_series(pts.iter().map(|p| Circle::new(*p, 2, col.filled())))?;
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    })
}
