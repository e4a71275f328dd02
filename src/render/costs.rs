//! The answer's cost line: under each contrast's verdict, what the arm cost against the baseline
//! — peak memory and CPU time (contrasted like every metric: paired, with the same interval and
//! level) with each arm's median beside it, and the tail of the trial times per arm.

use super::words::{level_mark, percent_interval};
use crate::model::analysis::ExperimentAnalysis;
use crate::model::analysis::MetricAnalysis;
use crate::model::costs;
use crate::model::costs::Cost;
use crate::model::stats::Estimate;
use crate::model::verdict::Verdict;
use crate::units::{Bytes, Unit};

/// `costs: peak memory ×13.4 [×12.9, ×14.0] MORE (1.0 GiB vs 76.2 MiB) · system CPU … ·
/// p95 wall 2.68 s vs 1.12 s`, or None when the run recorded no cost (an imported run, or
/// one stored before costs were recorded).
pub fn line(r: &ExperimentAnalysis, arm: &str) -> Option<String> {
    let mut parts: Vec<String> = costs::of_arm(r, arm)
        .iter()
        .map(|c| cost_words(r, arm, c))
        .collect();
    if parts.is_empty() {
        return uncompared(r, arm);
    }
    parts.extend(stall_words(r, arm));
    parts.extend(tail_words(r, arm));
    Some(format!("costs: {}", parts.join(" · ")))
}

/// Where the arm has costs and none could be compared (a command too short for its CPU time or
/// its peak memory to read above zero in enough blocks), the line says so, with each cost's
/// blocks that had a value in both arms, rather than leaving the costs out unsaid.
fn uncompared(r: &ExperimentAnalysis, arm: &str) -> Option<String> {
    let missing: Vec<String> = r
        .metrics
        .iter()
        .filter(|m| m.metric.cost && m.contrasts.iter().any(|(a, c)| a == arm && c.is_none()))
        .map(|m| format!("{} in {}", costs::label(&m.metric.name), m.complete_blocks))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "costs: none compared: too few blocks with a value in both arms ({})",
            missing.join(", ")
        )
    })
}

/// The direct stalls the arm changed: `direct compaction stalls +5.0 per trial [+4.0, +6.0]
/// @99.5% MORE (6.0 vs 0.0)`; unresolved ones are not listed.
fn stall_words(r: &ExperimentAnalysis, arm: &str) -> Vec<String> {
    r.stalls
        .iter()
        .filter(|s| s.arm == arm && s.verdict != crate::model::verdict::Verdict::Inconclusive)
        .map(|s| {
            let level = if (s.level - r.confidence).abs() > 1e-9 {
                format!(" @{}", crate::model::verdict::fmt_level(s.level))
            } else {
                String::new()
            };
            format!(
                "{} {}{level} {} ({:.1} vs {:.1})",
                s.kind,
                costs::stall_difference(s),
                verdict_word(s.verdict),
                s.arm_mean,
                s.baseline_mean
            )
        })
        .collect()
}

/// One cost: its contrast, its verdict in cost words, and both arms' medians.
fn cost_words(r: &ExperimentAnalysis, arm: &str, c: &Cost) -> String {
    let name = &c.metric.metric.name;
    let figures = medians(c.metric, arm, &r.baseline)
        .map(|f| format!(" ({f})"))
        .unwrap_or_default();
    // Said where the interval is not the signed-rank one the verdicts use.
    let how = if c.contrast.method == crate::model::verdict::METHOD {
        format!(" (Student t over {} blocks)", c.contrast.blocks)
    } else {
        String::new()
    };
    format!(
        "{} {}{} {}{how}{figures}",
        costs::label(name),
        change(&c.contrast.percent),
        level_mark(r, c.contrast),
        verdict_word(c.contrast.verdict)
    )
}

/// A change as a percentage, or as a ratio (`×13.4 [×12.9, ×14.0]`) once it doubles, where a
/// percentage stops being read.
pub fn change(p: &Estimate) -> String {
    if p.point.abs() < 100.0 {
        return percent_interval(p);
    }
    let x = |v: f64| {
        let r = 1.0 + v / 100.0;
        if r >= 100.0 {
            format!("×{r:.0}")
        } else {
            format!("×{r:.1}")
        }
    };
    match (p.lo, p.hi) {
        (Some(lo), Some(hi)) => format!("{} [{}, {}]", x(p.point), x(lo), x(hi)),
        _ => x(p.point),
    }
}

/// `1.0 GiB vs 76.2 MiB`: the arm's median against the baseline's, in the metric's unit.
fn medians(m: &MetricAnalysis, arm: &str, baseline: &str) -> Option<String> {
    let a = costs::arm_median(m, arm)?;
    let b = costs::arm_median(m, baseline)?;
    let unit = Unit::of_metric(&m.metric.name);
    Some(format!(
        "{} vs {}",
        unit.fmt_for(a, 0.0).show(a),
        unit.fmt_for(b, 0.0).show(b)
    ))
}

/// The tail of the trial times as a contrast: `p95 wall +61% [+40, +85] MORE (2.68 s vs
/// 1.66 s)`, or, with too few blocks for an interval, both p95s and the blocks one needs.
fn tail_words(r: &ExperimentAnalysis, arm: &str) -> Option<String> {
    let t = r.tails.iter().find(|t| t.arm == arm)?;
    let f = Unit::of_metric(&t.metric).fmt_for(t.arm_value.max(t.baseline_value), 0.0);
    let figures = format!("{} vs {}", f.show(t.arm_value), f.show(t.baseline_value));
    Some(match &t.percent {
        Some(e) => format!(
            "p95 wall {} @{} {} ({figures}; block bootstrap)",
            percent_interval(e),
            crate::model::verdict::fmt_level(t.level),
            verdict_word(t.verdict)
        ),
        None => format!(
            "p95 wall {figures} ({} blocks: a p95 contrast needs {})",
            t.blocks, t.needed
        ),
    })
}

/// The run line's pool part, per arm that set a pool: asked, obtained (and its share of
/// MemTotal: memory nothing else can use while the pool holds it), used at the workload's peak.
pub fn pool_lines(pools: &[crate::model::run::PoolUse]) -> Vec<String> {
    pools
        .iter()
        .map(|p| {
            let got = match p.obtained {
                Some(n) => {
                    let bytes = n * p.page_size;
                    let share = p
                        .share_of_mem_total
                        .map(|s| format!(", {:.1}% of MemTotal", s * 100.0))
                        .unwrap_or_default();
                    format!("obtained {n} ({}{share})", Bytes(bytes))
                }
                None => "obtained: not read".into(),
            };
            let used = match p.in_use {
                Some(u) => format!("the workload used {u:.0} at its peak (mean over trials)"),
                None => "the workload's use was not read".into(),
            };
            format!(
                "pool {} of arm {}: asked {}, {got}; {used}",
                Bytes(p.page_size),
                p.arm,
                p.asked
            )
        })
        .collect()
}

/// A cost's verdict in words: more or less of it than the baseline, the same within δ, or
/// not resolved.
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "MORE",
        Verdict::Faster => "LESS",
        Verdict::Equivalent => "SAME",
        Verdict::Inconclusive => "INCONCLUSIVE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costs_verdict_is_more_or_less_of_it() {
        assert_eq!(verdict_word(Verdict::Slower), "MORE");
        assert_eq!(verdict_word(Verdict::Faster), "LESS");
    }

    #[test]
    fn a_change_past_doubling_reads_as_a_ratio() {
        let e = |p, lo, hi| Estimate {
            point: p,
            lo: Some(lo),
            hi: Some(hi),
            confidence: 0.99,
        };
        assert_eq!(change(&e(1240.0, 1190.0, 1300.0)), "×13.4 [×12.9, ×14.0]");
        assert_eq!(change(&e(150.0, 120.0, 180.0)), "×2.5 [×2.2, ×2.8]");
        assert_eq!(change(&e(-3.0, -4.0, -2.0)), "-3.0% [-4.0, -2.0]");
    }

    #[test]
    fn a_pool_line_says_asked_obtained_its_share_and_the_use() {
        let p = crate::model::run::PoolUse {
            arm: "hugetlb".into(),
            page_size: 2 << 20,
            asked: 4096,
            obtained: Some(4000),
            in_use: Some(180.4),
            mem_total: Some(24 << 30),
            share_of_mem_total: Some((4000u64 * (2 << 20)) as f64 / (24u64 << 30) as f64),
        };
        assert_eq!(
            pool_lines(&[p]),
            [
                "pool 2M of arm hugetlb: asked 4096, obtained 4000 (7.8G, 32.6% of MemTotal); the workload used 180 at its peak (mean over trials)"
            ]
        );
    }
}
