//! The interval a lifetime forecast is of, so that it forecasts the one the answer prints: the
//! fixed design's (the signed-rank interval, modelled by a normal one at the first Holm step's
//! z) or, under `--sequential` and `--target-halfwidth`, the confidence sequence over lifetime
//! means, which is wider — its radius grows with log n, and its plug-in scale is the sample SD
//! inflated to its one-sided 95% chi-square upper bound, as `ConfidenceSequence` computes it.

use crate::analyze::sequential::{ConfidenceSequence, cs_radius};
use crate::model::verdict::Design;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// z·σ/√n: the fixed design's interval at the level with this z.
    Fixed { z: f64 },
    /// The normal-mixture confidence sequence at `alpha`, tightest near `n_opt` units.
    Sequence { alpha: f64, n_opt: f64 },
}

impl Rule {
    /// The rule of a run's design, with `level` the first Holm step's (the widest interval).
    pub fn of(design: &Design, level: f64) -> Rule {
        match design {
            Design::Sequential { n_opt } => Rule::Sequence {
                alpha: crate::stats::Level(level).alpha(),
                n_opt: *n_opt,
            },
            _ => Rule::Fixed {
                z: super::z_for(level),
            },
        }
    }

    /// The half-width after `units` units (lifetimes, or restarts with replicas) whose mean has
    /// SD `sd` each (log scale). None where the rule gives no interval: fewer than 2 units, or
    /// a sequence before its first interval (`ConfidenceSequence::MIN_BLOCKS` units).
    pub fn half_width(&self, sd: f64, units: f64) -> Option<f64> {
        match *self {
            Rule::Fixed { z } => (units >= 2.0).then(|| z * sd / units.sqrt()),
            Rule::Sequence { alpha, n_opt } => {
                use statrs::distribution::{ChiSquared, ContinuousCDF};
                let n = units.floor() as usize;
                if n < ConfidenceSequence::MIN_BLOCKS {
                    return None;
                }
                let df = (n - 1) as f64;
                let chi = ChiSquared::new(df).ok()?.inverse_cdf(0.05);
                Some(cs_radius(n, sd * (df / chi).sqrt(), alpha, n_opt))
            }
        }
    }

    /// The fewest units whose half-width is at most `h` (log scale) for units of SD `sd`: at
    /// least 2.
    pub fn units_for(&self, sd: f64, h: f64) -> f64 {
        match *self {
            Rule::Fixed { z } => (z * sd / h).powi(2).max(2.0),
            Rule::Sequence { .. } => {
                // The radius falls with n past the first interval: the first n within h, by
                // doubling and bisection.
                let within = |n: f64| self.half_width(sd, n).is_some_and(|w| w <= h);
                let mut hi = ConfidenceSequence::MIN_BLOCKS as f64;
                while !within(hi) && hi < 1e9 {
                    hi *= 2.0;
                }
                let mut lo = (hi / 2.0).max(ConfidenceSequence::MIN_BLOCKS as f64 - 1.0);
                while hi - lo > 1.0 {
                    let mid = ((lo + hi) / 2.0).floor();
                    if within(mid) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                hi
            }
        }
    }

    pub fn is_sequence(&self) -> bool {
        matches!(self, Rule::Sequence { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_is_wider_than_the_fixed_interval_and_its_inverse_meets_it() {
        let fixed = Rule::of(&Design::Fixed, 0.99);
        let seq = Rule::of(&Design::Sequential { n_opt: 30.0 }, 0.99);
        let (f, s) = (
            fixed.half_width(0.05, 40.0).unwrap(),
            seq.half_width(0.05, 40.0).unwrap(),
        );
        // 2.576·0.05/√40 = 0.0204; the sequence at 40 units is wider.
        assert!((f - 0.0204).abs() < 1e-3, "{f}");
        assert!(s > 1.3 * f, "{s} vs {f}");
        assert_eq!(
            seq.half_width(0.05, 19.0),
            None,
            "no interval before 20 units"
        );
        assert_eq!(fixed.half_width(0.05, 1.0), None);
        // The inverse: the fewest units within h, and one fewer is not.
        for rule in [fixed, seq] {
            let n = rule.units_for(0.05, 0.02);
            assert!(rule.half_width(0.05, n).unwrap() <= 0.02, "{rule:?} {n}");
            if n > 20.0 {
                assert!(
                    rule.half_width(0.05, n - 1.0).is_none_or(|w| w > 0.02),
                    "{rule:?} {n}"
                );
            }
        }
        assert!(seq.units_for(0.05, 0.02) > fixed.units_for(0.05, 0.02));
    }

    #[test]
    fn with_a_target_the_forecast_is_where_the_run_stops_if_before_its_time_ends() {
        use crate::analyze::lifetimes::{Components, size_replicated};
        let c = Components {
            lifetimes: 3,
            blocks: 6,
            within_sd: 0.05,
            between_sd: 0.01,
            replicas: 1,
            shared_sd: None,
        };
        let seq = Rule::of(&Design::Sequential { n_opt: 30.0 }, 0.99);
        let left = Some((600.0, 3));
        let open = size_replicated(&c, 1.0, 2.0, (left, None), seq, 1);
        // ±5% is reached long before 600 s: the run stops there, and its half-width then is
        // what the answer prints — within the target, wider than the open-ended forecast.
        let h = 0.05f64.ln_1p();
        let stops = size_replicated(&c, 1.0, 2.0, (left, Some(h)), seq, 1);
        assert!(
            stops.lifetimes.unwrap() < open.lifetimes.unwrap(),
            "{stops:?} {open:?}"
        );
        let p = stops.predicted.unwrap();
        assert!(p <= h && p > open.predicted.unwrap(), "{p} vs {open:?}");
        // A target the time cannot reach leaves the forecast at the time's end.
        let far = size_replicated(&c, 1.0, 2.0, (left, Some(0.001)), seq, 1);
        assert_eq!(far.lifetimes, open.lifetimes);
    }
}
