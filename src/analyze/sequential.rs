//! Valid early stopping. Re-testing a fixed interval after every batch inflates false
//! positives; hugelab stops only by one of these rules:
//!
//! * **Group-sequential O'Brien–Fleming design** (O'Brien & Fleming 1979): up to K equally
//!   spaced looks at a planned maximum of blocks; at look k reject when |Z_k| ≥ C·√(K/k).
//!   C is computed so that P(any crossing | H0) = α exactly under the canonical joint
//!   distribution of Z_k (Jennison & Turnbull, *Group Sequential Methods*, 2000, §2.3 and the
//!   numerical integration of §19.2). Z_k is the standardized signed-rank statistic, whose
//!   sequence of looks has the same asymptotic joint distribution and is robust to outliers.
//! * **Confidence sequence** (open-ended): the normal-mixture boundary of Robbins (1970) as
//!   given by Howard, Ramdas, McAuliffe & Sekhon (2021, eq. 14), with a plug-in robust scale
//!   (an asymptotic confidence sequence, Waudby-Smith et al. 2021): valid at every n at once.

use statrs::distribution::{Continuous, ContinuousCDF, Normal};

/// Probability that a standard Brownian motion observed at information fractions `t`
/// (increasing, last = 1) crosses ±b_k at some look k.
pub fn crossing_probability(t: &[f64], b: &[f64]) -> f64 {
    crossing_probability_drift(t, b, 0.0)
}

/// As [`crossing_probability`] for a Brownian motion with drift `theta` (Z_k has mean θ√t_k):
/// the power of the design when the standardized effect at the maximum sample size is θ.
pub fn crossing_probability_drift(t: &[f64], b: &[f64], theta: f64) -> f64 {
    const GRID: usize = 301;
    let n = Normal::standard();
    // Score scale: S_k = Z_k √t_k, increments N(0, t_k − t_{k−1}); bounds ±b_k √t_k.
    let mut grid: Vec<f64> = Vec::new();
    let mut dens: Vec<f64> = Vec::new();
    let mut crossed = 0.0;
    let mut prev_t = 0.0;
    for (k, (&tk, &bk)) in t.iter().zip(b).enumerate() {
        let sd = (tk - prev_t).sqrt();
        let bound = bk * tk.sqrt();
        let mu = theta * (tk - prev_t);
        if k == 0 {
            crossed += (1.0 - n.cdf((bound - mu) / sd)) + n.cdf((-bound - mu) / sd);
        } else {
            let h = grid[1] - grid[0];
            for (i, (&u, &f)) in grid.iter().zip(&dens).enumerate() {
                let w = if i == 0 || i == grid.len() - 1 {
                    0.5
                } else {
                    1.0
                };
                crossed += w
                    * h
                    * f
                    * ((1.0 - n.cdf((bound - u - mu) / sd)) + n.cdf((-bound - u - mu) / sd));
            }
        }
        // Sub-density of S_k on the continuation region.
        let new_grid: Vec<f64> = (0..GRID)
            .map(|i| -bound + 2.0 * bound * i as f64 / (GRID - 1) as f64)
            .collect();
        let new_dens: Vec<f64> = if k == 0 {
            new_grid.iter().map(|s| n.pdf((s - mu) / sd) / sd).collect()
        } else {
            let h = grid[1] - grid[0];
            new_grid
                .iter()
                .map(|s| {
                    grid.iter()
                        .zip(&dens)
                        .enumerate()
                        .map(|(i, (&u, &f))| {
                            let w = if i == 0 || i == grid.len() - 1 {
                                0.5
                            } else {
                                1.0
                            };
                            w * h * f * n.pdf((s - u - mu) / sd) / sd
                        })
                        .sum()
                })
                .collect()
        };
        grid = new_grid;
        dens = new_dens;
        prev_t = tk;
    }
    crossed
}

/// An O'Brien–Fleming group-sequential design.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupSequential {
    pub looks: usize,
    pub max_blocks: usize,
    pub alpha: f64,
    /// Blocks at each look.
    pub look_blocks: Vec<usize>,
    /// |Z| boundary at each look.
    pub bounds: Vec<f64>,
}

/// What to do after a look.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    /// Not a look, or inside the boundaries: keep going.
    Continue,
    /// The boundary was crossed: stop, the effect is real. Report intervals at `confidence`.
    Reject { look: usize, confidence: f64 },
    /// Last look reached without crossing: stop and report the final interval.
    Complete { confidence: f64 },
}

impl GroupSequential {
    /// K looks (1–20) at a maximum of `max_blocks`, two-sided level `alpha`.
    pub fn new(looks: usize, max_blocks: usize, alpha: f64) -> GroupSequential {
        let k = looks.clamp(1, 20);
        let t: Vec<f64> = (1..=k).map(|i| i as f64 / k as f64).collect();
        let shape: Vec<f64> = t.iter().map(|ti| 1.0 / ti.sqrt()).collect();
        let (mut lo, mut hi) = (0.5f64, 10.0f64);
        for _ in 0..40 {
            let c = 0.5 * (lo + hi);
            let b: Vec<f64> = shape.iter().map(|s| c * s).collect();
            if crossing_probability(&t, &b) > alpha {
                lo = c;
            } else {
                hi = c;
            }
        }
        let c = hi;
        GroupSequential {
            looks: k,
            max_blocks,
            alpha,
            look_blocks: (1..=k)
                .map(|i| (max_blocks * i).div_ceil(k).max(2))
                .collect(),
            bounds: shape.iter().map(|s| c * s).collect(),
        }
    }

    /// Plan a design for detecting a relative `effect` with `power` at two-sided level `alpha`,
    /// from a pilot's SD of per-block log-ratios: the maximum is the fixed sample size times the
    /// design's inflation factor, divided by the signed-rank test's efficiency 3/π.
    pub fn plan(
        looks: usize,
        sd_log_ratio: f64,
        effect: f64,
        alpha: f64,
        power: f64,
    ) -> GroupSequential {
        let shape = GroupSequential::new(looks, 1, alpha);
        let t: Vec<f64> = (1..=shape.looks)
            .map(|i| i as f64 / shape.looks as f64)
            .collect();
        let (mut lo, mut hi) = (0.0f64, 20.0f64);
        for _ in 0..40 {
            let theta = 0.5 * (lo + hi);
            if crossing_probability_drift(&t, &shape.bounds, theta) < power {
                lo = theta;
            } else {
                hi = theta;
            }
        }
        let delta = (1.0 + effect).ln();
        let n =
            ((hi * sd_log_ratio / delta).powi(2) / (3.0 / std::f64::consts::PI)).ceil() as usize;
        GroupSequential {
            max_blocks: n.max(2),
            look_blocks: (1..=shape.looks)
                .map(|i| (n * i).div_ceil(shape.looks).max(2))
                .collect(),
            ..shape
        }
    }

    /// Decide after `blocks` blocks with per-block log-ratios `d` (only looks decide).
    pub fn look(&self, d: &[f64]) -> Decision {
        let n = d.len();
        let Some(k) = self.look_blocks.iter().position(|&b| b == n) else {
            return if n >= self.max_blocks {
                Decision::Complete {
                    confidence: crate::stats::Level::of_alpha(self.alpha).get(),
                }
            } else {
                Decision::Continue
            };
        };
        let z = crate::stats::signed_rank_z(d);
        let conf = 2.0 * Normal::standard().cdf(self.bounds[k]) - 1.0;
        if z.abs() >= self.bounds[k] {
            Decision::Reject {
                look: k + 1,
                confidence: conf,
            }
        } else if k + 1 == self.looks {
            Decision::Complete { confidence: conf }
        } else {
            Decision::Continue
        }
    }
}

/// Half-width of the normal-mixture confidence sequence for a mean after n observations with
/// scale `sigma`, tuned to be tightest near `n_opt`, at level `alpha` (valid for all n at once).
pub fn cs_radius(n: usize, sigma: f64, alpha: f64, n_opt: f64) -> f64 {
    let l = -2.0 * alpha.ln();
    let rho2 = (l + (l + 1.0).ln()) / n_opt.max(1.0);
    let nf = n as f64;
    let v = nf * rho2;
    sigma * ((2.0 * (v + 1.0) / (nf * nf * rho2)) * (((v + 1.0).sqrt()) / alpha).ln()).sqrt()
}

/// An open-ended confidence sequence for the mean per-block log-ratio: push blocks as they
/// finish and ask at any time (as often as you like) whether it excludes a value. The scale is
/// the running sample SD (Welford), inflated to its one-sided 95% upper chi-square bound so the
/// plug-in does not make early looks anti-conservative; no interval before `MIN_BLOCKS`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfidenceSequence {
    pub alpha: f64,
    pub n_opt: f64,
    n: usize,
    mean: f64,
    m2: f64,
}

impl ConfidenceSequence {
    pub const MIN_BLOCKS: usize = 20;

    pub fn new(alpha: f64, n_opt: f64) -> Self {
        ConfidenceSequence {
            alpha,
            n_opt,
            n: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The current interval for the mean, or `None` before `MIN_BLOCKS`.
    pub fn interval(&self) -> Option<(f64, f64)> {
        if self.n < Self::MIN_BLOCKS {
            return None;
        }
        use statrs::distribution::ChiSquared;
        let df = (self.n - 1) as f64;
        let var = self.m2 / df;
        let chi = ChiSquared::new(df).ok()?.inverse_cdf(0.05);
        let sigma = (var * df / chi).sqrt().max(f64::MIN_POSITIVE);
        let r = cs_radius(self.n, sigma, self.alpha, self.n_opt);
        Some((self.mean - r, self.mean + r))
    }

    pub fn excludes(&self, v: f64) -> bool {
        self.interval().is_some_and(|(lo, hi)| v < lo || v > hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_look_is_the_fixed_test() {
        let g = GroupSequential::new(1, 100, 0.05);
        assert!((g.bounds[0] - 1.959964).abs() < 1e-3, "{:?}", g.bounds);
    }

    #[test]
    fn obrien_fleming_constants_match_tables() {
        // Jennison & Turnbull Table 2.3, two-sided α = 0.05: C_B(5) = 2.040, C_B(4) = 2.024, C_B(2) = 1.977.
        for (k, want) in [(2, 1.977), (4, 2.024), (5, 2.040)] {
            let g = GroupSequential::new(k, 100, 0.05);
            let c = g.bounds[k - 1];
            assert!((c - want).abs() < 0.003, "K={k}: {c} vs {want}");
            assert!((g.bounds[0] - want * (k as f64).sqrt()).abs() < 0.01);
        }
    }

    #[test]
    fn power_of_the_fixed_design() {
        // One look: power at θ = z_{α/2} + z_β is β; 1.96 + 0.8416 → 80%.
        let p = crossing_probability_drift(&[1.0], &[1.959964], 1.959964 + 0.841621);
        assert!((p - 0.8).abs() < 0.002, "{p}");
        // O'Brien–Fleming K=5 needs only a few percent more information (inflation ≈ 1.03).
        let fixed = GroupSequential::plan(1, 1.0, 0.1, 0.05, 0.8).max_blocks as f64;
        let gs = GroupSequential::plan(5, 1.0, 0.1, 0.05, 0.8).max_blocks as f64;
        assert!((1.0..1.06).contains(&(gs / fixed)), "{}", gs / fixed);
    }

    #[test]
    fn looks_are_spaced() {
        let g = GroupSequential::new(5, 400, 0.0001);
        assert_eq!(g.look_blocks, vec![80, 160, 240, 320, 400]);
        assert!(g.bounds.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(g.look(&vec![0.0; 79]), Decision::Continue);
    }

    #[test]
    fn cs_shrinks_and_is_wider_than_fixed() {
        let r100 = cs_radius(100, 1.0, 0.05, 100.0);
        let r1000 = cs_radius(1000, 1.0, 0.05, 100.0);
        assert!(r1000 < r100);
        assert!(
            r100 > 1.96 / 10.0,
            "a confidence sequence pays for uniform validity"
        );
    }
}
