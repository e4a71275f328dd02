//! The report's charts, each an inline SVG from plotters: forest plots of the contrasts, strip
//! and progression plots of the trials, coverage bars, bench curves, stall histograms.

use super::{colour, esc};
use crate::analyze::verdict::Better;
use crate::model::report::{BenchCurve, RunView, Series, StallHistogram};
use crate::units::Bytes;
use plotters::coord::Shift;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

type DrawResult = Result<(), Box<dyn std::error::Error>>;

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
fn span(vals: impl Iterator<Item = f64>) -> (f64, f64) {
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

type Rows<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart with one named row per category (arms) on the y axis and a value axis along x.
fn rows_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    names: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
) -> Result<Rows<'a, 'b>, Box<dyn std::error::Error>> {
    let n = names.len();
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
        .x_desc(x_desc)
        .draw()?;
    Ok(c)
}

/// What a forest plot draws for one arm: its interval vs the baseline, percent.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    pub arm: String,
    pub point: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub verdict: String,
    pub level: f64,
}

/// The forest plot's rows for one metric of a run (the stored contrasts, unchanged).
pub fn forest_rows(v: &RunView, metric: usize) -> Vec<ForestRow> {
    let m = &v.report.metrics[metric];
    m.contrasts
        .iter()
        .filter_map(|(arm, c)| {
            let c = c.as_ref()?;
            Some(ForestRow {
                arm: arm.clone(),
                point: c.percent.point,
                lo: c.percent.lo,
                hi: c.percent.hi,
                verdict: super::super::run::verdict_cell(c),
                level: c.level,
            })
        })
        .collect()
}

pub(super) fn forest(rows: &[ForestRow], effect_percent: f64, caption: &str) -> String {
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
            "change vs baseline, % (interval at the level shown)",
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
                    crate::analyze::verdict::fmt_level(r.level)
                ),
                (r.point, y + 0.3),
                ("sans-serif", 13).into_font(),
            )))?;
        }
        Ok(())
    });
    figure(svg, caption)
}

/// Deterministic jitter in [-0.25, 0.25] from a trial's position in the run.
fn jitter(seq: i64) -> f64 {
    let h = (seq as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (h as f64 / (1u64 << 24) as f64 - 0.5) * 0.5
}

/// Every trial's value per arm on one shared axis; flagged trials as crosses; the median as a bar.
pub(super) fn strip(s: &Series, arms: &[String], unit: &str) -> String {
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
            let mut v: Vec<f64> = pts.iter().map(|p| p.value).collect();
            if !v.is_empty() {
                v.sort_by(f64::total_cmp);
                let med = crate::analyze::stats::quantile_sorted(&v, 0.5);
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
pub(super) fn progression(s: &Series, arms: &[String], unit: &str) -> String {
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

/// Huge coverage at peak per arm, 0–100 %.
pub(super) fn coverage_bars(v: &RunView) -> Option<String> {
    let rows: Vec<(String, f64)> = v
        .report
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

/// Score vs region size (log axis), one line per backing, with the median's interval.
pub(super) fn bench_chart(c: &BenchCurve, level: &str) -> String {
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
            .flat_map(|l| l.points.iter().flat_map(|p| [Some(p.median), p.lo, p.hi]))
            .flatten(),
    );
    let score = svg(900, 360, |root| {
        let mut ch = size_chart(root, &ticks, lo..hi, &axis_name(&c.metric))?;
        for (i, l) in c.lines.iter().enumerate() {
            let pts: Vec<Whisker> = l
                .points
                .iter()
                .map(|p| (p.size as f64, p.median, p.lo, p.hi))
                .collect();
            whiskered_line(&mut ch, &l.backing, colour(i), &pts)?;
            // Huge backings whose region was not fully huge: a red ring.
            ch.draw_series(
                l.points
                    .iter()
                    .filter(|p| p.degraded)
                    .map(|p| Circle::new((p.size as f64, p.median), 5, RED.stroke_width(2))),
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
            "{} by region size, one line per backing ({better}): median of up to {n} rounds per point, whiskers the distribution-free {level} interval of the median; red rings mark huge backings whose region was not fully huge.",
            c.metric
        ),
    ) + &figure(
        ratio,
        &format!(
            "Change vs {} by region size, % ({better} for the metric): Hodges–Lehmann estimate of the paired per-round ratio, whiskers its {level} interval (Holm-adjusted level per contrast as in the tables).",
            c.baseline
        ),
    )
}

/// A bench metric as an axis says it: `touch_ns/op` → `touch, ns/op`.
fn axis_name(metric: &str) -> String {
    match metric.split_once('_') {
        Some((what, unit)) => format!("{what}, {unit}"),
        None => metric.to_string(),
    }
}

/// An axis unit: the run metric's, or "as measured" for a user's `--metric`.
pub(super) fn unit(metric: &str) -> &'static str {
    crate::units::Unit::of_metric(metric)
        .symbol()
        .unwrap_or("as measured")
}

/// The answer lines the terminal prints first (`results show`), for a run; for a bench, its
/// headline per backing at the largest size lives in the charts and tables below.
pub(super) fn stall_chart(h: &StallHistogram) -> String {
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
