//! The two views of a difference between groups of hosts, and which one a verdict rests on.
//!
//! * **Time-paired**: the canary/baseline log-ratio interval by interval, so load that hits
//!   both groups cancels. It describes *these* hosts: whatever differed between the two groups
//!   before anything changed (newer hardware, more traffic from the balancer) is in it, and its
//!   interval knows nothing of it. With a before window, the after blocks are compared with the
//!   before blocks (Hodges–Lehmann shift, Mann–Whitney interval, widened for each window's
//!   autocorrelation), and host levels that held across both windows cancel.
//! * **Hosts as units**: each host's log mean over the window (with a before window: its change
//!   from the before window), canary hosts against baseline hosts by Welch's t. Its spread holds
//!   both what time leaves in a host's mean and how hosts differ from one another.
//!
//! The verdict rests on the wider: a random-effects combination whose between-host variance τ²
//! is estimated by moments — the hosts' standard error squared is τ²(1/n_c + 1/n_b) plus the
//! time-paired one's, so τ̂² > 0 exactly when the hosts' error is the larger, and then the
//! hosts' Welch interval (with its few degrees of freedom) is the one that holds it. Without a
//! before window and with fewer than two hosts in a group, host-to-host variation cannot be
//! measured at all, and no interval is given (one host switched back and forth in periods is
//! exempt: the groups are the same host).

use super::super::verdict::{Design, paired_interval};
pub use crate::model::judge::{Basis, Composition, Groups};
use crate::stats::{self, Estimate, mann_whitney_shift, welch};

/// One metric's units: its blocks in each window and its hosts' values.
pub struct Units<'a> {
    /// Log-ratios of the judged (after) window and of the before window (empty without one).
    pub after: &'a [f64],
    pub before: Option<&'a [f64]>,
    /// Autocorrelation widening factors of each window's blocks.
    pub widened_after: f64,
    pub widened_before: f64,
    /// Each host's value and whether it is a canary.
    pub hosts: &'a [(bool, f64)],
}

impl Units<'_> {
    fn group(&self, canary: bool) -> Vec<f64> {
        self.hosts
            .iter()
            .filter(|h| h.0 == canary)
            .map(|h| h.1)
            .collect()
    }

    /// The time-paired view's standard error (log scale).
    pub fn se_time(&self) -> Option<f64> {
        let part = |x: &[f64], f: f64| (stats::sd(x) * f).powi(2) / x.len() as f64;
        if self.after.len() < 2 {
            return None;
        }
        let a = part(self.after, self.widened_after);
        match self.before {
            Some(b) if b.len() >= 2 => Some((a + part(b, self.widened_before)).sqrt()),
            Some(_) => None,
            None => Some(a.sqrt()),
        }
    }

    /// Which view the verdict rests on, and what the hosts say.
    pub fn compose(&self, groups: Groups, confidence: f64) -> Composition {
        let (c, b) = (self.group(true), self.group(false));
        let w = welch(&c, &b);
        let se_time = self.se_time();
        let basis = match (groups, w, se_time) {
            (Groups::OneHost, _, _) => Basis::OneHost,
            (_, None, _) if self.before.is_none() => Basis::TooFewHosts,
            (_, Some(w), Some(t)) if w.se > t => Basis::HostsAsUnits,
            _ => Basis::TimePaired,
        };
        let pooled = (c.len() >= 2 && b.len() >= 2).then(|| {
            let ss = |x: &[f64]| stats::sd(x).powi(2) * (x.len() - 1) as f64;
            ((ss(&c) + ss(&b)) / (c.len() + b.len() - 2) as f64).sqrt() * 100.0
        });
        Composition {
            basis,
            canary_units: c.len(),
            baseline_units: b.len(),
            se_time,
            se_hosts: w.map(|w| w.se),
            host_sd_percent: pooled.filter(|_| groups == Groups::Hosts),
            hosts: w
                .filter(|_| groups == Groups::Hosts)
                .map(|w| super::super::verdict::to_percent(w.interval(confidence))),
            df: w.map(|w| w.df),
        }
    }

    /// The interval of the basis at `level`, on the log scale.
    pub fn interval(&self, basis: Basis, level: f64, design: &Design) -> Option<Estimate> {
        match basis {
            Basis::TooFewHosts => None,
            Basis::HostsAsUnits => {
                welch(&self.group(true), &self.group(false)).map(|w| w.interval(level))
            }
            Basis::TimePaired | Basis::OneHost => match self.before {
                None => {
                    paired_interval(self.after, level, design).map(|e| widen(e, self.widened_after))
                }
                Some(before) => self.shifted(before, level, design),
            },
        }
    }

    /// The after blocks against the before blocks at `level`. Fixed window: the
    /// Hodges–Lehmann shift with the Mann–Whitney interval, widened by the two windows'
    /// autocorrelation factors weighted as their variances enter. Confidence sequence: the
    /// after blocks' sequence and the before window's interval at half the error each, their
    /// difference (Bonferroni), valid at every look.
    fn shifted(&self, before: &[f64], level: f64, design: &Design) -> Option<Estimate> {
        let (na, nb) = (self.after.len() as f64, before.len() as f64);
        match design {
            Design::Sequential { .. } => {
                let half = stats::Level(level).split(2).get();
                let a = paired_interval(self.after, half, design)?;
                let b = widen(stats::hodges_lehmann(before, half)?, self.widened_before);
                Some(Estimate {
                    point: a.point - b.point,
                    lo: a.lo.zip(b.hi).map(|(l, h)| l - h),
                    hi: a.hi.zip(b.lo).map(|(h, l)| h - l),
                    confidence: level,
                })
            }
            _ => {
                let s = mann_whitney_shift(self.after, before, level)?;
                let f = ((self.widened_after.powi(2) / na + self.widened_before.powi(2) / nb)
                    / (1.0 / na + 1.0 / nb))
                    .sqrt();
                Some(widen(s.estimate, f))
            }
        }
    }

    /// The raw p-value of "no change" under the basis (orders Holm's steps).
    pub fn p_value(&self, basis: Basis) -> f64 {
        match (basis, self.before) {
            (Basis::HostsAsUnits, _) => {
                welch(&self.group(true), &self.group(false)).map_or(1.0, |w| w.p_value())
            }
            (_, Some(b)) => mann_whitney_shift(self.after, b, 0.95).map_or(1.0, |s| s.p_value),
            _ => stats::signed_rank_p(self.after),
        }
    }
}

/// An interval widened by `f` around its point estimate.
pub fn widen(e: Estimate, f: f64) -> Estimate {
    Estimate {
        lo: e.lo.map(|lo| e.point - f * (e.point - lo)),
        hi: e.hi.map(|hi| e.point + f * (hi - e.point)),
        ..e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units<'a>(after: &'a [f64], hosts: &'a [(bool, f64)]) -> Units<'a> {
        Units {
            after,
            before: None,
            widened_after: 1.0,
            widened_before: 1.0,
            hosts,
        }
    }

    #[test]
    fn hosts_that_spread_more_than_time_explains_decide_the_interval() {
        // Blocks say +5% ± little; the hosts' own means scatter by ±5%.
        let after: Vec<f64> = (0..40)
            .map(|i| 0.05 + 0.002 * ((i % 5) as f64 - 2.0))
            .collect();
        let spread = [
            (true, 0.10),
            (true, 0.0),
            (true, 0.05),
            (false, 0.03),
            (false, -0.05),
            (false, 0.02),
        ];
        let u = units(&after, &spread);
        let c = u.compose(Groups::Hosts, 0.99);
        assert_eq!(c.basis, Basis::HostsAsUnits);
        let time = u.interval(Basis::TimePaired, 0.99, &Design::Fixed).unwrap();
        let hosts = u.interval(c.basis, 0.99, &Design::Fixed).unwrap();
        assert!(
            time.excludes(0.0) && !hosts.excludes(0.0),
            "{time:?} {hosts:?}"
        );
        // Hosts that agree: the time-paired interval stands.
        let agree = [
            (true, 0.05),
            (true, 0.0501),
            (true, 0.0499),
            (false, 0.0),
            (false, 0.0001),
            (false, -0.0001),
        ];
        assert_eq!(
            units(&after, &agree).compose(Groups::Hosts, 0.99).basis,
            Basis::TimePaired
        );
        // One host per group: nothing to measure host variation with, no interval; unless
        // the groups are one host (switchback), or a before window calibrates them.
        let one = [(true, 0.05), (false, 0.0)];
        assert_eq!(
            units(&after, &one).compose(Groups::Hosts, 0.99).basis,
            Basis::TooFewHosts
        );
        assert_eq!(
            units(&after, &one).compose(Groups::OneHost, 0.99).basis,
            Basis::OneHost
        );
        let before = vec![0.04; 40];
        let calibrated = Units {
            before: Some(&before),
            ..units(&after, &one)
        };
        assert_eq!(
            calibrated.compose(Groups::Hosts, 0.99).basis,
            Basis::TimePaired
        );
    }

    #[test]
    fn a_before_window_subtracts_what_the_groups_differed_by_before() {
        // +5% before, +1% after (with a little noise): the change is about −4%.
        let wobble = |i: usize| 0.003 * (((i * 7) % 11) as f64 - 5.0) / 5.0;
        let after: Vec<f64> = (0..48).map(|i| (1.01f64).ln() + wobble(i)).collect();
        let before: Vec<f64> = (0..48).map(|i| (1.05f64).ln() + wobble(i + 3)).collect();
        let u = Units {
            before: Some(&before),
            ..units(&after, &[])
        };
        let e = u.interval(Basis::TimePaired, 0.99, &Design::Fixed).unwrap();
        let pct = super::super::super::verdict::to_percent(e);
        assert!((pct.point + 3.8).abs() < 0.3, "{pct:?}");
        assert!(pct.hi.unwrap() < 0.0, "{pct:?}");
        // The sequence's interval holds the same change, wider.
        let s = u
            .interval(
                Basis::TimePaired,
                0.99,
                &Design::Sequential { n_opt: 100.0 },
            )
            .unwrap();
        assert!(
            s.lo.unwrap() < e.lo.unwrap() && s.hi.unwrap() > e.hi.unwrap(),
            "{s:?}"
        );
        let truth = (1.01f64 / 1.05).ln();
        assert!(s.lo.unwrap() < truth && truth < s.hi.unwrap(), "{s:?}");
    }
}
