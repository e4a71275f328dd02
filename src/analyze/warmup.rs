//! A server lifetime's warm-up, detected from its bursts instead of assumed (warm services).
//! A lifetime's first bursts may run before the server reached its warm state (caches, JIT,
//! page tables); how many did is a level shift of the leading bursts against the rest, in the
//! spirit of Barrett et al.'s warm-up classification (OOPSLA 2017). A lifetime holds only a few
//! bursts, too few for a changepoint of its own, so the shift is tested position by position
//! across lifetimes: per arm and per leading position k, over the lifetimes with a burst at k
//! and a later one, the log of burst k less the mean log of the lifetime's later bursts
//! (Hodges–Lehmann with its signed-rank interval). The warm-up is the leading positions where
//! **every** arm's interval excludes 0 on the **same side**, at a confidence Bonferroni-adjusted
//! over every arm and position tested: a state the servers share (cold caches, page tables),
//! not one arm's early advantage — an arm that is faster only in its first bursts keeps that in
//! its contrast. Those blocks are not measured, for every arm alike, so the pairs stay whole;
//! a lifetime too short to keep two measured blocks after them keeps all of its blocks, so no
//! lifetime is left unusable. The decision looks at each arm's own level, never at the
//! contrast, so an A/A stays honest.

use super::trial_data::TrialData;
pub use crate::model::analysis::{POSITIONS, Warmup};
use crate::stats::hodges_lehmann;
use std::collections::BTreeMap;

/// Lifetimes needed at a position before it is tested.
const MIN_LIFETIMES: usize = 8;

/// Per lifetime, per arm, its blocks' log values of `metric` in block order (blocks where every
/// arm succeeded).
fn series(
    trials: &[TrialData],
    arms: usize,
    metric: &str,
) -> BTreeMap<usize, Vec<(usize, Vec<f64>)>> {
    let mut blocks: BTreeMap<usize, (usize, Vec<Option<f64>>)> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok && t.arm < arms) {
        let (Some(l), Some(v)) = (t.lifetime, t.metrics.get(metric).filter(|v| **v > 0.0)) else {
            continue;
        };
        blocks.entry(t.block).or_insert((l, vec![None; arms])).1[t.arm] = Some(v.ln());
    }
    let mut by: BTreeMap<usize, Vec<(usize, Vec<f64>)>> = BTreeMap::new();
    for (b, (l, v)) in blocks {
        if let Some(v) = v.into_iter().collect::<Option<Vec<f64>>>() {
            by.entry(l).or_default().push((b, v));
        }
    }
    by
}

/// The warm-up of a warm run's lifetimes on `metric`; None when the trials ran in no
/// lifetimes or no position could be tested.
pub fn detect(trials: &[TrialData], arms: usize, metric: &str, confidence: f64) -> Option<Warmup> {
    let by = series(trials, arms, metric);
    let level = crate::stats::Level(confidence)
        .split(arms * POSITIONS)
        .get();
    let mut shifts = Vec::new();
    let mut bursts = None;
    for k in 0..POSITIONS {
        let per_arm: Vec<Option<[f64; 3]>> = (0..arms)
            .map(|a| {
                let d: Vec<f64> = by
                    .values()
                    .filter(|s| s.len() > k + 1)
                    .map(|s| {
                        let rest = &s[k + 1..];
                        s[k].1[a] - rest.iter().map(|x| x.1[a]).sum::<f64>() / rest.len() as f64
                    })
                    .collect();
                if d.len() < MIN_LIFETIMES {
                    return None;
                }
                let e = hodges_lehmann(&d, level)?;
                let pct = |x: f64| x.exp_m1() * 100.0;
                Some([pct(e.point), pct(e.lo?), pct(e.hi?)])
            })
            .collect();
        if per_arm.iter().all(Option::is_none) {
            break;
        }
        // Every arm shifted, all the same way: a warm-up the servers share.
        let shifted = per_arm.iter().all(Option::is_some)
            && (per_arm.iter().flatten().all(|[_, lo, _]| *lo > 0.0)
                || per_arm.iter().flatten().all(|[_, _, hi]| *hi < 0.0));
        shifts.push(per_arm);
        if !shifted {
            bursts = Some(k);
            break;
        }
    }
    if shifts.is_empty() {
        return None;
    }
    let tested = shifts.len();
    let bursts = bursts.unwrap_or(tested);
    let blocks_dropped = by
        .values()
        .filter(|s| keeps_enough(s.len(), bursts))
        .map(|s| bursts.min(s.len()))
        .sum();
    Some(Warmup {
        bursts,
        blocks: by.values().map(Vec::len).sum(),
        blocks_dropped,
        confidence: level,
        shifts,
        unsettled: bursts == tested && tested == POSITIONS,
    })
}

/// `trials` as the analysis measures them: without the warm-up [`detect`] finds. Decisions
/// taken while the run goes (stopping, sizing lifetimes) see the same data as the answer.
pub fn measured(
    trials: Vec<TrialData>,
    arms: usize,
    metric: &str,
    confidence: f64,
) -> Vec<TrialData> {
    match detect(&trials, arms, metric, confidence) {
        Some(w) if w.bursts > 0 => without(&trials, &w),
        _ => trials,
    }
}

/// Whether a lifetime of `blocks` keeps at least two measured blocks once `bursts` leading
/// ones are dropped; a shorter one keeps all of its blocks.
fn keeps_enough(blocks: usize, bursts: usize) -> bool {
    blocks >= bursts + 2
}

/// `trials` without the leading `w.bursts` blocks of every lifetime long enough to spare them
/// (every arm's trial of them).
pub fn without(trials: &[TrialData], w: &Warmup) -> Vec<TrialData> {
    if w.bursts == 0 {
        return trials.to_vec();
    }
    let mut blocks: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for t in trials {
        if let Some(l) = t.lifetime {
            let v = blocks.entry(l).or_default();
            if !v.contains(&t.block) {
                v.push(t.block);
            }
        }
    }
    let dropped: Vec<usize> = blocks
        .into_values()
        .filter(|v| keeps_enough(v.len(), w.bursts))
        .flat_map(|mut v| {
            v.sort_unstable();
            v.truncate(w.bursts);
            v
        })
        .collect();
    trials
        .iter()
        .filter(|t| !dropped.contains(&t.block))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lifetimes` × `per` blocks of two arms; the `cold` arms' first `slow` bursts of each
    /// lifetime at `f` of the rest, with a small deterministic wiggle.
    fn run(lifetimes: usize, per: usize, cold: &[usize], slow: usize, f: f64) -> Vec<TrialData> {
        let mut t = Vec::new();
        let mut block = 0;
        for l in 0..lifetimes {
            for k in 0..per {
                for arm in 0..2 {
                    let wiggle = 1.0 + 0.004 * ((l * 7 + k * 3 + arm * 5) % 5) as f64;
                    let f = if cold.contains(&arm) && k < slow {
                        f
                    } else {
                        1.0
                    };
                    t.push(TrialData {
                        block,
                        arm,
                        ok: true,
                        metrics: [("tps".to_string(), 1000.0 * f * wiggle)].into(),
                        lifetime: Some(l),
                        ..Default::default()
                    });
                }
                block += 1;
            }
        }
        t
    }

    #[test]
    fn a_cold_first_burst_of_every_server_is_dropped_for_every_arm_and_a_warm_run_keeps_all() {
        let t = run(20, 4, &[0, 1], 1, 0.9);
        let w = detect(&t, 2, "tps", 0.99).unwrap();
        assert_eq!(
            (w.bursts, w.blocks_dropped, w.unsettled),
            (1, 20, false),
            "{w:?}"
        );
        let [p, lo, hi] = w.shifts[0][0].unwrap();
        assert!(hi < -8.0 && lo > -12.0 && (p + 10.0).abs() < 1.5, "{w:?}");
        let kept = without(&t, &w);
        assert_eq!(kept.len(), 20 * 3 * 2);
        assert!(kept.iter().all(|x| x.metrics["tps"] > 950.0));
        // What decisions during the run see is what the analysis keeps.
        assert_eq!(measured(t, 2, "tps", 0.99).len(), kept.len());
        // Warm from the first burst: nothing dropped.
        let w = detect(&run(20, 4, &[0], 0, 0.9), 2, "tps", 0.99).unwrap();
        assert_eq!((w.bursts, w.blocks_dropped), (0, 0), "{w:?}");
        assert_eq!(without(&run(2, 2, &[], 0, 1.0), &w).len(), 8);
    }

    #[test]
    fn an_arms_early_advantage_is_kept_in_its_contrast() {
        // Arm 1 is 10% faster in its first burst of every lifetime, arm 0 is not: not a
        // warm-up the servers share, so nothing is dropped and the advantage stays measured.
        let t = run(20, 4, &[1], 1, 1.1);
        let w = detect(&t, 2, "tps", 0.99).unwrap();
        assert_eq!((w.bursts, w.blocks_dropped), (0, 0), "{w:?}");
        let kept = measured(t.clone(), 2, "tps", 0.99);
        assert_eq!(kept.len(), t.len());
        let early: Vec<f64> = kept
            .iter()
            .filter(|x| x.arm == 1 && x.metrics["tps"] > 1050.0)
            .map(|x| x.metrics["tps"])
            .collect();
        assert_eq!(
            early.len(),
            20,
            "every lifetime's fast first burst is measured"
        );
    }

    #[test]
    fn no_lifetime_is_left_unusable() {
        // Two-block lifetimes whose first burst is cold for both arms: dropping it would leave
        // one block a lifetime, so every block is kept.
        let t = run(20, 2, &[0, 1], 1, 0.87);
        let w = detect(&t, 2, "tps", 0.99).unwrap();
        assert_eq!((w.bursts, w.blocks_dropped), (1, 0), "{w:?}");
        assert!(
            !w.unsettled,
            "one position testable says nothing of the next: {w:?}"
        );
        assert_eq!(without(&t, &w).len(), t.len());
    }

    #[test]
    fn a_warm_up_longer_than_the_positions_tested_is_unsettled_and_too_few_lifetimes_test_nothing()
    {
        let w = detect(&run(20, 6, &[0, 1], 4, 0.9), 2, "tps", 0.99).unwrap();
        assert!(w.unsettled && w.bursts == POSITIONS, "{w:?}");
        assert!(detect(&run(5, 4, &[0, 1], 1, 0.9), 2, "tps", 0.99).is_none());
        // No lifetimes (a command, or the restart design): nothing to detect.
        let mut t = run(20, 4, &[0, 1], 1, 0.9);
        t.iter_mut().for_each(|x| x.lifetime = None);
        assert!(detect(&t, 2, "tps", 0.99).is_none());
    }
}
