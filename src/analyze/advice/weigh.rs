//! What an arm's benefit costs, as the advice weighs it. Every contrast of the run besides the
//! primary one that went the wrong way — a cost metric (peak memory, CPU time: `analyze::costs`)
//! or a secondary metric (a p99 that is SLOWER) — and the kernel's stall time (`run --trace`)
//! are costs; so is a slower tail of the trial times where both arms' p95 have intervals that
//! do not overlap. A cost **outweighs** the benefit when it grows by more, in percent, than the
//! primary metric improves (stall time as a share of the baseline's median trial time): an arm
//! with such a cost is not adopted, and the advice says which cost and by how much. Costs that
//! do not outweigh are adopted with the arm and stated beside it.

use crate::analyze::experiment::{ExperimentAnalysis, MetricAnalysis};
use crate::analyze::trace::StallContrast;
use crate::analyze::verdict::{Better, Verdict};
pub use crate::model::advice::CostNote;
use crate::units::Unit;

/// Every measured cost of `arm` against a benefit of `gain` percent on `primary`, and the names
/// of everything that was weighed (whether it turned out a cost or not).
pub fn costs(
    r: &ExperimentAnalysis,
    primary: &MetricAnalysis,
    arm: &str,
    gain: f64,
    stalls: &[StallContrast],
) -> (Vec<CostNote>, Vec<String>) {
    let mut out = Vec::new();
    let mut weighed = Vec::new();
    for m in r
        .metrics
        .iter()
        .filter(|m| m.metric.name != primary.metric.name && !m.metric.context)
    {
        let Some(Some(c)) = m.contrasts.iter().find(|(a, _)| a == arm).map(|x| &x.1) else {
            continue;
        };
        weighed.push(crate::analyze::costs::label(&m.metric.name).to_string());
        if c.verdict != Verdict::Slower {
            continue;
        }
        let worse = match m.metric.better {
            Better::Lower => c.percent.point,
            Better::Higher => -c.percent.point,
        };
        out.push(CostNote {
            what: format!(
                "{} {}{}",
                crate::analyze::costs::label(&m.metric.name),
                percent(&c.percent),
                medians(m, arm, &r.baseline)
            ),
            percent: worse,
            outweighs: worse > gain,
        });
    }
    if let Some(t) = tail(r, arm, gain) {
        weighed.push("p95 of the trial times".into());
        out.extend(t);
    }
    let base_ms = median_of(r, "wall_s", &r.baseline).map(|s| s * 1e3);
    for s in stalls.iter().filter(|s| s.arm == arm) {
        weighed.push(format!("{} stalls", s.kind));
        let d = &s.difference_ms;
        if !d.lo.is_some_and(|lo| lo > 0.0) {
            continue;
        }
        let share = base_ms.filter(|b| *b > 0.0).map(|b| d.point / b * 100.0);
        out.push(CostNote {
            what: format!(
                "{} stalls {:+.1} ms per trial {} ({:.1} vs {:.1} ms){}",
                s.kind,
                d.point,
                crate::units::fmt_interval(d.lo.unwrap_or(f64::NAN), d.hi.unwrap_or(f64::NAN), 1),
                s.arm_mean_ms,
                s.baseline_mean_ms,
                share.map_or(String::new(), |p| format!(", {p:.1}% of a trial"))
            ),
            percent: share.unwrap_or(0.0),
            outweighs: share.is_some_and(|p| p > gain),
        });
    }
    // Direct stalls counted in every run: stated with their interval, never set against the
    // gain's percent (a count per trial has no share of the primary metric to compare).
    for s in r.stalls.iter().filter(|s| s.arm == arm) {
        weighed.push(s.kind.clone());
        if s.verdict != Verdict::Slower {
            continue;
        }
        out.push(CostNote {
            what: format!("{} {}", s.kind, stall_count_words(s)),
            percent: 0.0,
            outweighs: false,
        });
    }
    (out, weighed)
}

/// `+5.0 per trial [+4.0, +6.0] (6.0 vs 1.0)`.
fn stall_count_words(s: &crate::model::analysis::StallCount) -> String {
    format!(
        "{} ({:.1} vs {:.1})",
        crate::model::costs::stall_difference(s),
        s.arm_mean,
        s.baseline_mean
    )
}

/// The tail of the trial times (commands): the contrast of the arm's p95 against the
/// baseline's (`analyze::tail`). A resolved rise larger than the gain outweighs it; a rise
/// without an interval (too few blocks) is stated with the blocks it needs, not weighed.
fn tail(r: &ExperimentAnalysis, arm: &str, gain: f64) -> Option<Vec<CostNote>> {
    let t = r.tails.iter().find(|t| t.arm == arm)?;
    let rise = (t.arm_value / t.baseline_value - 1.0) * 100.0;
    if t.baseline_value <= 0.0 || rise <= r.effect * 100.0 {
        return Some(Vec::new());
    }
    let f = Unit::Time(1.0).fmt_for(t.arm_value.max(t.baseline_value), 0.0);
    let resolved = t.verdict == Verdict::Slower;
    let how = match &t.percent {
        Some(e) => format!(
            "{} block bootstrap{}",
            percent(e),
            if resolved {
                ""
            } else {
                ": not resolved, not weighed"
            }
        ),
        None => format!(
            "{} blocks: a p95 contrast needs {}, not weighed",
            t.blocks, t.needed
        ),
    };
    Some(vec![CostNote {
        what: format!(
            "p95 of the trial times {} vs {} ({how})",
            f.show(t.arm_value),
            f.show(t.baseline_value)
        ),
        percent: rise,
        outweighs: resolved && rise > gain,
    }])
}

/// `+1,240% [+1,190, +1,300]` (one decimal below 100%).
fn percent(e: &crate::stats::Estimate) -> String {
    let d = if e.point.abs() >= 100.0 { 0 } else { 1 };
    match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => format!(
            "{:+.d$}% {}",
            e.point,
            crate::units::fmt_interval(lo, hi, d)
        ),
        _ => format!("{:+.d$}%", e.point),
    }
}

/// ` (1.0 GiB vs 77.1 MiB)`: both arms' medians in the metric's unit.
fn medians(m: &MetricAnalysis, arm: &str, baseline: &str) -> String {
    let med = |n: &str| crate::analyze::costs::arm_median(m, n);
    match (med(arm), med(baseline)) {
        (Some(a), Some(b)) => {
            let u = Unit::of_metric(&m.metric.name);
            let show = |v: f64| u.fmt_for(v, 0.0).show(v);
            format!(" ({} vs {})", show(a), show(b))
        }
        _ => String::new(),
    }
}

fn median_of(r: &ExperimentAnalysis, metric: &str, arm: &str) -> Option<f64> {
    let m = r.metrics.iter().find(|m| m.metric.name == metric)?;
    crate::analyze::costs::arm_median(m, arm)
}
