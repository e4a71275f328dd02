//! The report's charts, each an inline SVG from plotters, one file per chart: `forest` (the
//! contrasts' intervals against δ), `trials` (strip and progression plots of every trial),
//! `coverage` (huge coverage per arm), `bench` (score against region size per backing),
//! `stalls` (`run --trace` latency histograms). This module holds what they share: the SVG
//! frame, the figure, padded ranges, a chart with one row per arm, axis units.

mod bench;
mod coverage;
mod forest;
mod stalls;
mod trials;

pub(super) use bench::bench_chart;
pub(super) use coverage::coverage_bars;
pub(super) use forest::forest;
pub use forest::{ForestRow, forest_rows};
pub(super) use stalls::stall_chart;
pub(super) use trials::{progression, strip};

use super::esc;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

pub(super) fn svg(
    w: u32,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
) -> String {
    let mut s = String::new();
    let failed = {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let r = draw(&root).err().map(|e| e.to_string());
        let _ = root.present();
        r
    };
    match failed {
        Some(e) => format!("<p>chart not drawn: {}</p>", esc(&e)),
        None => s,
    }
}

pub(super) fn figure(svg: String, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
        esc(caption)
    )
}

/// Padded range over values (never empty).
pub(super) fn span(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08)
        .max(hi.abs().max(lo.abs()) * 1e-3)
        .max(1e-12);
    (lo - pad, hi + pad)
}

pub(super) type Rows<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart with one named row per category (arms) on the y axis and a value axis along x.
pub(super) fn rows_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    names: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
) -> Result<Rows<'a, 'b>, Box<dyn std::error::Error>> {
    let n = names.len();
    let span = x.end - x.start;
    let mut c = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(170)
        .build_cartesian_2d(x, -0.5f64..(n as f64 - 0.5))?;
    c.configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 14))
        .disable_y_mesh()
        .y_labels(n.max(1))
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|x| axis_number(*x, span))
        .x_desc(x_desc)
        .draw()?;
    Ok(c)
}

/// An axis unit: the run metric's, or "as measured" for a user's `--metric`.
pub(super) fn unit(metric: &str) -> &'static str {
    crate::units::Unit::of_metric(metric)
        .symbol()
        .unwrap_or("as measured")
}

/// A series of bytes in the binary unit its largest value reads in (KiB, MiB or GiB), with
/// that unit's name; any other series as stored, with [`unit`]'s.
pub(super) fn readable(s: &crate::model::report::Series) -> (crate::model::report::Series, String) {
    if crate::units::Unit::of_metric(&s.metric) != crate::units::Unit::Bytes {
        return (s.clone(), unit(&s.metric).to_string());
    }
    let max = s.points.iter().map(|p| p.value).fold(0.0, f64::max);
    let (div, name) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(d, _)| max >= *d as f64)
        .unwrap_or((1, "bytes"));
    let mut scaled = s.clone();
    for p in &mut scaled.points {
        p.value /= div as f64;
    }
    (scaled, name.to_string())
}

/// An axis tick in the metric's unit as a person reads it, with as many decimals as ticks
/// about a tenth of `span` apart need to differ: `75,000`, `312`, `12.5`, `0.0113`.
pub(super) fn axis_number(v: f64, span: f64) -> String {
    let step = (span.abs() / 10.0).max(f64::MIN_POSITIVE);
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    if decimals == 0 && v.abs() >= 1000.0 {
        let s = crate::render::words::thousands(v.abs().round() as usize);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    /// Ticks read as numbers in the metric's unit: thousands separated, no `30000.0`.
    #[test]
    fn axis_ticks_carry_thousands_separators_and_sensible_decimals() {
        use super::axis_number;
        assert_eq!(axis_number(75_000.0, 45_000.0), "75,000");
        assert_eq!(axis_number(-1_250.4, 3_000.0), "-1,250");
        assert_eq!(axis_number(312.4, 200.0), "312");
        assert_eq!(axis_number(12.46, 4.0), "12.5");
        // Ticks of a narrow span differ in their last digits.
        assert_eq!(axis_number(0.01132, 0.0004), "0.01132");
        assert_eq!(axis_number(0.0, 1.0), "0.0");
    }
}
