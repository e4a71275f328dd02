//! Two independent samples: the Hodges–Lehmann shift with the Mann–Whitney interval.

use super::{Estimate, sorted};
use statrs::distribution::{ContinuousCDF, Normal};

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
    let z = Normal::standard().inverse_cdf(crate::stats::Level(confidence).upper());
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
}
