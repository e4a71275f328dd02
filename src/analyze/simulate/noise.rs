//! The study's seeded generators: run-level noise on the log scale (normal, skewed, bimodal,
//! heavy-tailed, drifting), paired scenarios, and three arms with noise in one arm only.

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
