//! Robust summaries and paired effect estimates, as small pure functions.
//!
//! Methods: Hodges–Lehmann one-sample estimator (median of Walsh averages) with the
//! distribution-free Wilcoxon signed-rank confidence interval (Hollander, Wolfe & Chicken,
//! *Nonparametric Statistical Methods*, 3rd ed., §3.2–3.3); exact null distribution of the
//! signed-rank statistic for n ≤ 60, normal approximation above. Walsh-average order
//! statistics are found by bisection on a linear-time pair count, so 10,000 blocks stay fast.
//! Invariants: inputs are finite (NaN is rejected), and functions state their minimum n.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Descriptive statistics of one sample.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1); 0 for n = 1.
    pub sd: f64,
    /// Median absolute deviation, unscaled.
    pub mad: f64,
    pub p5: f64,
    pub p95: f64,
    pub p99: f64,
    pub skewness: f64,
    /// Values with robust z = |x − median| / (1.4826 · MAD) above 5: kept, counted.
    pub outliers: usize,
}

/// Quantile by linear interpolation between order statistics (Hyndman & Fan type 7). `sorted` non-empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

pub fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Summarise a non-empty sample of finite values; `None` when empty or any value is NaN/infinite.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let s = sorted(xs);
    let n = s.len();
    let mean = mean(&s);
    let median = quantile_sorted(&s, 0.5);
    let var = if n > 1 {
        s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let sd = var.sqrt();
    let mad = quantile_sorted(
        &sorted(&s.iter().map(|x| (x - median).abs()).collect::<Vec<_>>()),
        0.5,
    );
    let m3 = s.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n as f64;
    let m2 = s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    let skewness = if m2 > 0.0 { m3 / m2.powf(1.5) } else { 0.0 };
    let scale = 1.4826 * mad;
    let outliers = if scale > 0.0 {
        s.iter()
            .filter(|x| ((*x - median) / scale).abs() > 5.0)
            .count()
    } else {
        0
    };
    Some(Summary {
        n,
        mean,
        median,
        min: s[0],
        max: s[n - 1],
        sd,
        mad,
        p5: quantile_sorted(&s, 0.05),
        p95: quantile_sorted(&s, 0.95),
        p99: quantile_sorted(&s, 0.99),
        skewness,
        outliers,
    })
}

/// Half-width of the Student-t interval for a mean (n ≥ 2), at two-sided `confidence`.
pub fn t_half_width(sd: f64, n: usize, confidence: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    Some(t.inverse_cdf(0.5 + confidence / 2.0) * sd / (n as f64).sqrt())
}

/// Number of Walsh averages (x_i + x_j)/2, i ≤ j, that are ≤ t. `s` sorted ascending.
fn walsh_count_le(s: &[f64], t: f64) -> u64 {
    let n = s.len();
    let mut count = 0u64;
    let mut j = n; // exclusive bound: s[i] + s[k] <= 2t for all k < j
    for i in 0..n {
        while j > 0 && s[i] + s[j - 1] > 2.0 * t {
            j -= 1;
        }
        if j <= i {
            break;
        }
        count += (j - i) as u64;
    }
    count
}

/// The k-th smallest Walsh average (1-based), k in 1..=n(n+1)/2. `s` sorted ascending, non-empty.
pub fn walsh_order_stat(s: &[f64], k: u64) -> f64 {
    let (mut lo, mut hi) = (s[0], s[s.len() - 1]);
    if walsh_count_le(s, lo) >= k {
        return lo;
    }
    // Invariant: count(lo) < k <= count(hi).
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if walsh_count_le(s, mid) >= k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Exact lower-tail probabilities P(W+ ≤ w) of the signed-rank statistic under H0, for n ≤ 60.
fn signed_rank_cdf_exact(n: usize) -> Vec<f64> {
    let m = n * (n + 1) / 2;
    // Probability mass, built one rank at a time (each rank in or out with probability 1/2).
    let mut p = vec![0.0f64; m + 1];
    p[0] = 1.0;
    let mut top = 0;
    for r in 1..=n {
        top += r;
        for w in (r..=top).rev() {
            p[w] = 0.5 * (p[w] + p[w - r]);
        }
        for w in (0..r.min(top + 1)).rev() {
            p[w] *= 0.5;
        }
    }
    let mut acc = 0.0;
    p.iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect()
}

/// The largest k such that P(W+ ≤ k − 1) ≤ α/2, and the achieved two-sided confidence.
/// k = 0 means no interval at this confidence is possible with n pairs.
pub fn signed_rank_critical(n: usize, confidence: f64) -> (u64, f64) {
    let alpha = 1.0 - confidence;
    if n == 0 {
        return (0, 0.0);
    }
    if n <= 60 {
        let cdf = signed_rank_cdf_exact(n);
        let mut k = 0usize;
        while k < cdf.len() && cdf[k] <= alpha / 2.0 {
            k += 1;
        }
        let achieved = if k == 0 { 0.0 } else { 1.0 - 2.0 * cdf[k - 1] };
        (k as u64, achieved)
    } else {
        let nf = n as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
        let k = (mean - z * sd - 0.5).floor().max(0.0) as u64 + 1;
        (k, confidence)
    }
}

/// A point estimate with a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    pub point: f64,
    /// `None` bounds: too few observations for an interval at this confidence.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The confidence actually achieved (exact distributions are discrete).
    pub confidence: f64,
}

impl Estimate {
    pub fn excludes(&self, v: f64) -> bool {
        matches!((self.lo, self.hi), (Some(lo), Some(hi)) if v < lo || v > hi)
    }
    pub fn map(self, f: impl Fn(f64) -> f64) -> Estimate {
        Estimate {
            point: f(self.point),
            lo: self.lo.map(&f),
            hi: self.hi.map(&f),
            confidence: self.confidence,
        }
    }
}

/// Hodges–Lehmann estimate of the centre of `d` (e.g. per-block log-ratios) with the
/// signed-rank interval at `confidence`. `None` for empty input or non-finite values.
pub fn hodges_lehmann(d: &[f64], confidence: f64) -> Option<Estimate> {
    if d.is_empty() || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let s = sorted(d);
    let n = s.len();
    let m = (n * (n + 1) / 2) as u64;
    let point = if m % 2 == 1 {
        walsh_order_stat(&s, m.div_ceil(2))
    } else {
        0.5 * (walsh_order_stat(&s, m / 2) + walsh_order_stat(&s, m / 2 + 1))
    };
    let (k, achieved) = signed_rank_critical(n, confidence);
    let (lo, hi) = if k == 0 || k > m / 2 + 1 {
        (None, None)
    } else {
        (
            Some(walsh_order_stat(&s, k)),
            Some(walsh_order_stat(&s, m + 1 - k)),
        )
    };
    Some(Estimate {
        point,
        lo,
        hi,
        confidence: if lo.is_some() { achieved } else { confidence },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force: every Walsh average, sorted.
    fn walsh_all(d: &[f64]) -> Vec<f64> {
        let mut w = Vec::new();
        for i in 0..d.len() {
            for j in i..d.len() {
                w.push((d[i] + d[j]) / 2.0);
            }
        }
        sorted(&w)
    }

    /// Brute force: P(W+ ≤ w) by enumerating all 2^n sign assignments.
    fn cdf_enumerated(n: usize, w: usize) -> f64 {
        let mut hits = 0u64;
        for mask in 0u64..(1 << n) {
            let s: usize = (0..n).filter(|r| mask >> r & 1 == 1).map(|r| r + 1).sum();
            if s <= w {
                hits += 1;
            }
        }
        hits as f64 / (1u64 << n) as f64
    }

    #[test]
    fn exact_distribution_matches_enumeration() {
        for n in [1, 5, 10, 14] {
            let cdf = signed_rank_cdf_exact(n);
            for (w, c) in cdf.iter().enumerate() {
                assert!((c - cdf_enumerated(n, w)).abs() < 1e-12, "n={n} w={w}");
            }
        }
    }

    #[test]
    fn critical_values_match_published_tables() {
        // Two-sided α = 0.05 lower critical values of W (reject if W ≤ c), e.g. Hollander,
        // Wolfe & Chicken Table A.4: n=6 → 0, n=10 → 8, n=20 → 52. Our k is c + 1.
        assert_eq!(signed_rank_critical(6, 0.95).0, 1);
        assert_eq!(signed_rank_critical(10, 0.95).0, 9);
        assert_eq!(signed_rank_critical(20, 0.95).0, 53);
        // Five pairs cannot give a 95% two-sided interval (min tail 1/32 > 0.025).
        assert_eq!(signed_rank_critical(5, 0.95).0, 0);
        // Eleven pairs are the fewest for 99.9% (2/2^11 < 0.001).
        assert_eq!(signed_rank_critical(10, 0.999).0, 0);
        assert_eq!(signed_rank_critical(11, 0.999).0, 1);
    }

    #[test]
    fn normal_approximation_is_close_to_exact_at_the_switch() {
        // At n = 60 the normal approximation is slightly conservative (the exact null
        // distribution has lighter tails) and within 4 of the exact critical value (of 1830).
        let exact = signed_rank_critical(60, 0.99).0 as i64;
        let nf = 60.0f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let approx = (mean - 2.5758293 * sd - 0.5).floor() as i64 + 1;
        assert!(
            approx <= exact && exact - approx <= 4,
            "{exact} vs {approx}"
        );
    }

    #[test]
    fn hl_matches_brute_force() {
        let d = [
            1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30, -0.2, 0.9, 2.2,
        ];
        let w = walsh_all(&d);
        let e = hodges_lehmann(&d, 0.95).unwrap();
        let m = w.len();
        let med = if m % 2 == 1 {
            w[m / 2]
        } else {
            (w[m / 2 - 1] + w[m / 2]) / 2.0
        };
        assert!((e.point - med).abs() < 1e-12);
        let (k, _) = signed_rank_critical(d.len(), 0.95);
        assert!((e.lo.unwrap() - w[k as usize - 1]).abs() < 1e-12);
        assert!((e.hi.unwrap() - w[m - k as usize]).abs() < 1e-12);
        assert!(e.confidence >= 0.95);
    }

    #[test]
    fn summary_known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 22.0);
        assert_eq!(s.mad, 1.0);
        assert_eq!(s.outliers, 1); // 100 is (97 / 1.4826) ≈ 65 robust-z away
        assert!(s.skewness > 1.0);
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn t_interval_known_value() {
        // t(0.975, 9) = 2.262157; sd 1, n 10 → 0.7153
        let h = t_half_width(1.0, 10, 0.95).unwrap();
        assert!((h - 2.262157 / 10f64.sqrt()).abs() < 1e-5, "{h}");
    }

    proptest! {
        #[test]
        fn walsh_order_stats_match_brute_force(d in prop::collection::vec(-1e3f64..1e3, 1..40), kf in 0.0f64..1.0) {
            let s = sorted(&d);
            let w = walsh_all(&d);
            let k = 1 + ((w.len() - 1) as f64 * kf) as usize;
            prop_assert!((walsh_order_stat(&s, k as u64) - w[k - 1]).abs() < 1e-9);
        }

        #[test]
        fn interval_contains_point(d in prop::collection::vec(-1.0f64..1.0, 12..60)) {
            let e = hodges_lehmann(&d, 0.99).unwrap();
            prop_assert!(e.lo.unwrap() <= e.point && e.point <= e.hi.unwrap());
        }
    }
}
