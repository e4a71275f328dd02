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
    /// SD / (1.4826 · MAD): near 1 for normal data, large with heavy tails or outliers.
    pub sd_mad_ratio: Option<f64>,
    /// 95% distribution-free intervals for p5, p95 and p99 (`None` when n is too small).
    pub p5_interval: Option<(f64, f64)>,
    pub p95_interval: Option<(f64, f64)>,
    pub p99_interval: Option<(f64, f64)>,
    pub histogram: Option<Histogram>,
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

/// The fewest pairs for which a signed-rank interval at `confidence` exists at all (with fewer,
/// even the most extreme ranks are not rare enough).
pub fn min_pairs_for_interval(confidence: f64) -> usize {
    (1..=200)
        .find(|n| signed_rank_critical(*n, confidence).0 >= 1)
        .unwrap_or(200)
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
    let tail = (1.0 - confidence) / 2.0;
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

/// Histogram with Freedman–Diaconis bin width (at least 1, at most `max_bins` bins).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    pub start: f64,
    pub width: f64,
    pub counts: Vec<u64>,
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

/// The standardized Wilcoxon signed-rank statistic of `d` against 0 (average ranks for ties,
/// zeros dropped, tie-corrected variance). Asymptotically N(0, 1) under a symmetric null.
pub fn signed_rank_z(d: &[f64]) -> f64 {
    let mut a: Vec<(f64, bool)> = d
        .iter()
        .filter(|x| **x != 0.0 && x.is_finite())
        .map(|x| (x.abs(), *x > 0.0))
        .collect();
    let n = a.len();
    if n == 0 {
        return 0.0;
    }
    a.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut w, mut tie_adj, mut i) = (0.0, 0.0, 0);
    while i < n {
        let mut j = i;
        while j + 1 < n && a[j + 1].0 == a[i].0 {
            j += 1;
        }
        let rank = (i + j + 2) as f64 / 2.0;
        let t = (j - i + 1) as f64;
        tie_adj += t * t * t - t;
        w += a[i..=j].iter().filter(|x| x.1).count() as f64 * rank;
        i = j + 1;
    }
    let nf = n as f64;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_adj / 48.0;
    if var <= 0.0 {
        0.0
    } else {
        (w - nf * (nf + 1.0) / 4.0) / var.sqrt()
    }
}

/// Two-sided p-value of the signed-rank test of `d` against 0: exact for n ≤ 60 without ties
/// or zeros, the normal approximation otherwise.
pub fn signed_rank_p(d: &[f64]) -> f64 {
    let nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let n = nz.len();
    if n == 0 {
        return 1.0;
    }
    let mut abs: Vec<f64> = nz.iter().map(|x| x.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let ties = abs.windows(2).any(|w| w[0] == w[1]);
    if n <= 60 && !ties {
        let cdf = signed_rank_cdf_exact(n);
        let w: usize = nz
            .iter()
            .map(|x| abs.partition_point(|a| *a < x.abs()) + 1)
            .zip(nz.iter())
            .filter(|(_, x)| **x > 0.0)
            .map(|(r, _)| r)
            .sum();
        let lower = cdf[w];
        let upper = if w == 0 { 1.0 } else { 1.0 - cdf[w - 1] };
        return (2.0 * lower.min(upper)).min(1.0);
    }
    let z = signed_rank_z(d);
    2.0 * (1.0 - Normal::standard().cdf(z.abs()))
}

/// The mean of `x` with a BCa bootstrap interval (Efron 1987; DiCiccio & Efron 1996):
/// `resamples` resamples from a fixed seed, jackknife acceleration. n ≥ 3.
pub fn bootstrap_bca_mean(
    x: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Estimate> {
    let n = x.len();
    if n < 3 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let theta = mean(x);
    let mut rng = crate::rng::XorShift::new(seed);
    let mut boot: Vec<f64> = (0..resamples.max(100))
        .map(|_| (0..n).map(|_| x[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    boot.sort_by(f64::total_cmp);
    let std_normal = Normal::standard();
    let below = boot.iter().filter(|b| **b < theta).count() as f64 / boot.len() as f64;
    let z0 =
        std_normal.inverse_cdf(below.clamp(0.5 / boot.len() as f64, 1.0 - 0.5 / boot.len() as f64));
    let total: f64 = x.iter().sum();
    let jack: Vec<f64> = x.iter().map(|v| (total - v) / (n - 1) as f64).collect();
    let jm = mean(&jack);
    let num: f64 = jack.iter().map(|j| (jm - j).powi(3)).sum();
    let den: f64 = jack.iter().map(|j| (jm - j).powi(2)).sum::<f64>().powf(1.5);
    let a = if den > 0.0 { num / (6.0 * den) } else { 0.0 };
    let adj = |alpha: f64| {
        let z = std_normal.inverse_cdf(alpha);
        std_normal.cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    };
    let tail = (1.0 - confidence) / 2.0;
    Some(Estimate {
        point: theta,
        lo: Some(quantile_sorted(&boot, adj(tail))),
        hi: Some(quantile_sorted(&boot, adj(1.0 - tail))),
        confidence,
    })
}

/// Number of differences x_i − y_j ≤ t, for sorted `x` and `y`.
fn diff_count_le(x: &[f64], y: &[f64], t: f64) -> u64 {
    // For each x_i, count y_j ≥ x_i − t; as x_i grows the threshold grows.
    let mut j = 0usize;
    let mut c = 0u64;
    for xi in x {
        while j < y.len() && y[j] < xi - t {
            j += 1;
        }
        c += (y.len() - j) as u64;
    }
    c
}

/// Number of differences x_i − y_j < t, for sorted `x` and `y`.
fn diff_count_lt(x: &[f64], y: &[f64], t: f64) -> u64 {
    let mut j = 0usize;
    let mut c = 0u64;
    for xi in x {
        while j < y.len() && y[j] <= xi - t {
            j += 1;
        }
        c += (y.len() - j) as u64;
    }
    c
}

fn diff_order_stat(x: &[f64], y: &[f64], k: u64) -> f64 {
    let (mut lo, mut hi) = (x[0] - y[y.len() - 1], x[x.len() - 1] - y[0]);
    if diff_count_le(x, y, lo) >= k {
        return lo;
    }
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if diff_count_le(x, y, mid) >= k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Unpaired comparison: Hodges–Lehmann shift x − y with the Mann–Whitney interval and the
/// two-sided p-value (normal approximation with continuity correction; exact-enough for the
/// sample sizes hugelab compares). Both samples need at least 2 values.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Shift {
    pub estimate: Estimate,
    pub p_value: f64,
}

pub fn mann_whitney_shift(x: &[f64], y: &[f64], confidence: f64) -> Option<Shift> {
    if x.len() < 2 || y.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let (xs, ys) = (sorted(x), sorted(y));
    let (m, n) = (xs.len() as f64, ys.len() as f64);
    let mn = (xs.len() * ys.len()) as u64;
    let point = if mn % 2 == 1 {
        diff_order_stat(&xs, &ys, mn.div_ceil(2))
    } else {
        0.5 * (diff_order_stat(&xs, &ys, mn / 2) + diff_order_stat(&xs, &ys, mn / 2 + 1))
    };
    let sd = (m * n * (m + n + 1.0) / 12.0).sqrt();
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    let k = ((m * n / 2.0 - z * sd - 0.5).floor().max(0.0) as u64) + 1;
    let (lo, hi) = if k <= mn / 2 {
        (
            Some(diff_order_stat(&xs, &ys, k)),
            Some(diff_order_stat(&xs, &ys, mn + 1 - k)),
        )
    } else {
        (None, None)
    };
    // U = #(x_i > y_j) + ½ #(ties)
    let le = diff_count_le(&xs, &ys, 0.0) as f64;
    let ties = le - diff_count_lt(&xs, &ys, 0.0) as f64;
    let u = mn as f64 - le + ties / 2.0;
    let zu = ((u - m * n / 2.0).abs() - 0.5).max(0.0) / sd;
    Some(Shift {
        estimate: Estimate {
            point,
            lo,
            hi,
            confidence,
        },
        p_value: (2.0 * (1.0 - Normal::standard().cdf(zu))).min(1.0),
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

    #[test]
    fn fewest_pairs_for_an_interval() {
        // 2·2^−n ≤ α: 6 pairs at 95% (2/64 = 0.031), 8 at 99% (2/256), 9 at 99.5% (2/512).
        assert_eq!(min_pairs_for_interval(0.95), 6);
        assert_eq!(min_pairs_for_interval(0.99), 8);
        assert_eq!(min_pairs_for_interval(0.995), 9);
        assert_eq!(signed_rank_critical(5, 0.95).0, 0);
    }

    #[test]
    fn signed_rank_p_known_values() {
        // All 10 positive: exact two-sided p = 2 / 2^10.
        let d: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((signed_rank_p(&d) - 2.0 / 1024.0).abs() < 1e-12);
        // Symmetric around 0: p = 1.
        let s = [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0];
        assert!((signed_rank_p(&s) - 1.0).abs() < 1e-12);
        assert!(signed_rank_z(&d) > 2.8);
    }

    #[test]
    fn bca_brackets_the_mean() {
        let mut r = crate::rng::XorShift::new(9);
        let x: Vec<f64> = (0..200)
            .map(|_| ((r.next_u64() >> 11) as f64 / (1u64 << 53) as f64).powi(3))
            .collect();
        let e = bootstrap_bca_mean(&x, 0.95, 2000, 1).unwrap();
        assert!(e.lo.unwrap() < e.point && e.point < e.hi.unwrap());
        // Right-skewed data: BCa shifts the interval right of the symmetric one.
        assert!(e.hi.unwrap() - e.point > e.point - e.lo.unwrap());
    }

    #[test]
    fn mann_whitney_shift_matches_brute_force() {
        let x = [1.1, 2.3, 3.0, 4.8, 5.2, 6.9, 7.4];
        let y = [0.2, 0.9, 1.5, 2.8, 3.3];
        let mut diffs: Vec<f64> = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| a - b))
            .collect();
        diffs.sort_by(f64::total_cmp);
        let s = mann_whitney_shift(&x, &y, 0.9).unwrap();
        let med = diffs[17]; // 35 differences: the 18th is the median
        assert!((s.estimate.point - med).abs() < 1e-9);
        assert!(
            s.estimate.lo.unwrap() <= s.estimate.point
                && s.estimate.point <= s.estimate.hi.unwrap()
        );
        let same = mann_whitney_shift(&x, &x, 0.9).unwrap();
        assert!(same.p_value > 0.9 && same.estimate.point.abs() < 1e-9);
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
