//! A bench curve: score against region size (log axis with ticks at the measured sizes), one
//! line per backing with the score's interval as whiskers.

use super::{DrawResult, figure, span, svg};
use crate::model::report::BenchCurve;
use crate::model::verdict::Better;
use crate::render::html::colour;
use crate::units::Bytes;
use plotters::coord::Shift;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
type SizeAxes<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<WithKeyPoints<LogCoord<f64>>, RangedCoordf64>>;

/// A chart over region sizes: log x axis with ticks at the measured sizes, labelled as sizes.
fn size_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    ticks: &[f64],
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Result<SizeAxes<'a, 'b>, Box<dyn std::error::Error>> {
    let (xmin, xmax) = (ticks[0], ticks[ticks.len() - 1]);
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (xmin * 0.8..xmax * 1.25)
                .log_scale()
                .with_key_points(ticks.to_vec()),
            y,
        )?;
    ch.configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 14))
        .x_label_formatter(&|x| Bytes(*x as u64).to_string())
        .x_desc("region size (log scale)")
        .y_desc(y_desc)
        .draw()?;
    Ok(ch)
}

/// (x, y, interval low, interval high) of one point.
type Whisker = (f64, f64, Option<f64>, Option<f64>);

/// One named line with a point and an interval whisker at each x, and its legend entry.
fn whiskered_line(ch: &mut SizeAxes, name: &str, col: RGBColor, pts: &[Whisker]) -> DrawResult {
    ch.draw_series(LineSeries::new(
        pts.iter().map(|p| (p.0, p.1)),
        col.stroke_width(2),
    ))?
    .label(name)
    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(3)));
    ch.draw_series(pts.iter().filter_map(|p| {
        Some(ErrorBar::new_vertical(
            p.0,
            p.2?,
            p.1,
            p.3?,
            col.stroke_width(1),
            8,
        ))
    }))?;
    ch.draw_series(pts.iter().map(|p| Circle::new((p.0, p.1), 4, col.filled())))?;
    Ok(())
}

fn legend<'a, 'b: 'a>(ch: &mut SizeAxes<'a, 'b>, at: SeriesLabelPosition) -> DrawResult {
    ch.configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Score vs region size (log axis), one line per backing, with the score's interval.
pub fn bench_chart(c: &BenchCurve, level: &str) -> String {
    // Ticks at the measured sizes, labelled as sizes (not at powers of ten).
    let mut ticks: Vec<f64> = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.size as f64))
        .collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let (Some(&xmin), Some(&xmax)) = (ticks.first(), ticks.last()) else {
        return String::new();
    };
    let (lo, hi) = span(
        c.lines
            .iter()
            .flat_map(|l| l.points.iter().flat_map(|p| [Some(p.score), p.lo, p.hi]))
            .flatten(),
    );
    let score = svg(900, 360, |root| {
        let mut ch = size_chart(root, &ticks, lo..hi, &format!("{}, {}", c.metric, c.unit))?;
        for (i, l) in c.lines.iter().enumerate() {
            let pts: Vec<Whisker> = l
                .points
                .iter()
                .map(|p| (p.size as f64, p.score, p.lo, p.hi))
                .collect();
            whiskered_line(&mut ch, &l.backing, colour(i), &pts)?;
            // Huge backings whose region was not fully huge: a red ring.
            ch.draw_series(
                l.points
                    .iter()
                    .filter(|p| p.degraded)
                    .map(|p| Circle::new((p.size as f64, p.score), 5, RED.stroke_width(2))),
            )?;
        }
        legend(&mut ch, SeriesLabelPosition::UpperLeft)
    });
    let (rlo, rhi) = span(
        c.lines
            .iter()
            .filter(|l| l.backing != c.baseline)
            .flat_map(|l| l.points.iter())
            .filter_map(|p| p.vs_baseline)
            .flat_map(|e| [Some(e.point), e.lo, e.hi])
            .flatten()
            .chain([0.0]),
    );
    let ratio = svg(900, 300, |root| {
        let mut ch = size_chart(root, &ticks, rlo..rhi, &format!("% vs {}", c.baseline))?;
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(xmin * 0.8, 0.0), (xmax * 1.25, 0.0)],
            BLACK.stroke_width(1),
        )))?;
        // Colours stay those of the score chart: index in all lines, baseline skipped.
        for (i, l) in c.lines.iter().enumerate() {
            if l.backing == c.baseline {
                continue;
            }
            let pts: Vec<Whisker> = l
                .points
                .iter()
                .filter_map(|p| {
                    let e = p.vs_baseline?;
                    Some((p.size as f64, e.point, e.lo, e.hi))
                })
                .collect();
            whiskered_line(&mut ch, &l.backing, colour(i), &pts)?;
        }
        legend(&mut ch, SeriesLabelPosition::LowerLeft)
    });
    let n = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.n))
        .max()
        .unwrap_or(0);
    let better = match c.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    figure(
        score,
        &format!(
            "{} ({}) by region size, one line per backing ({better}): the bench's score, the mean of up to {n} rounds per point, whiskers its {level} Student-t interval; red rings mark huge backings whose region was not fully huge.",
            c.metric, c.unit
        ),
    ) + &figure(
        ratio,
        &format!(
            "Change vs {} by region size, % ({better} for the metric): the bench's Hodges–Lehmann estimate of the paired per-round ratio, whiskers its {level} signed-rank interval (each cell read on its own, as in the tables).",
            c.baseline
        ),
    )
}
