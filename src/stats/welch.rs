//! Two independent samples by their means: Welch's t with the Welch–Satterthwaite degrees of
//! freedom (unequal variances), for few units whose means are near normal (hosts' window means).

use super::{Estimate, mean, variance};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The difference of means x̄ − ȳ with its standard error and degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Welch {
    pub difference: f64,
    pub se: f64,
    pub df: f64,
}

/// Welch's statistic; `None` with fewer than 2 values in a sample or non-finite input.
pub fn welch(x: &[f64], y: &[f64]) -> Option<Welch> {
    if x.len() < 2 || y.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let (a, b) = (variance(x) / x.len() as f64, variance(y) / y.len() as f64);
    let se2 = a + b;
    let df = if se2 > 0.0 {
        se2 * se2 / (a * a / (x.len() - 1) as f64 + b * b / (y.len() - 1) as f64)
    } else {
        (x.len() + y.len() - 2) as f64
    };
    Some(Welch {
        difference: mean(x) - mean(y),
        se: se2.sqrt(),
        df,
    })
}

impl Welch {
    /// The two-sided interval at `confidence`.
    pub fn interval(&self, confidence: f64) -> Estimate {
        let t = StudentsT::new(0.0, 1.0, self.df)
            .map(|t| t.inverse_cdf(crate::stats::Level(confidence).upper()))
            .unwrap_or(f64::INFINITY);
        Estimate {
            point: self.difference,
            lo: Some(self.difference - t * self.se),
            hi: Some(self.difference + t * self.se),
            confidence,
        }
    }

    /// The two-sided p-value of "no difference".
    pub fn p_value(&self) -> f64 {
        if self.se == 0.0 {
            return if self.difference == 0.0 { 1.0 } else { 0.0 };
        }
        StudentsT::new(0.0, 1.0, self.df).map_or(1.0, |t| {
            (2.0 * (1.0 - t.cdf((self.difference / self.se).abs()))).min(1.0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_a_worked_example() {
        // Two samples with unequal spread: x̄ − ȳ = 3, SE² = 2.5/5 + 10/5 = 2.5, and
        // df = 2.5² / (0.5²/4 + 2²/4) = 6.25 / 1.0625 = 5.88.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [-4.0, -2.0, 0.0, 2.0, 4.0];
        let w = welch(&x, &y).unwrap();
        assert!((w.difference - 3.0).abs() < 1e-12);
        assert!((w.se * w.se - 2.5).abs() < 1e-12, "{w:?}");
        assert!((w.df - 6.25 / 1.0625).abs() < 1e-9, "{w:?}");
        // t(5.88) at 97.5% is 2.459: the 95% interval is 3 ± 2.459 × 1.58.
        let e = w.interval(0.95);
        assert!(
            (e.hi.unwrap() - 3.0 - 2.459 * 2.5f64.sqrt()).abs() < 0.01,
            "{e:?}"
        );
        let p = w.p_value();
        assert!(p > 0.05 && p < 0.3, "{p}");
        assert!(welch(&x[..1], &y).is_none());
    }
}
