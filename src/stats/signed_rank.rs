//! Hodges–Lehmann one-sample estimator (median of Walsh averages) with the distribution-free
//! Wilcoxon signed-rank confidence interval (Hollander, Wolfe & Chicken, *Nonparametric
//! Statistical Methods*, 3rd ed., §3.2–3.3); exact null distribution of the signed-rank
//! statistic for n ≤ 60, normal approximation above. Walsh-average order statistics are found
//! by bisection on a linear-time pair count, so 10,000 blocks stay fast.

use super::{Estimate, sorted};
use statrs::distribution::{ContinuousCDF, Normal};

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
/// Bisection on the value narrows (lo, hi] until it holds few averages, which are then listed and
/// the one wanted picked: the same double the bisection would converge to (half the
/// floating-point sum s_i + s_j), in a handful of O(n) counts instead of one per bit.
pub fn walsh_order_stat(s: &[f64], k: u64) -> f64 {
    let (mut lo, mut hi) = (s[0], s[s.len() - 1]);
    let mut below = walsh_count_le(s, lo);
    if below >= k {
        return lo;
    }
    // Invariant: count(lo) = below < k <= above = count(hi).
    let mut above = (s.len() * (s.len() + 1) / 2) as u64;
    let few = 8 * s.len() as u64 + 64;
    for _ in 0..200 {
        if above - below <= few {
            return walsh_pick(s, (lo, hi), k - below);
        }
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        let c = walsh_count_le(s, mid);
        if c >= k {
            (hi, above) = (mid, c);
        } else {
            (lo, below) = (mid, c);
        }
    }
    hi
}

/// The `r`-th smallest (1-based) of the Walsh averages in (lo, hi]. `s` sorted ascending; a sum
/// s_i + s_j grows with j, so each i's sums in range are one run of j.
fn walsh_pick(s: &[f64], (lo, hi): (f64, f64), r: u64) -> f64 {
    let mut sums = Vec::new();
    for (i, x) in s.iter().enumerate() {
        let rest = &s[i..];
        let from = rest.partition_point(|y| x + y <= 2.0 * lo);
        let to = rest.partition_point(|y| x + y <= 2.0 * hi);
        sums.extend(rest[from..to].iter().map(|y| x + y));
    }
    let (_, v, _) = sums.select_nth_unstable_by(r as usize - 1, f64::total_cmp);
    *v / 2.0
}

/// Exact lower-tail probabilities P(W+ ≤ w) of the signed-rank statistic under H0, for n ≤ 60,
/// built once for every n (the distribution for n is the one for n − 1 with rank n added).
fn signed_rank_cdf_exact(n: usize) -> &'static [f64] {
    static CDFS: std::sync::OnceLock<Vec<Vec<f64>>> = std::sync::OnceLock::new();
    let cdfs = CDFS.get_or_init(|| {
        let mut cdfs = vec![vec![1.0]];
        // Probability mass, built one rank at a time (each rank in or out with probability 1/2).
        let mut p = vec![0.0f64; EXACT_MAX * (EXACT_MAX + 1) / 2 + 1];
        p[0] = 1.0;
        let mut top = 0;
        for r in 1..=EXACT_MAX {
            top += r;
            for w in (r..=top).rev() {
                p[w] = 0.5 * (p[w] + p[w - r]);
            }
            for w in (0..r.min(top + 1)).rev() {
                p[w] *= 0.5;
            }
            let mut acc = 0.0;
            cdfs.push(
                p[..=top]
                    .iter()
                    .map(|x| {
                        acc += x;
                        acc
                    })
                    .collect(),
            );
        }
        cdfs
    });
    &cdfs[n]
}

/// The most pairs whose signed-rank distribution is computed exactly.
const EXACT_MAX: usize = 60;

/// The largest k such that P(W+ ≤ k − 1) ≤ α/2, and the achieved two-sided confidence.
/// k = 0 means no interval at this confidence is possible with n pairs.
pub fn signed_rank_critical(n: usize, confidence: f64) -> (u64, f64) {
    let level = crate::stats::Level(confidence);
    if n == 0 {
        return (0, 0.0);
    }
    if n <= EXACT_MAX {
        let cdf = signed_rank_cdf_exact(n);
        let mut k = 0usize;
        while k < cdf.len() && cdf[k] <= level.tail() {
            k += 1;
        }
        let achieved = if k == 0 {
            0.0
        } else {
            level_of_tails(cdf[k - 1])
        };
        (k as u64, achieved)
    } else {
        let nf = n as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let z = Normal::standard().inverse_cdf(level.upper());
        let k = (mean - z * sd - 0.5).floor().max(0.0) as u64 + 1;
        (k, confidence)
    }
}

/// The two-sided level whose tails each hold `tail`.
fn level_of_tails(tail: f64) -> f64 {
    crate::stats::Level::of_alpha(2.0 * tail).get()
}

/// The fewest pairs for which a signed-rank interval at `confidence` exists at all (with fewer,
/// even the most extreme ranks are not rare enough).
pub fn min_pairs_for_interval(confidence: f64) -> usize {
    (1..=200)
        .find(|n| signed_rank_critical(*n, confidence).0 >= 1)
        .unwrap_or(200)
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
    if n <= EXACT_MAX && !ties {
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

    proptest! {
        #[test]
        fn walsh_order_stats_match_brute_force(d in prop::collection::vec(-1e3f64..1e3, 1..120), kf in 0.0f64..1.0) {
            // Exactly the brute force's double, whether the averages were listed at once or
            // the bisection narrowed them first (past 16 values).
            let s = sorted(&d);
            let w = walsh_all(&d);
            let k = 1 + ((w.len() - 1) as f64 * kf) as usize;
            prop_assert_eq!(walsh_order_stat(&s, k as u64), w[k - 1]);
        }

        #[test]
        fn walsh_order_stats_hold_ties_and_a_centre_of_zero(n in 1usize..80, kf in 0.0f64..1.0) {
            // Values symmetric about 0 in steps of 1/8: many equal averages, and zero among them.
            let d: Vec<f64> = (0..n).map(|i| (i as f64 - (n / 2) as f64) / 8.0).collect();
            let w = walsh_all(&d);
            let k = 1 + ((w.len() - 1) as f64 * kf) as usize;
            prop_assert_eq!(walsh_order_stat(&sorted(&d), k as u64), w[k - 1]);
        }

        #[test]
        fn interval_contains_point(d in prop::collection::vec(-1.0f64..1.0, 12..60)) {
            let e = hodges_lehmann(&d, 0.99).unwrap();
            prop_assert!(e.lo.unwrap() <= e.point && e.point <= e.hi.unwrap());
        }
    }
}
