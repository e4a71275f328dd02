//! Each design replicated on simulated blocks: the fixed design with Holm, the sequential rule,
//! O'Brien–Fleming looks, the planner's promised power, and interval coverage.

use super::noise::{Rng, Scenario, ThreeArms};
use crate::analyze::sequential::{Decision, GroupSequential};
use crate::analyze::verdict::{
    Design, SEQUENTIAL_N_OPT, blocks_to_resolve, decide, holm_levels, paired_interval, planning_sd,
};
use crate::stats::{hodges_lehmann, signed_rank_p};

/// `run`'s fixed design at `blocks` blocks and family-wise `confidence`: the Holm step-down
/// levels and intervals of both contrasts, exactly as `verdict::contrasts` computes them.
fn holm_intervals(d: &[Vec<f64>; 2], confidence: f64) -> Vec<(f64, Option<(f64, f64)>)> {
    let p: Vec<f64> = d.iter().map(|x| signed_rank_p(x)).collect();
    let levels = holm_levels(&p, confidence, |i, level| {
        paired_interval(&d[i], level, &Design::Fixed).is_some_and(|e| e.excludes(0.0))
    });
    d.iter()
        .zip(levels)
        .map(|(x, l)| {
            let e = paired_interval(x, l, &Design::Fixed);
            (l, e.and_then(|e| Some((e.lo?, e.hi?))))
        })
        .collect()
}

/// What `run`'s fixed design did over many replications of a three-arm experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedOutcome {
    /// Family-wise rate of wrong directions (FASTER/SLOWER where the arm equals the baseline).
    pub wrong_directions: f64,
    /// Coverage of each printed interval of its arm's true effect.
    pub coverage: f64,
    /// Mean level the intervals were printed at.
    pub mean_level: f64,
    /// Share of replications in which every printed interval covered its arm's true effect.
    pub joint_coverage: f64,
    /// The Bonferroni bound for that joint coverage from the levels printed: mean over
    /// replications of 1 − Σ (1 − level).
    pub joint_bound: f64,
}

/// `run`'s fixed design (Holm step-down levels and intervals) over `reps` replications.
pub fn fixed_three_arms(
    s: ThreeArms,
    blocks: usize,
    confidence: f64,
    reps: usize,
    seed: u64,
) -> FixedOutcome {
    let truth = [s.pseudo_median(0, seed ^ 1), s.pseudo_median(1, seed ^ 2)];
    let mut rng = Rng::new(seed);
    let (mut fwe, mut hits, mut level_sum, mut n) = (0usize, 0usize, 0.0, 0usize);
    let (mut joint, mut bound) = (0usize, 0.0);
    for _ in 0..reps {
        let d = s.blocks(blocks, &mut rng);
        let iv = holm_intervals(&d, confidence);
        let mut wrong = false;
        let mut all = true;
        let mut miss_allowed = 0.0;
        for (a, (level, b)) in iv.iter().enumerate() {
            let Some((lo, hi)) = b else { continue };
            if s.arms[a].0 == 0.0 && (*lo > 0.0 || *hi < 0.0) {
                wrong = true;
            }
            let hit = *lo <= truth[a] && truth[a] <= *hi;
            hits += hit as usize;
            all &= hit;
            miss_allowed += crate::stats::Level(*level).alpha();
            level_sum += level;
            n += 1;
        }
        fwe += wrong as usize;
        joint += all as usize;
        bound += 1.0 - miss_allowed;
    }
    FixedOutcome {
        wrong_directions: fwe as f64 / reps as f64,
        coverage: hits as f64 / n.max(1) as f64,
        mean_level: level_sum / n.max(1) as f64,
        joint_coverage: joint as f64 / reps as f64,
        joint_bound: bound / reps as f64,
    }
}

/// `run --sequential` exactly: a look after every complete block from the confidence
/// sequence's first block, α/2 per contrast, stop when both contrasts are settled (or at
/// `max_blocks`). Returns the family-wise non-coverage (some reported interval misses its true
/// mean), the per-interval coverage, and the mean blocks run.
pub fn sequential_three_arms(
    s: ThreeArms,
    effect: f64,
    confidence: f64,
    max_blocks: usize,
    reps: usize,
    seed: u64,
) -> (f64, f64, f64) {
    let mut big = Rng::new(seed ^ 7);
    let sample = s.blocks(100_000, &mut big);
    let truth: Vec<f64> = sample
        .iter()
        .map(|x| x.iter().sum::<f64>() / x.len() as f64)
        .collect();
    let design = Design::Sequential {
        n_opt: SEQUENTIAL_N_OPT,
    };
    let level = crate::stats::Level(confidence).split(2).get();
    let mut rng = Rng::new(seed);
    let (mut fwe, mut hits, mut blocks) = (0usize, 0usize, 0usize);
    for _ in 0..reps {
        let d = s.blocks(max_blocks, &mut rng);
        let mut stop = max_blocks;
        for n in crate::analyze::sequential::ConfidenceSequence::MIN_BLOCKS..=max_blocks {
            let settled = d.iter().all(|x| {
                paired_interval(&x[..n], level, &design)
                    .and_then(|e| {
                        Some(decide(
                            e.lo?,
                            e.hi?,
                            effect,
                            crate::analyze::verdict::Better::Lower,
                        ))
                    })
                    .is_some_and(|(v, _)| v != crate::analyze::verdict::Verdict::Inconclusive)
            });
            if settled {
                stop = n;
                break;
            }
        }
        blocks += stop;
        let mut missed = false;
        for (a, x) in d.iter().enumerate() {
            let e = paired_interval(&x[..stop], level, &design).expect("non-empty");
            let (lo, hi) = (
                e.lo.unwrap_or(f64::NEG_INFINITY),
                e.hi.unwrap_or(f64::INFINITY),
            );
            let hit = lo <= truth[a] && truth[a] <= hi;
            missed |= !hit;
            hits += hit as usize;
        }
        fwe += missed as usize;
    }
    (
        fwe as f64 / reps as f64,
        hits as f64 / (2 * reps) as f64,
        blocks as f64 / reps as f64,
    )
}

/// The planner `run` prints for an INCONCLUSIVE contrast: from a pilot of `pilot` blocks, the
/// total blocks for an 80% chance to resolve δ; then the probability that a run of that size
/// does resolve it (EQUIVALENT for a zero effect, a direction for an effect of `effect`·2).
pub fn planner_power(
    s: Scenario,
    effect: f64,
    confidence: f64,
    pilot: usize,
    reps: usize,
    seed: u64,
) -> (f64, f64) {
    let mut rng = Rng::new(seed);
    let (mut resolved, mut planned) = (0usize, 0usize);
    for _ in 0..reps {
        let p = s.blocks(pilot, &mut rng);
        let n = blocks_to_resolve(planning_sd(&p), effect, confidence, 0.8).max(pilot);
        planned += n;
        let mut d = p;
        d.extend(s.blocks(n - pilot, &mut rng));
        let e = hodges_lehmann(&d, confidence).expect("enough blocks");
        if let (Some(lo), Some(hi)) = (e.lo, e.hi) {
            let (v, _) = decide(lo, hi, effect, crate::analyze::verdict::Better::Lower);
            resolved += (v != crate::analyze::verdict::Verdict::Inconclusive) as usize;
        }
    }
    (resolved as f64 / reps as f64, planned as f64 / reps as f64)
}

/// Fraction of Hodges–Lehmann signed-rank intervals that contain the true effect.
pub fn coverage(s: Scenario, blocks: usize, confidence: f64, reps: usize, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    let mut hit = 0;
    for _ in 0..reps {
        let d = s.blocks(blocks, &mut rng);
        let e = hodges_lehmann(&d, confidence).expect("enough blocks");
        if e.lo.unwrap() <= s.effect && s.effect <= e.hi.unwrap() {
            hit += 1;
        }
    }
    hit as f64 / reps as f64
}

/// Outcome of running one design many times.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SequentialOutcome {
    /// Fraction of runs that crossed a boundary (false positives under no effect, power otherwise).
    pub reject_rate: f64,
    /// Average runs (blocks × 2 arms) until the design stopped.
    pub mean_runs: f64,
}

pub fn run_sequential(
    s: Scenario,
    design: &GroupSequential,
    reps: usize,
    seed: u64,
) -> SequentialOutcome {
    let mut rng = Rng::new(seed);
    let (mut rejected, mut runs) = (0usize, 0usize);
    for _ in 0..reps {
        let all = s.blocks(design.max_blocks, &mut rng);
        for &n in &design.look_blocks {
            match design.look(&all[..n]) {
                Decision::Reject { .. } => {
                    rejected += 1;
                    runs += 2 * n;
                    break;
                }
                Decision::Complete { .. } => {
                    runs += 2 * n;
                    break;
                }
                Decision::Continue => {}
            }
        }
    }
    SequentialOutcome {
        reject_rate: rejected as f64 / reps as f64,
        mean_runs: runs as f64 / reps as f64,
    }
}

/// Fraction of runs in which the open-ended confidence sequence for the mean log-ratio ever
/// excludes zero, checking after every 5 blocks up to `max_blocks`.
pub fn cs_false_positives(
    s: Scenario,
    alpha: f64,
    max_blocks: usize,
    reps: usize,
    seed: u64,
) -> f64 {
    let mut rng = Rng::new(seed);
    let mut hits = 0;
    for _ in 0..reps {
        let d = s.blocks(max_blocks, &mut rng);
        let mut cs = crate::analyze::sequential::ConfidenceSequence::new(alpha, 100.0);
        let mut crossed = false;
        for (i, x) in d.iter().enumerate() {
            cs.push(*x);
            if (i + 1) % 5 == 0 && cs.excludes(s.effect) {
                crossed = true;
                break;
            }
        }
        hits += crossed as usize;
    }
    hits as f64 / reps as f64
}

/// Power of a fixed-size signed-rank test at level `alpha`.
pub fn fixed_power(s: Scenario, blocks: usize, alpha: f64, reps: usize, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    (0..reps)
        .filter(|_| signed_rank_p(&s.blocks(blocks, &mut rng)) < alpha)
        .count() as f64
        / reps as f64
}
