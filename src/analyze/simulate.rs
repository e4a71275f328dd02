//! The simulation study behind the statistics engine: coverage of the paired intervals on
//! skewed, bimodal and outlier-ridden data; the false-positive rate of sequential stopping in
//! A/A runs, with and without drift; runs to a verdict against the fixed designs; power lost to
//! outliers. Deterministic (seeded) and pure; `tests/stats_simulation.rs` checks it at a size
//! that fits CI and prints the table with `-- --nocapture`.

use super::sequential::{Decision, GroupSequential};
use super::stats::{hodges_lehmann, signed_rank_p};
use super::verdict::{
    Design, SEQUENTIAL_N_OPT, blocks_needed, blocks_to_resolve, decide, holm_levels,
    paired_interval, planning_sd, unpaired_runs_needed,
};
use crate::rng::XorShift;
use statrs::distribution::{ContinuousCDF, Normal};

/// Run-level noise on the log scale.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Noise {
    /// Lognormal run times: N(0, σ) on the log scale.
    Lognormal { sigma: f64 },
    /// "THP hit or miss": with probability `p` a run pays `penalty` (log) more, plus N(0, σ).
    Bimodal { sigma: f64, p: f64, penalty: f64 },
    /// N(0, σ), and 1% of runs at +22σ.
    Outliers { sigma: f64 },
}

pub struct Rng {
    x: XorShift,
    normal: Normal,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            x: XorShift::new(seed),
            normal: Normal::standard(),
        }
    }
    pub fn uniform(&mut self) -> f64 {
        ((self.x.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub fn gauss(&mut self) -> f64 {
        let u = self.uniform();
        self.normal.inverse_cdf(u)
    }
    pub fn noise(&mut self, n: Noise) -> f64 {
        match n {
            Noise::Lognormal { sigma } => sigma * self.gauss(),
            Noise::Bimodal { sigma, p, penalty } => {
                sigma * self.gauss() + if self.uniform() < p { penalty } else { 0.0 }
            }
            Noise::Outliers { sigma } => {
                sigma * self.gauss()
                    + if self.uniform() < 0.01 {
                        22.0 * sigma
                    } else {
                        0.0
                    }
            }
        }
    }
}

/// A paired experiment: per block a shared block level (`sd_block`), then one run per arm.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Scenario {
    /// True log-ratio of arm to baseline.
    pub effect: f64,
    pub sd_block: f64,
    pub noise: Noise,
    /// Multiplicative drift per block, over time (0.05 / 100 = +5% over 100 blocks).
    pub drift_per_block: f64,
}

impl Scenario {
    /// Per-block log-ratios d = ln(arm) − ln(baseline) for `n` blocks.
    pub fn blocks(&self, n: usize, rng: &mut Rng) -> Vec<f64> {
        (0..n)
            .map(|i| {
                // Drift moves with time: the two runs of a block happen one after the other,
                // in random order, so each sees a slightly different level.
                let level = self.sd_block * rng.gauss();
                let base_first = rng.uniform() < 0.5;
                let at = |slot: usize| {
                    (1.0 + self.drift_per_block * (i as f64 + slot as f64 / 2.0)).ln()
                };
                let (base_drift, arm_drift) = if base_first {
                    (at(0), at(1))
                } else {
                    (at(1), at(0))
                };
                let base = level + base_drift + rng.noise(self.noise);
                let arm = level + arm_drift + self.effect + rng.noise(self.noise);
                arm - base
            })
            .collect()
    }
}

/// Three arms as `run` has them: a baseline and two arms, each with its own effect and noise
/// (noise may differ by arm, so per-block differences need not be symmetric). Per block one
/// shared level; the arms run in random order under drift.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ThreeArms {
    pub sd_block: f64,
    pub base: Noise,
    pub arms: [(f64, Noise); 2],
    pub drift_per_block: f64,
}

impl ThreeArms {
    /// Per-block log-ratios of arm 1 and arm 2 to the baseline.
    pub fn blocks(&self, n: usize, rng: &mut Rng) -> [Vec<f64>; 2] {
        let mut d = [Vec::with_capacity(n), Vec::with_capacity(n)];
        for i in 0..n {
            let level = self.sd_block * rng.gauss();
            let mut slots = [0usize, 1, 2];
            for k in (1..3).rev() {
                let j = (rng.uniform() * (k + 1) as f64) as usize;
                slots.swap(k, j.min(k));
            }
            let at =
                |slot: usize| (1.0 + self.drift_per_block * (i as f64 + slot as f64 / 3.0)).ln();
            let base = level + at(slots[0]) + rng.noise(self.base);
            for (a, (effect, noise)) in self.arms.iter().enumerate() {
                let v = level + at(slots[a + 1]) + effect + rng.noise(*noise);
                d[a].push(v - base);
            }
        }
        d
    }

    /// The estimand of the paired intervals for arm `a`: the pseudo-median of its per-block
    /// log-ratio (the centre of the Walsh averages), from a large sample of pairs.
    pub fn pseudo_median(&self, a: usize, seed: u64) -> f64 {
        let mut rng = Rng::new(seed);
        let d = self.blocks(20_000, &mut rng)[a].clone();
        let mut w: Vec<f64> = (0..400_000)
            .map(|_| {
                let i = (rng.uniform() * d.len() as f64) as usize;
                let j = (rng.uniform() * d.len() as f64) as usize;
                0.5 * (d[i.min(d.len() - 1)] + d[j.min(d.len() - 1)])
            })
            .collect();
        w.sort_by(f64::total_cmp);
        w[w.len() / 2]
    }
}

/// `run`'s fixed design at `blocks` blocks and family-wise `confidence`: the Holm step-down
/// levels and intervals of both contrasts, exactly as `verdict::contrasts` computes them.
fn holm_intervals(d: &[Vec<f64>; 2], confidence: f64) -> Vec<(f64, Option<(f64, f64)>)> {
    let p: Vec<f64> = d.iter().map(|x| signed_rank_p(x)).collect();
    let levels = holm_levels(&p, 1.0 - confidence, |i, level| {
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
            miss_allowed += 1.0 - level;
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
    let level = 1.0 - (1.0 - confidence) / 2.0;
    let mut rng = Rng::new(seed);
    let (mut fwe, mut hits, mut blocks) = (0usize, 0usize, 0usize);
    for _ in 0..reps {
        let d = s.blocks(max_blocks, &mut rng);
        let mut stop = max_blocks;
        for n in super::sequential::ConfidenceSequence::MIN_BLOCKS..=max_blocks {
            let settled = d.iter().all(|x| {
                paired_interval(&x[..n], level, &design)
                    .and_then(|e| Some(decide(e.lo?, e.hi?, effect, super::verdict::Better::Lower)))
                    .is_some_and(|(v, _)| v != super::verdict::Verdict::Inconclusive)
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
            let (v, _) = decide(lo, hi, effect, super::verdict::Better::Lower);
            resolved += (v != super::verdict::Verdict::Inconclusive) as usize;
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
        let mut cs = super::sequential::ConfidenceSequence::new(alpha, 100.0);
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

/// One line of the study's table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub study: String,
    pub measured: f64,
    pub target: String,
    pub pass: bool,
}

/// The whole study at `reps` replications (CI uses a few hundred; the example a few thousand).
pub fn study(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let se = |p: f64, n: usize| (p * (1.0 - p) / n as f64).sqrt();
    let noises = [
        ("lognormal", Noise::Lognormal { sigma: 0.05 }),
        (
            "bimodal THP hit/miss",
            Noise::Bimodal {
                sigma: 0.02,
                p: 0.3,
                penalty: 0.25,
            },
        ),
        ("1% at +22σ", Noise::Outliers { sigma: 0.05 }),
    ];
    for (i, (name, noise)) in noises.iter().enumerate() {
        for conf in [0.95, 0.99] {
            let s = Scenario {
                effect: 0.03,
                sd_block: 0.1,
                noise: *noise,
                drift_per_block: 0.0,
            };
            let c = coverage(s, 30, conf, reps, 100 + i as u64);
            rows.push(Row {
                study: format!("coverage, {name}, 30 blocks, {:.0}%", conf * 100.0),
                measured: c,
                target: format!("≥ {:.3}", conf - 0.01),
                pass: c >= conf - 0.01,
            });
        }
    }
    for (alpha, drift) in [
        (0.05, 0.0),
        (0.01, 0.0),
        (0.05, 0.05 / 100.0),
        (0.01, 0.05 / 100.0),
    ] {
        let design = GroupSequential::new(5, 100, alpha);
        let s = Scenario {
            effect: 0.0,
            sd_block: 0.1,
            noise: Noise::Lognormal { sigma: 0.05 },
            drift_per_block: drift,
        };
        let o = run_sequential(s, &design, reps * 4, 7 + (alpha * 1000.0) as u64);
        let limit = alpha + 2.0 * se(alpha, reps * 4);
        rows.push(Row {
            study: format!(
                "A/A false positives, sequential K=5, α={alpha}{}",
                if drift > 0.0 { ", +5% drift" } else { "" }
            ),
            measured: o.reject_rate,
            target: format!("≤ {limit:.4}"),
            pass: o.reject_rate <= limit,
        });
    }
    for alpha in [0.05, 0.01] {
        let s = Scenario {
            effect: 0.0,
            sd_block: 0.1,
            noise: Noise::Lognormal { sigma: 0.05 },
            drift_per_block: 0.05 / 100.0,
        };
        let fp = cs_false_positives(s, alpha, 500, reps, 11);
        let limit = alpha + 2.0 * se(alpha, reps);
        rows.push(Row {
            study: format!(
                "A/A false positives, confidence sequence checked every 5 blocks to 500, α={alpha}"
            ),
            measured: fp,
            target: format!("≤ {limit:.4}"),
            pass: fp <= limit,
        });
    }
    // The published 40-day comparison: 1.1% effect, 10% CV, within-block correlation 0.9, 99.99%, 80% power.
    let (cv, rho, effect, conf, power) = (0.1f64, 0.9f64, 0.011f64, 0.9999f64, 0.8f64);
    let sd_d = (2.0 * (1.0 - rho)).sqrt() * cv;
    let design = GroupSequential::plan(5, sd_d, effect, 1.0 - conf, power);
    let s = Scenario {
        effect: -(1.0 + effect).ln(),
        sd_block: (rho).sqrt() * cv,
        noise: Noise::Lognormal {
            sigma: (1.0 - rho).sqrt() * cv,
        },
        drift_per_block: 0.0,
    };
    let o = run_sequential(s, &design, reps.max(100), 99);
    rows.push(Row {
        study: format!(
            "runs to verdict, 1.1% effect, sequential paired (max {} runs)",
            2 * design.max_blocks
        ),
        measured: o.mean_runs,
        target: "≤ 800".into(),
        pass: o.mean_runs <= 800.0,
    });
    rows.push(Row {
        study: "power of that design".into(),
        measured: o.reject_rate,
        target: "≥ 0.75".into(),
        pass: o.reject_rate >= 0.75,
    });
    let paired = (2 * blocks_needed(sd_d, effect, conf, power)) as f64;
    rows.push(Row {
        study: "runs, fixed paired design (formula)".into(),
        measured: paired,
        target: "≈ 758".into(),
        pass: (700.0..850.0).contains(&paired),
    });
    rows.push(Row {
        study: "runs, fixed unpaired design (formula)".into(),
        measured: unpaired_runs_needed(cv, effect, conf, power) as f64,
        target: "≈ 7,412".into(),
        pass: (7_300.0..7_500.0).contains(&(unpaired_runs_needed(cv, effect, conf, power) as f64)),
    });
    // Power lost to 1% of runs at +22σ, at a size with about 80% power on clean data.
    let clean = Scenario {
        effect: 0.02,
        sd_block: 0.1,
        noise: Noise::Lognormal { sigma: 0.05 },
        drift_per_block: 0.0,
    };
    let n = blocks_needed((2.0f64).sqrt() * 0.05, (0.02f64).exp() - 1.0, 0.95, 0.8);
    let p_clean = fixed_power(clean, n, 0.05, reps * 2, 5);
    let p_dirty = fixed_power(
        Scenario {
            noise: Noise::Outliers { sigma: 0.05 },
            ..clean
        },
        n,
        0.05,
        reps * 2,
        5,
    );
    rows.push(Row {
        study: format!(
            "power lost to 1% outliers at +22σ ({n} blocks, {p_clean:.3} → {p_dirty:.3})"
        ),
        measured: p_clean - p_dirty,
        target: "≤ 0.10".into(),
        pass: p_clean - p_dirty <= 0.10,
    });
    rows.extend(production_rows(reps));
    rows.extend(judge_rows(reps));
    rows
}

/// Rows for `judge`: A/A fleets (3 vs 3 hosts, 24 h at a 30 s step, 10-minute blocks, 99%)
/// whose hosts are autocorrelated from mildly to strongly must not get a direction more often
/// than the nominal 1%; a real +5% must be covered at 99%; and the same strongly autocorrelated
/// A/A data judged per sample (Mann–Whitney, as Kayenta does) alarm far above 1%, which shows
/// the data are hard enough for the first rows to mean something.
pub fn judge_rows(reps: usize) -> Vec<Row> {
    let se = |p: f64, n: usize| (p * (1.0 - p) / n as f64).sqrt();
    let n = (reps / 8).max(200);
    let fleet = |phi: f64, effect: f64| Fleet {
        hosts: 3,
        step: 30.0,
        hours: 24.0,
        phi,
        sigma: 0.1,
        effect,
    };
    let mut rows = Vec::new();
    let limit = 0.01 + 2.0 * se(0.01, n);
    for (phi, what) in [(0.9, "5 min"), (0.99, "50 min")] {
        let (wrong, _, _) = judge_fleets(fleet(phi, 0.0), 600.0, 0.99, n, 31, false);
        rows.push(Row {
            study: format!(
                "judge A/A, 3 vs 3 hosts, 24 h at 30 s, AR(1) φ={phi}/step (correlated over ~{what}), 10m blocks, 99%: false directions"
            ),
            measured: wrong,
            target: format!("≤ {limit:.4}"),
            pass: wrong <= limit,
        });
    }
    let (_, covered, _) = judge_fleets(fleet(0.9, 0.05), 600.0, 0.99, n, 32, false);
    let target = 0.99 - 2.0 * se(0.99, n);
    rows.push(Row {
        study: "judge +5% on the canary, φ=0.9/step, 99%: the interval covers +5%".into(),
        measured: covered,
        target: format!("≥ {target:.4}"),
        pass: covered >= target,
    });
    let m = (n / 4).max(50);
    let (_, _, naive) = judge_fleets(fleet(0.99, 0.0), 600.0, 0.99, m, 33, true);
    rows.push(Row {
        study: "the same φ=0.99 A/A judged per sample (Mann–Whitney on every 30 s sample, Kayenta's way), 99%: false alarms".into(),
        measured: naive,
        target: "≥ 0.1000".into(),
        pass: naive >= 0.1,
    });
    rows
}

/// Rows that simulate what `run` itself does: three arms; noise in one arm only (so per-block
/// differences are asymmetric and the signed-rank interval's symmetry assumption is tested);
/// heavy tails and drift; its 10-block default with Holm; its sequential rule looking after
/// every block; and the blocks its planner asks for.
pub fn production_rows(reps: usize) -> Vec<Row> {
    let se = |p: f64, n: usize| (p * (1.0 - p) / n as f64).sqrt();
    let mut rows = Vec::new();
    let bimodal = Noise::Bimodal {
        sigma: 0.02,
        p: 0.3,
        penalty: 0.25,
    };
    let tails = Noise::Outliers { sigma: 0.03 };
    for conf in [0.95, 0.99] {
        // A/A/A (a true null): every arm heavy-tailed, under drift.
        let aaa = ThreeArms {
            sd_block: 0.1,
            base: tails,
            arms: [(0.0, tails), (0.0, tails)],
            drift_per_block: 0.005,
        };
        let fwe = fixed_three_arms(aaa, 10, conf, reps, 21).wrong_directions;
        let alpha = 1.0 - conf;
        let limit = alpha + 2.0 * se(alpha, reps);
        rows.push(Row {
            study: format!(
                "run default (10 blocks, 3 arms, Holm, {:.0}%): family-wise false directions, heavy tails + drift",
                conf * 100.0
            ),
            measured: fwe,
            target: format!("≤ {limit:.4}"),
            pass: fwe <= limit,
        });
        let sym = ThreeArms {
            sd_block: 0.1,
            base: Noise::Lognormal { sigma: 0.03 },
            arms: [(-0.03, Noise::Lognormal { sigma: 0.03 }), (0.0, tails)],
            drift_per_block: 0.005,
        };
        let o = fixed_three_arms(sym, 10, conf, reps, 22);
        let (cov, level) = (o.coverage, o.mean_level);
        let target = level - 2.0 * se(level, 2 * reps);
        rows.push(Row {
            study: format!(
                "run default, {:.0}%: coverage at each interval's printed level (mean {:.2}%), symmetric noise",
                conf * 100.0,
                level * 100.0
            ),
            measured: cov,
            target: format!("≥ {target:.4}"),
            pass: cov >= target,
        });
        // Real effects in both arms: the intervals are at Holm's step levels, not a joint
        // band; how often both cover at once must still respect the Bonferroni bound of the
        // levels they were printed at.
        let real = ThreeArms {
            arms: [
                (-0.03, Noise::Lognormal { sigma: 0.03 }),
                (0.02, Noise::Lognormal { sigma: 0.03 }),
            ],
            ..sym
        };
        let o = fixed_three_arms(real, 10, conf, reps, 26);
        let target = o.joint_bound - 2.0 * se(o.joint_bound, reps);
        rows.push(Row {
            study: format!(
                "run default, {:.0}%: joint coverage of both intervals, real effects in both arms (−3%, +2%) (bound 1 − Σ(1 − level) = {:.4})",
                conf * 100.0,
                o.joint_bound
            ),
            measured: o.joint_coverage,
            target: format!("≥ {target:.4}"),
            pass: o.joint_coverage >= target,
        });
        // Bimodal noise in one arm only: per-block differences are asymmetric, which the
        // signed-rank interval assumes away. The claim `run` prints then (its bimodality
        // warning) is "within 1 point of the printed level".
        let skew = ThreeArms {
            arms: [(-0.03, bimodal), (0.0, tails)],
            ..sym
        };
        let o = fixed_three_arms(skew, 10, conf, reps, 23);
        let (cov, level) = (o.coverage, o.mean_level);
        let target = level - 0.01 - 2.0 * se(level, 2 * reps);
        rows.push(Row {
            study: format!(
                "run default, {:.0}%: coverage within 1 point of the printed level ({:.2}%), bimodal noise in one arm",
                conf * 100.0,
                level * 100.0
            ),
            measured: cov,
            target: format!("≥ {target:.4}"),
            pass: cov >= target,
        });
    }
    let seq = ThreeArms {
        sd_block: 0.1,
        base: Noise::Lognormal { sigma: 0.03 },
        arms: [(0.0, bimodal), (0.0, tails)],
        drift_per_block: 0.002,
    };
    let n_seq = (reps / 4).max(100);
    let (miss, _, mean_blocks) = sequential_three_arms(seq, 0.05, 0.95, 300, n_seq, 25);
    let limit = 0.05 + 2.0 * se(0.05, n_seq);
    rows.push(Row {
        study: format!(
            "run --sequential (look every block, α/2 per contrast, 95%, ≤ 300 blocks, mean {mean_blocks:.0}): family-wise non-coverage of the true mean log-ratios, bimodal arm"
        ),
        measured: miss,
        target: format!("≤ {limit:.4}"),
        pass: miss <= limit,
    });
    for (truth, name) in [
        (0.0, "no effect (EQUIVALENT)"),
        (-0.04, "a 2δ effect (FASTER)"),
    ] {
        let s = Scenario {
            effect: truth,
            sd_block: 0.1,
            noise: Noise::Lognormal { sigma: 0.05 },
            drift_per_block: 0.0,
        };
        let n_plan = (reps / 8).max(100);
        let (power, planned) = planner_power(s, 0.02, 0.99, 10, n_plan, 24);
        let target = 0.8 - 2.0 * se(0.8, n_plan);
        rows.push(Row {
            study: format!(
                "run's planner (10-block pilot → {planned:.0} blocks, promised 80%): resolved δ = 2%, {name}"
            ),
            measured: power,
            target: format!("≥ {target:.4}"),
            pass: power >= target,
        });
    }
    rows
}

/// A simulated fleet for `judge`: `hosts` per group sampled every `step` seconds for `hours`.
/// Each host's log value is an AR(1) with lag-1 correlation `phi` per step and marginal SD
/// `sigma`, on a diurnal curve (±30%) and traffic shocks shared by every host (which pairing by
/// time must cancel); the canary's values are multiplied by 1 + `effect`.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    pub hosts: usize,
    pub step: f64,
    pub hours: f64,
    pub phi: f64,
    pub sigma: f64,
    pub effect: f64,
}

impl Fleet {
    pub fn series(
        &self,
        rng: &mut Rng,
    ) -> (
        Vec<crate::collect::prometheus::Series>,
        Vec<crate::collect::prometheus::Series>,
    ) {
        use crate::collect::prometheus::Series;
        let n = (self.hours * 3600.0 / self.step) as usize;
        let day = 86_400.0;
        let mut shock = 0.0;
        let shared: Vec<f64> = (0..n)
            .map(|i| {
                shock = 0.95 * shock + 0.2 * (1.0 - 0.95f64.powi(2)).sqrt() * rng.gauss();
                let t = i as f64 * self.step;
                (1.0 + 0.3 * (2.0 * std::f64::consts::PI * t / day).sin()).ln() + shock
            })
            .collect();
        let innovation = self.sigma * (1.0 - self.phi * self.phi).sqrt();
        let mut host = |canary: bool, h: usize| {
            let mut x = self.sigma * rng.gauss();
            let lift = if canary {
                (1.0 + self.effect).ln()
            } else {
                0.0
            };
            let points = shared
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    x = self.phi * x + innovation * rng.gauss();
                    (i as f64 * self.step, (s + x + lift).exp())
                })
                .collect();
            Series {
                labels: [(
                    "instance".to_string(),
                    format!("{}-{h}", if canary { "canary" } else { "base" }),
                )]
                .into(),
                points,
            }
        };
        let c = (0..self.hosts).map(|h| host(true, h)).collect();
        let b = (0..self.hosts).map(|h| host(false, h)).collect();
        (c, b)
    }
}

/// What `judge` concludes on `reps` simulated fleets: the share of false directions (FASTER or
/// SLOWER when the truth is 0, or the wrong one), the share of intervals covering the truth, and
/// the share a per-sample Mann–Whitney test (Kayenta's judge) would have alarmed on.
pub fn judge_fleets(
    f: Fleet,
    interval: f64,
    confidence: f64,
    reps: usize,
    seed: u64,
    per_sample: bool,
) -> (f64, f64, f64) {
    use super::judge::{Settings, Window, judge, prepare};
    use super::verdict::{Better, Verdict};
    let mut rng = Rng::new(seed);
    let truth = (1.0 + f.effect).ln();
    let (mut wrong, mut covered, mut naive) = (0usize, 0usize, 0usize);
    let w = Window {
        start: 0.0,
        end: f.hours * 3600.0,
        interval,
    };
    let settings = Settings {
        effect: 0.01,
        confidence,
        design: Design::Fixed,
    };
    for _ in 0..reps {
        let (c, b) = f.series(&mut rng);
        let p = prepare("m", Better::Lower, false, &c, &b, &w);
        let j = judge(vec![p], &settings).remove(0);
        if let Some(ct) = &j.contrast {
            let pct = ct.percent;
            let (lo, hi) = (
                pct.lo.unwrap_or(f64::NEG_INFINITY),
                pct.hi.unwrap_or(f64::INFINITY),
            );
            let t = f.effect * 100.0;
            if lo <= t && t <= hi {
                covered += 1;
            }
            let wrong_way = match ct.verdict {
                Verdict::Faster => truth >= 0.0,
                Verdict::Slower => truth <= 0.0,
                _ => false,
            };
            if wrong_way {
                wrong += 1;
            }
        }
        let logs = |s: &[crate::collect::prometheus::Series]| -> Vec<f64> {
            s.iter()
                .flat_map(|s| s.points.iter().map(|p| p.1.ln()))
                .collect()
        };
        if per_sample
            && let Some(s) = super::stats::mann_whitney_shift(&logs(&c), &logs(&b), confidence)
            && s.estimate.excludes(0.0)
        {
            naive += 1;
        }
    }
    let r = reps as f64;
    (wrong as f64 / r, covered as f64 / r, naive as f64 / r)
}
