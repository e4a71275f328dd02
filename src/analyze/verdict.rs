//! Verdicts for paired contrasts: FASTER / SLOWER / EQUIVALENT / INCONCLUSIVE against a
//! smallest effect that matters δ, with Holm correction across several arms, sample-size
//! planning, and the primary (Hodges–Lehmann) and secondary (BCa mean ratio) estimates side
//! by side.

use super::stats::{Estimate, bootstrap_bca_mean, hodges_lehmann, signed_rank_p};
use statrs::distribution::{ContinuousCDF, Normal};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Faster,
    Slower,
    Equivalent,
    Inconclusive,
}

/// Which direction is good for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// One arm against the baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Contrast {
    pub blocks: usize,
    /// Percent change of the arm vs the baseline (Hodges–Lehmann on per-block log-ratios).
    pub percent: Estimate,
    /// Percent change of the mean per-block ratio, BCa bootstrap interval.
    pub mean_ratio_percent: Option<Estimate>,
    /// Signed-rank p-value, Holm-adjusted across contrasts when there are several.
    pub p_value: f64,
    pub verdict: Verdict,
    /// Whether a FASTER/SLOWER interval also clears ±δ (the effect is at least δ).
    pub clears_effect: bool,
    /// For INCONCLUSIVE: the half-width of the interval, percent — the smallest effect this
    /// experiment could have detected.
    pub min_detectable_percent: Option<f64>,
    /// For INCONCLUSIVE: roughly how many more blocks would resolve δ.
    pub more_blocks: Option<usize>,
    pub warnings: Vec<String>,
}

pub fn to_percent(e: Estimate) -> Estimate {
    e.map(|x| (x.exp() - 1.0) * 100.0)
}

/// The verdict from an interval on the log-ratio scale.
pub fn decide(lo: f64, hi: f64, effect: f64, better: Better) -> (Verdict, bool) {
    let band = (1.0 + effect).ln();
    if hi < 0.0 || lo > 0.0 {
        let lower = hi < 0.0;
        let v = if lower == (better == Better::Lower) {
            Verdict::Faster
        } else {
            Verdict::Slower
        };
        let clears = if lower { hi <= -band } else { lo >= band };
        (v, clears)
    } else if lo > -band && hi < band {
        (Verdict::Equivalent, false)
    } else {
        (Verdict::Inconclusive, false)
    }
}

/// Holm's step-down adjustment (Holm 1979): adjusted p-values, same order as the input.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Contrasts of several arms vs the baseline from per-block log-ratios `d[arm]`, at
/// `confidence` with Holm correction of the decisions and Bonferroni-level intervals.
pub fn contrasts(
    d: &[Vec<f64>],
    effect: f64,
    confidence: f64,
    better: Better,
) -> Vec<Option<Contrast>> {
    let m = d.len().max(1);
    let level = 1.0 - (1.0 - confidence) / m as f64;
    let raw: Vec<f64> = d.iter().map(|x| signed_rank_p(x)).collect();
    let adjusted = if m > 1 { holm(&raw) } else { raw };
    d.iter()
        .zip(adjusted)
        .map(|(x, p)| {
            let e = hodges_lehmann(x, level)?;
            let ratios: Vec<f64> = x.iter().map(|v| v.exp()).collect();
            let boot = bootstrap_bca_mean(&ratios, level, 2000, 0x5eed).map(|b| b.map(|r| (r - 1.0) * 100.0));
            let mut warnings = Vec::new();
            let (verdict, clears, half) = match (e.lo, e.hi) {
                (Some(lo), Some(hi)) => {
                    let (mut v, c) = decide(lo, hi, effect, better);
                    // Holm: a direction needs the adjusted p-value to agree.
                    if matches!(v, Verdict::Faster | Verdict::Slower) && p >= 1.0 - confidence {
                        v = Verdict::Inconclusive;
                    }
                    (v, c, Some((hi - lo) / 2.0))
                }
                _ => {
                    warnings.push(format!("{} blocks are too few for a {:.2}% interval", x.len(), level * 100.0));
                    (Verdict::Inconclusive, false, None)
                }
            };
            let pct = to_percent(e);
            if let (Some(b), Some(lo), Some(hi)) = (&boot, pct.lo, pct.hi)
                && let (Some(blo), Some(bhi)) = (b.lo, b.hi)
                && ((lo > 0.0 && bhi < 0.0) || (hi < 0.0 && blo > 0.0) || (lo > 0.0) != (blo > 0.0) || (hi < 0.0) != (bhi < 0.0))
            {
                warnings.push(format!(
                    "the median-based estimate ({:+.2}% [{:+.2}, {:+.2}]) and the mean ratio ({:+.2}% [{:+.2}, {:+.2}]) disagree: the distribution is skewed or has outliers; trust the median-based verdict, and look at the histogram",
                    pct.point, lo, hi, b.point, blo, bhi
                ));
            }
            let band = (1.0 + effect).ln();
            let (mde, more) = match (verdict, half) {
                (Verdict::Inconclusive, Some(h)) => {
                    let need = (x.len() as f64 * (h / band).powi(2)).ceil() as usize;
                    (Some(((h).exp() - 1.0) * 100.0), Some(need.saturating_sub(x.len()).max(1)))
                }
                _ => (None, None),
            };
            Some(Contrast {
                blocks: x.len(),
                percent: pct,
                mean_ratio_percent: boot,
                p_value: p,
                verdict,
                clears_effect: clears,
                min_detectable_percent: mde,
                more_blocks: more,
                warnings,
            })
        })
        .collect()
}

/// Blocks needed to detect a relative effect `effect` with a two-sided test at `confidence`
/// and `power`, given the SD of per-block log-ratios from a pilot. Normal theory, divided by
/// the signed-rank test's asymptotic relative efficiency 3/π (Lehmann 1975) because the
/// verdict uses it.
pub fn blocks_needed(sd_log_ratio: f64, effect: f64, confidence: f64, power: f64) -> usize {
    let n = Normal::standard();
    let z = n.inverse_cdf(1.0 - (1.0 - confidence) / 2.0) + n.inverse_cdf(power);
    let delta = (1.0 + effect).ln();
    ((z * sd_log_ratio / delta).powi(2) / (3.0 / std::f64::consts::PI))
        .ceil()
        .max(2.0) as usize
}

/// Runs a fixed-size *unpaired* two-sample design needs for the same question (both arms):
/// 2 · 2 (z σ / δ)² with σ the per-run SD of log values.
pub fn unpaired_runs_needed(sd_log: f64, effect: f64, confidence: f64, power: f64) -> usize {
    let n = Normal::standard();
    let z = n.inverse_cdf(1.0 - (1.0 - confidence) / 2.0) + n.inverse_cdf(power);
    let delta = (1.0 + effect).ln();
    (2.0 * 2.0 * (z * sd_log / delta).powi(2)).ceil() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_regions() {
        let d = 0.01;
        assert_eq!(
            decide(-0.05, -0.02, d, Better::Lower),
            (Verdict::Faster, true)
        );
        assert_eq!(
            decide(-0.05, -0.002, d, Better::Lower),
            (Verdict::Faster, false)
        );
        assert_eq!(decide(0.002, 0.05, d, Better::Lower).0, Verdict::Slower);
        assert_eq!(decide(0.002, 0.05, d, Better::Higher).0, Verdict::Faster);
        assert_eq!(
            decide(-0.005, 0.005, d, Better::Lower).0,
            Verdict::Equivalent
        );
        assert_eq!(
            decide(-0.05, 0.05, d, Better::Lower).0,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn holm_known_values() {
        // Holm (1979) style example: p = (0.01, 0.04, 0.03) → (0.03, 0.06, 0.06).
        let a = holm(&[0.01, 0.04, 0.03]);
        assert!(
            (a[0] - 0.03).abs() < 1e-12
                && (a[1] - 0.06).abs() < 1e-12
                && (a[2] - 0.06).abs() < 1e-12,
            "{a:?}"
        );
    }

    #[test]
    fn planning_matches_the_published_numbers() {
        // BACKGROUND.md: a 1.1% effect, 10% CV, within-block correlation 0.9, 99.99% confidence,
        // 80% power: about 7,412 runs unpaired; the paired design needs about ten times fewer.
        let unpaired = unpaired_runs_needed(0.1, 0.011, 0.9999, 0.8);
        assert!((7_300..7_500).contains(&unpaired), "{unpaired}");
        let sd_d = (2.0f64 * (1.0 - 0.9)).sqrt() * 0.1;
        let paired_runs = 2 * blocks_needed(sd_d, 0.011, 0.9999, 0.8);
        assert!((700..850).contains(&paired_runs), "{paired_runs}");
    }

    #[test]
    fn contrasts_with_holm_and_warnings() {
        let mut r = crate::workload::kernels::XorShift::new(3);
        let mut noise = || ((r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01;
        let faster: Vec<f64> = (0..40).map(|_| -0.05 + noise()).collect();
        let same: Vec<f64> = (0..40).map(|_| noise()).collect();
        let c = contrasts(&[faster, same], 0.01, 0.99, Better::Lower);
        let (a, b) = (c[0].as_ref().unwrap(), c[1].as_ref().unwrap());
        assert_eq!(a.verdict, Verdict::Faster);
        assert!(a.clears_effect && a.percent.point < -4.0);
        assert_eq!(b.verdict, Verdict::Equivalent);
        let few = contrasts(&[vec![0.1, 0.2, 0.3]], 0.01, 0.99, Better::Lower);
        let f = few[0].as_ref().unwrap();
        assert_eq!(f.verdict, Verdict::Inconclusive);
        assert!(f.warnings[0].contains("too few"));
    }
}
