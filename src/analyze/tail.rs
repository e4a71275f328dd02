//! The tail as a contrast: the p95 of an arm's trial times against the baseline's from the same
//! blocks, as the percent change of the ratio of the two p95s, with a paired block-bootstrap
//! percentile interval (blocks resampled whole, with replacement, so every resample keeps the
//! pairing and the block-to-block drift both arms share). The level is the run's, split
//! (Bonferroni) over the arms. Below [`MIN_BLOCKS`] a p95 is the largest trial or next to it,
//! and no interval is given: the answer says how many blocks one needs.

use crate::model::analysis::{TailContrast, TrialData};
use crate::model::verdict::{Better, Verdict};
use crate::rng::XorShift;
use crate::stats::Estimate;
use crate::stats::{quantile_sorted, sorted};

/// The quantile compared.
pub const QUANTILE: f64 = 0.95;
/// Blocks a p95 contrast needs: from 20 values type-7 interpolation places the p95 below the
/// largest one, but the percentile bootstrap of a p95 from 20 blocks covers less than its level
/// (the simulation study: 92% at 95%, 96.5% at 99%); from 30 it holds (94.5%, 99.0%).
pub const MIN_BLOCKS: usize = 30;
/// Bootstrap resamples (seeded: the same trials give the same interval).
const RESAMPLES: usize = 4000;

/// Each non-baseline arm's p95 of `metric` against the baseline's.
pub fn tail_contrasts(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metric: &str,
    better: Better,
    confidence: f64,
) -> Vec<TailContrast> {
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let level = crate::stats::Level(confidence).split(others.len()).get();
    let value = |a: usize, b: usize| {
        trials
            .iter()
            .find(|t| t.arm == a && t.block == b && t.ok)
            .and_then(|t| t.metrics.get(metric).copied())
    };
    let mut blocks: Vec<usize> = trials.iter().map(|t| t.block).collect();
    blocks.sort_unstable();
    blocks.dedup();
    others
        .into_iter()
        .filter_map(|arm| {
            let pairs: Vec<(f64, f64)> = blocks
                .iter()
                .filter_map(|b| Some((value(arm, *b)?, value(baseline, *b)?)))
                .filter(|(a, b)| *a > 0.0 && *b > 0.0)
                .collect();
            if pairs.len() < 2 {
                return None;
            }
            let q = |xs: Vec<f64>| quantile_sorted(&sorted(&xs), QUANTILE);
            let (a, b) = (
                q(pairs.iter().map(|p| p.0).collect()),
                q(pairs.iter().map(|p| p.1).collect()),
            );
            let percent = (pairs.len() >= MIN_BLOCKS).then(|| interval(&pairs, a / b, level));
            let verdict = match &percent {
                Some(e) => match (e.lo, e.hi) {
                    (Some(lo), Some(hi)) if lo > 0.0 || hi < 0.0 => {
                        if (hi < 0.0) == (better == Better::Lower) {
                            Verdict::Faster
                        } else {
                            Verdict::Slower
                        }
                    }
                    _ => Verdict::Inconclusive,
                },
                None => Verdict::Inconclusive,
            };
            Some(TailContrast {
                metric: metric.to_string(),
                quantile: QUANTILE,
                arm: arms[arm].clone(),
                baseline: arms[baseline].clone(),
                arm_value: a,
                baseline_value: b,
                blocks: pairs.len(),
                percent,
                needed: MIN_BLOCKS,
                level,
                verdict,
            })
        })
        .collect()
}

/// The percent change `ratio − 1` with the percentile interval of the blocks' bootstrap (for
/// any number of blocks: the simulation study measures its coverage below [`MIN_BLOCKS`]).
pub fn interval(pairs: &[(f64, f64)], ratio: f64, level: f64) -> Estimate {
    let n = pairs.len();
    let mut rng = XorShift::new(0x7a11_u64 ^ n as u64);
    let mut logs: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for _ in 0..n {
                let p = pairs[rng.below(n)];
                a.push(p.0);
                b.push(p.1);
            }
            let q = |xs: &[f64]| quantile_sorted(&sorted(xs), QUANTILE);
            (q(&a) / q(&b)).ln()
        })
        .collect();
    logs.sort_by(f64::total_cmp);
    let tail = crate::stats::Level(level).tail();
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Estimate {
        point: (ratio - 1.0) * 100.0,
        lo: Some(pct(quantile_sorted(&logs, tail))),
        hi: Some(pct(quantile_sorted(
            &logs,
            crate::stats::Level(level).upper(),
        ))),
        confidence: level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trials(blocks: usize, slow_tail: bool) -> Vec<TrialData> {
        (0..blocks)
            .flat_map(|b| {
                // Both arms ~1 s; the arm's every fifth trial 3 s when its tail is slow.
                let arm = if slow_tail && b % 5 == 4 {
                    3.0
                } else {
                    1.0 + 0.01 * (b % 3) as f64
                };
                [(0, 1.0 + 0.01 * (b % 4) as f64), (1, arm)].map(|(a, v)| TrialData {
                    block: b,
                    arm: a,
                    ok: true,
                    metrics: [("wall_s".to_string(), v)].into(),
                    ..Default::default()
                })
            })
            .collect()
    }

    #[test]
    fn a_slow_tail_is_a_resolved_contrast_and_the_same_tail_is_not() {
        let names = ["a".to_string(), "b".to_string()];
        let slow = tail_contrasts(&names, 0, &trials(40, true), "wall_s", Better::Lower, 0.99);
        assert_eq!(slow.len(), 1);
        let t = &slow[0];
        assert_eq!(t.blocks, 40);
        assert!(t.arm_value > 2.5 && t.baseline_value < 1.05, "{t:?}");
        let e = t.percent.unwrap();
        assert!(e.lo.unwrap() > 0.0, "{e:?}");
        assert_eq!(t.verdict, Verdict::Slower);
        let same = tail_contrasts(&names, 0, &trials(40, false), "wall_s", Better::Lower, 0.99);
        assert_ne!(same[0].verdict, Verdict::Slower, "{:?}", same[0]);
    }

    #[test]
    fn too_few_blocks_give_no_interval_and_say_how_many_are_needed() {
        let names = ["a".to_string(), "b".to_string()];
        let t = &tail_contrasts(&names, 0, &trials(8, true), "wall_s", Better::Lower, 0.99)[0];
        assert_eq!((t.blocks, t.needed, t.percent), (8, MIN_BLOCKS, None));
        assert_eq!(t.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn the_same_trials_give_the_same_interval() {
        let names = ["a".to_string(), "b".to_string()];
        let t = || tail_contrasts(&names, 0, &trials(30, true), "wall_s", Better::Lower, 0.99);
        assert_eq!(t(), t());
    }
}
