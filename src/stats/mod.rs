//! The statistics kernel, below every stage: it imports nothing but the utilities (`rng`), and
//! every stage may use it. Robust summaries and effect estimates, as small pure functions; one
//! method per file:
//!
//! * this module — descriptive statistics ([`Summary`]: quantiles with distribution-free
//!   intervals, robust spread, outliers), the Student-t half-width, histograms, and
//!   [`Estimate`], the point-with-interval every method returns;
//! * [`signed_rank`] — Hodges–Lehmann with the Wilcoxon signed-rank interval for paired blocks,
//!   the signed-rank test (exact for n ≤ 60);
//! * [`bootstrap`] — the BCa bootstrap interval of a mean;
//! * [`mann_whitney`] — the Hodges–Lehmann shift with the Mann–Whitney interval for two
//!   independent samples;
//! * [`welch`] — the difference of two samples' means, Welch's t (few units, e.g. hosts).
//!
//! Invariants: inputs are finite (NaN is rejected), and functions state their minimum n.

pub mod bootstrap;
pub mod level;
pub mod mann_whitney;
pub mod signed_rank;
pub mod welch;

pub use bootstrap::bootstrap_bca_mean;
pub use level::Level;
pub use mann_whitney::{Shift, mann_whitney_shift};
pub use signed_rank::{
    hodges_lehmann, min_pairs_for_interval, signed_rank_critical, signed_rank_p, signed_rank_z,
    walsh_order_stat,
};
pub use welch::{Welch, welch};

mod types;
use statrs::distribution::{ContinuousCDF, StudentsT};
pub use types::{Estimate, Histogram, Summary};

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

/// The mean of some values, `None` without any.
pub fn mean_of(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The sample variance (n − 1); 0 for fewer than two values. The one place it is written.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// The sample standard deviation (n − 1); 0 for fewer than two values.
pub fn sd(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
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
    let sd = sd(&s);
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
        sd_mad_ratio: (scale > 0.0).then(|| sd / scale),
        p5_interval: quantile_interval(&s, 0.05, 0.95),
        p95_interval: quantile_interval(&s, 0.95, 0.95),
        p99_interval: quantile_interval(&s, 0.99, 0.95),
        histogram: histogram(&s, 30),
    })
}

/// Half-width of the Student-t interval for a mean (n ≥ 2), at two-sided `confidence`.
pub fn t_half_width(sd: f64, n: usize, confidence: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    Some(t.inverse_cdf(Level(confidence).upper()) * sd / (n as f64).sqrt())
}

/// Distribution-free interval for the q-quantile from order statistics: ranks (1-based) l and u
/// with P(X_(l) ≤ ξ_q ≤ X_(u)) ≥ confidence, from the Binomial(n, q) distribution.
/// `None` when n is too small for that confidence.
pub fn quantile_interval(sorted: &[f64], q: f64, confidence: f64) -> Option<(f64, f64)> {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let b = Binomial::new(q.clamp(0.0, 1.0), n as u64).ok()?;
    let tail = Level(confidence).tail();
    // l: largest rank with P(B ≤ l − 1) ≤ tail; u: smallest rank with P(B ≥ u) ≤ tail.
    let mut l = 0usize;
    while l < n && b.cdf(l as u64) <= tail {
        l += 1;
    }
    let mut u = n;
    while u > 0 && 1.0 - b.cdf((u - 1) as u64) <= tail {
        u -= 1;
    }
    let u = u + 1;
    (l >= 1 && u <= n && l <= u).then(|| (sorted[l - 1], sorted[u - 1]))
}

pub fn histogram(xs: &[f64], max_bins: usize) -> Option<Histogram> {
    let s = sorted(xs);
    if s.is_empty() || s.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let (lo, hi) = (s[0], s[s.len() - 1]);
    let iqr = quantile_sorted(&s, 0.75) - quantile_sorted(&s, 0.25);
    let fd = 2.0 * iqr / (s.len() as f64).cbrt();
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let bins = if fd > 0.0 {
        ((span / fd).ceil() as usize).clamp(1, max_bins.max(1))
    } else {
        1
    };
    let width = span / bins as f64;
    let mut counts = vec![0u64; bins];
    for x in &s {
        let i = (((x - lo) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    Some(Histogram {
        start: lo,
        width,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 22.0);
        assert_eq!(s.mad, 1.0);
        assert_eq!(s.outliers, 1); // 100 is (97 / 1.4826) ≈ 65 robust-z away
        assert!(s.skewness > 1.0);
        assert!(
            s.sd_mad_ratio.unwrap() > 10.0,
            "one outlier inflates SD, not MAD"
        );
        assert!(s.p99_interval.is_none(), "5 values cannot bound p99");
        assert_eq!(s.histogram.as_ref().unwrap().counts.iter().sum::<u64>(), 5);
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn t_interval_known_value() {
        // t(0.975, 9) = 2.262157; sd 1, n 10 → 0.7153
        let h = t_half_width(1.0, 10, 0.95).unwrap();
        assert!((h - 2.262157 / 10f64.sqrt()).abs() < 1e-5, "{h}");
    }

    #[test]
    fn quantile_interval_brackets_the_quantile() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        let (lo, hi) = quantile_interval(&x, 0.5, 0.95).unwrap();
        // Binomial(100, 0.5): the 95% order-statistic interval for the median is X(40)..X(61).
        assert_eq!((lo, hi), (40.0, 61.0));
        assert!(
            quantile_interval(&x[..5], 0.99, 0.95).is_none(),
            "p99 needs more than 5 values"
        );
    }

    #[test]
    fn histogram_counts_everything() {
        let x: Vec<f64> = (0..1000).map(|i| (i % 37) as f64).collect();
        let h = histogram(&x, 50).unwrap();
        assert_eq!(h.counts.iter().sum::<u64>(), 1000);
        assert!(h.counts.len() > 1);
    }
}
