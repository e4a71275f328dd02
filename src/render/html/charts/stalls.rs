//! `run --trace` stall histograms: events per traced trial in each power-of-two latency bucket,
//! one line per arm.

use super::{figure, svg};
use crate::model::report::StallHistogram;
use crate::render::html::colour;
use plotters::prelude::*;
/// `run --trace`: one line per arm over power-of-two latency buckets (log axis), events per
/// traced trial, with each arm's total stall time per trial in the caption.
pub fn stall_chart(h: &StallHistogram) -> String {
    let edges: Vec<f64> = h
        .arms
        .iter()
        .flat_map(|a| a.buckets.iter().map(|b| b.0.max(1) as f64))
        .collect();
    if edges.is_empty() {
        return String::new();
    }
    let (xmin, xmax) = edges
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let ymax = h
        .arms
        .iter()
        .flat_map(|a| {
            a.buckets
                .iter()
                .map(|b| b.1 as f64 / a.trials.max(1) as f64)
        })
        .fold(0.0f64, f64::max);
    let svg = svg(900, 320, |root| {
        let mut ch = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d((xmin * 0.7..xmax * 2.8).log_scale(), 0.0..ymax * 1.1 + 1e-9)?;
        ch.configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .x_label_formatter(&|x| {
                let shown = crate::units::Unit::Time(1e-9).fmt_for(*x, 0.0);
                shown.show(*x)
            })
            .x_desc("latency (lower edge of a power-of-two bucket, log scale)")
            .y_desc("events per trial")
            .draw()?;
        for (i, a) in h.arms.iter().enumerate() {
            let col = colour(i);
            let pts: Vec<(f64, f64)> = a
                .buckets
                .iter()
                .map(|(e, n)| ((*e).max(1) as f64, *n as f64 / a.trials.max(1) as f64))
                .collect();
            ch.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
                .label(format!("{} ({} trials)", a.arm, a.trials))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(3))
                });
            ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, col.filled())))?;
        }
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
        Ok(())
    });
    let totals: Vec<String> = h
        .arms
        .iter()
        .map(|a| {
            format!(
                "{} {:.1} ms per trial",
                a.arm,
                a.total_ns as f64 / 1e6 / a.trials.max(1) as f64
            )
        })
        .collect();
    figure(
        svg,
        &format!(
            "run --trace, {}: latency histogram per arm, events per traced trial in each power-of-two bucket (ns to s); total stall time: {}.",
            h.kind,
            totals.join(", ")
        ),
    )
}
