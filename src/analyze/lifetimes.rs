//! Blocks nested in server lifetimes (`run --server`, warm design). Every arm's server runs for
//! a few blocks, then all are restarted: a server's lifetime is a random effect (where its
//! memory landed, what khugepaged and compaction did to it), so two identical servers differ by
//! more than their bursts do. The lifetime is the unit of replication: per lifetime the mean of
//! its blocks' log-ratios (the summary-measure analysis of a nested design; Altman & Bland,
//! "Statistics notes: units of analysis", BMJ 1997), and every interval is computed over those
//! means, so instance-to-instance variation is inside it and its degrees of freedom come from
//! lifetimes, not bursts.
//!
//! Beside it, the variance components that say how predictable an arm is across restarts:
//! one-way random-effects ANOVA of the per-block log-ratio across lifetimes (between-lifetime
//! SD of the contrast), and per arm its instance SD from the covariance of the arms' lifetime
//! means (what the arms share — the machine's drift — is their covariance; what is left is the
//! arm's own).

pub use crate::model::analysis::Components;

mod components;
pub mod design;
mod rule;
mod shape;
pub mod tuning;
use components::between_sq;
pub use components::{components, instance_sds, pooled};
pub use rule::Rule;
pub use shape::{RANK_RATIO_MIN, RESAMPLES, Spread, rank_ratio, resampled_range, scaled, spread};

/// One measured value placed in its block and lifetime. With replicas, `lifetime` is the
/// restart (every replica's lifetime that began with it) and `replica` which of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    pub lifetime: usize,
    pub replica: usize,
    pub block: usize,
    pub value: f64,
}

/// Per lifetime (per restart, with replicas), the mean of its blocks' values, in lifetime
/// order (invariant: every input finite; lifetimes without a value are absent). Replicas
/// restarted together share whatever that restart did to the machine, so their lifetimes are
/// not independent units: the restart is the unit, and its mean is over all its replicas'
/// blocks.
pub fn lifetime_means(x: &[Placed]) -> Vec<f64> {
    let mut by: std::collections::BTreeMap<usize, (f64, usize)> = Default::default();
    for p in x {
        let e = by.entry(p.lifetime).or_default();
        e.0 += p.value;
        e.1 += 1;
    }
    by.values().map(|(s, n)| s / *n as f64).collect()
}

/// Blocks per lifetime, and what they predict, sized from a run's own data.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sizing {
    pub blocks: usize,
    /// What bound it when the optimum was not taken: "at least 2", "at most 20", "at least 30
    /// lifetimes in the run".
    pub bound: Option<&'static str>,
    /// The predicted half-width of the contrast at the run's end (log scale), when its length
    /// is known.
    pub predicted: Option<f64>,
    /// Lifetimes (restarts, with replicas) the run is predicted to hold in all.
    pub lifetimes: Option<f64>,
}

/// The fewest lifetimes a sized run plans for: the interval's degrees of freedom come from
/// lifetimes (a signed-rank interval over few is wide), and the instance spread, which a pilot
/// often cannot tell from zero, needs many to be seen.
pub const MIN_LIFETIMES: f64 = 30.0;

/// The two-sided normal quantile for `confidence` (2.576 at 99%).
pub fn z_for(confidence: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().inverse_cdf(crate::stats::Level(confidence).upper())
}

/// Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM 2013, §4): with the
/// variance of a block within a lifetime T²₁ and of the lifetimes beyond it T²₂, a lifetime
/// costing `restart_s` and a block `block_s`, the blocks per lifetime that give the narrowest
/// interval per second of running are r = ⌈√((c_lifetime / c_block) · (T²₁ / T²₂))⌉. Bounded to
/// [2, 20] (two, so the spread within a lifetime is seen) and so that `remaining` (the seconds
/// left of the run, with `done` lifetimes already run) holds at least [`MIN_LIFETIMES`]. The
/// predicted half-width at the end is z·√((T²₂ + T²₁/r) / L) for L lifetimes in all (a normal
/// approximation to the interval over lifetime means).
pub fn size(
    c: &Components,
    restart_s: f64,
    block_s: f64,
    remaining: Option<(f64, usize)>,
    z: f64,
) -> Sizing {
    size_replicated(
        c,
        restart_s,
        block_s,
        (remaining, None),
        Rule::Fixed { z },
        1,
    )
}

/// [`size`] for a run of `replicas` servers per arm at once: every restart starts `replicas`
/// lifetimes and every block holds `replicas` paired bursts. The unit is the restart (its
/// replicas share what it did to the machine): its variance is (T²₂ + n·S² + T²₁/r)/n with S
/// the shared effect, so the optimum r is Kalibera–Jones's with T²₂ + n·S² for T²₂, and
/// `remaining`'s done and [`MIN_LIFETIMES`] count restarts. The predicted half-width is
/// `rule`'s: the interval the answer prints; with `stop_at` (`--target-halfwidth`, log scale)
/// the run ends where that interval first reaches it, if before its time is spent.
pub fn size_replicated(
    c: &Components,
    restart_s: f64,
    block_s: f64,
    (remaining, stop_at): (Option<(f64, usize)>, Option<f64>),
    rule: Rule,
    replicas: usize,
) -> Sizing {
    let r = replicas.max(1) as f64;
    let (w2, b2) = (c.within_sd.powi(2), between_sq(c, r));
    // An instance spread the data cannot tell from 0 is taken as a tenth of the burst spread
    // (a prior, said in the bound): a pilot of a few lifetimes cannot see a smaller one, and
    // taking it as 0 would put every block in one lifetime.
    let floored = b2 < w2 / 100.0;
    let b2_sized = b2.max(w2 / 100.0);
    let ideal = if b2_sized > 0.0 {
        ((restart_s / block_s) * (w2 / b2_sized)).sqrt().ceil()
    } else {
        2.0 // no noise at all: the fewest
    };
    let (mut k, mut bound) = (
        ideal,
        floored.then_some("instance spread below a tenth of the bursts': taken as that"),
    );
    if k > 20.0 {
        (k, bound) = (20.0, Some("at most 20"));
    }
    if let Some((left, done)) = remaining.filter(|(_, done)| (*done as f64) < MIN_LIFETIMES) {
        // The largest k that still leaves MIN_LIFETIMES restarts in all.
        let need = MIN_LIFETIMES - done as f64;
        let most = ((left / need - restart_s) / block_s).floor();
        if k > most {
            (k, bound) = (most, Some("at least 30 lifetimes in the run"));
        }
    }
    if k < 2.0 {
        (k, bound) = (2.0, Some("at least 2"));
    }
    let sd = ((b2_sized + w2 / k) / r).sqrt();
    let lifetimes = remaining
        .map(|(left, done)| done as f64 + left / (restart_s + k * block_s))
        .map(|l| stop_at.map_or(l, |h| l.min(rule.units_for(sd, h))));
    Sizing {
        blocks: k as usize,
        bound,
        predicted: lifetimes.and_then(|l| rule.half_width(sd, l)),
        lifetimes,
    }
}

/// Below this many degrees of freedom in the spread within lifetimes, a forecast from it is
/// said with its range.
pub const FEW_DF: usize = 30;

/// How far the true spread of a unit's mean may lie from the one `c` estimated, for units of
/// `k` blocks per lifetime: factors on its SD at `level`, applied to a half-width forecast
/// from it, and the degrees of freedom they come from. The unit's variance is T²₂ + T²₁/k (with
/// replicas T²₂ + n·S² for T²₂, as the sizing counts it, floored as the sizing floors it), two
/// estimates of different precision: its degrees of freedom are Satterthwaite's,
/// (T²₂ + T²₁/k)² / (T⁴₂/(units − 1) + (T²₁/k)²/(blocks − lifetimes)), so few lifetimes count
/// when the lifetimes' part is large and many blocks when the bursts' part is; a floored T²₂
/// is a prior, not an estimate, and adds no uncertainty. Chi-square on those: the range a
/// normal spread allows (heavy tails hold it less often: the simulation study's row). None
/// with no degrees of freedom.
pub fn spread_range(c: &Components, k: usize, level: f64) -> Option<((f64, f64), f64)> {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    let r = c.replicas.max(1) as f64;
    let df_w = c.blocks.checked_sub(c.lifetimes).filter(|d| *d > 0)? as f64;
    let units = c.lifetimes / c.replicas.max(1);
    let w2k = c.within_sd.powi(2) / k.max(1) as f64;
    let b2 = between_sq(c, r);
    let floored = b2 < c.within_sd.powi(2) / 100.0;
    let b2 = b2.max(c.within_sd.powi(2) / 100.0);
    let between_term = match (floored, units) {
        (true, _) => 0.0,
        (false, 0 | 1) => return None,
        (false, u) => b2.powi(2) / (u - 1) as f64,
    };
    let df = (b2 + w2k).powi(2) / (between_term + w2k.powi(2) / df_w);
    let chi = ChiSquared::new(df).ok()?;
    let level = crate::stats::Level(level);
    Some((
        (
            (df / chi.inverse_cdf(level.upper())).sqrt(),
            (df / chi.inverse_cdf(level.tail())).sqrt(),
        ),
        df,
    ))
}

/// The seconds of running (restarts included) the model of [`size`] needs for a half-width of
/// `h` (a fraction: 0.01 for ±1%) at `k` blocks per lifetime: L = z²(T²₂ + T²₁/k)/h²
/// lifetimes of `restart_s + k·block_s` each.
pub fn time_for(c: &Components, k: usize, restart_s: f64, block_s: f64, z: f64, h: f64) -> f64 {
    time_replicated(c, k, (restart_s, block_s), Rule::Fixed { z }, h, 1)
}

/// [`time_for`] with `replicas` lifetimes running at once (a restart the unit), for `rule`'s
/// interval.
pub fn time_replicated(
    c: &Components,
    k: usize,
    (restart_s, block_s): (f64, f64),
    rule: Rule,
    h: f64,
    replicas: usize,
) -> f64 {
    let k = k.max(1) as f64;
    let r = replicas.max(1) as f64;
    let between = between_sq(c, r);
    let sd = ((between + c.within_sd.powi(2) / k) / r).sqrt();
    rule.units_for(sd, h.ln_1p()) * (restart_s + k * block_s)
}

/// Per arm, the SD of its instance effect on `metric` (log scale) over the lifetimes of
/// `trials` (successful trials, blocks where every arm succeeded): each arm's lifetime means of
/// its log values go to [`instance_sds`] (their covariance with the other arms' is what the
/// arms share: drift, and the blocks' common noise averaged over a lifetime), with the arm's
/// own burst noise — its within-lifetime variance less its within-lifetime covariance with
/// the other arms — as the noise a lifetime mean carries.
pub fn arm_instance_sds(
    trials: &[crate::analyze::trial_data::TrialData],
    arms: usize,
    metric: &str,
) -> Vec<Option<f64>> {
    use std::collections::BTreeMap;
    if arms < 2 {
        return vec![None; arms];
    }
    // block → (lifetime, per arm log value)
    let mut blocks: BTreeMap<usize, (usize, Vec<Option<f64>>)> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok) {
        let (Some(l), Some(v)) = (t.lifetime, t.metrics.get(metric).filter(|v| **v > 0.0)) else {
            continue;
        };
        let e = blocks.entry(t.block).or_insert((l, vec![None; arms]));
        if t.arm < arms {
            e.1[t.arm] = Some(v.ln());
        }
    }
    // lifetime → per arm its blocks' values
    let mut by: BTreeMap<usize, Vec<Vec<f64>>> = BTreeMap::new();
    for (l, vals) in blocks.values() {
        if let Some(v) = vals.iter().copied().collect::<Option<Vec<f64>>>() {
            let e = by.entry(*l).or_insert_with(|| vec![Vec::new(); arms]);
            for (a, x) in v.into_iter().enumerate() {
                e[a].push(x);
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let means: Vec<Vec<f64>> = (0..arms)
        .map(|a| by.values().map(|r| mean(&r[a])).collect())
        .collect();
    // Pooled within-lifetime covariance of arms a and b.
    let within_cov = |a: usize, b: usize| {
        let (mut s, mut df) = (0.0, 0usize);
        for r in by.values() {
            let (ma, mb) = (mean(&r[a]), mean(&r[b]));
            s += r[a]
                .iter()
                .zip(&r[b])
                .map(|(x, y)| (x - ma) * (y - mb))
                .sum::<f64>();
            df += r[a].len().saturating_sub(1);
        }
        if df > 0 { s / df as f64 } else { 0.0 }
    };
    let within: Vec<f64> = (0..arms)
        .map(|a| {
            let others = (0..arms)
                .filter(|b| *b != a)
                .map(|b| within_cov(a, b))
                .sum::<f64>()
                / (arms - 1) as f64;
            (within_cov(a, a) - others).max(0.0).sqrt()
        })
        .collect();
    let n: usize = by.values().map(|r| r[0].len()).sum();
    instance_sds(&means, &within, n as f64 / by.len().max(1) as f64)
}

/// Whether a lifetime's warm-up reached the warm state, measured: per arm, over lifetimes with
/// at least two successful blocks of it, log(first block's value) − mean log(the later
/// blocks'), and its Hodges–Lehmann estimate with the signed-rank interval at `confidence`
/// (log scale). A cold first burst shows as an interval away from 0 (below it for a
/// throughput). None for an arm with too few lifetimes.
pub fn first_burst_effects(
    trials: &[crate::analyze::trial_data::TrialData],
    arms: usize,
    metric: &str,
    confidence: f64,
) -> Vec<Option<crate::stats::Estimate>> {
    use std::collections::BTreeMap;
    (0..arms)
        .map(|a| {
            let mut by: BTreeMap<usize, Vec<(usize, f64)>> = BTreeMap::new();
            for t in trials.iter().filter(|t| t.ok && t.arm == a) {
                if let (Some(l), Some(v)) =
                    (t.lifetime, t.metrics.get(metric).filter(|v| **v > 0.0))
                {
                    by.entry(l).or_default().push((t.block, v.ln()));
                }
            }
            let d: Vec<f64> = by
                .into_values()
                .filter(|v| v.len() >= 2)
                .map(|mut v| {
                    v.sort_by_key(|x| x.0);
                    let rest = &v[1..];
                    v[0].1 - rest.iter().map(|x| x.1).sum::<f64>() / rest.len() as f64
                })
                .collect();
            crate::stats::hodges_lehmann(&d, confidence)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_from_few_blocks_is_forecast_with_the_range_its_degrees_of_freedom_allow() {
        let c = |blocks, lifetimes, between_sd| Components {
            lifetimes,
            blocks,
            within_sd: 0.05,
            between_sd,
            replicas: 1,
            shared_sd: None,
        };
        // 3 lifetimes of 2 blocks, no lifetime spread seen (floored to a tenth of the bursts'
        // SD, a prior): the bursts' 3 degrees of freedom, as 3·(1.02)² = 3.12 for the unit's
        // variance, a true SD 0.62–2.8× the one seen.
        let ((lo, hi), df) = spread_range(&c(6, 3, 0.0), 2, 0.90).unwrap();
        assert!(
            (lo - 0.62).abs() < 0.01 && (hi - 2.83).abs() < 0.01 && (df - 3.1212).abs() < 1e-9,
            "{lo} {hi} {df}"
        );
        // Many blocks: a narrow range.
        let ((lo, hi), _) = spread_range(&c(400, 100, 0.0), 4, 0.90).unwrap();
        assert!(lo > 0.9 && hi < 1.1, "{lo} {hi}");
        assert_eq!(spread_range(&c(3, 3, 0.0), 1, 0.9), None);
        // A lifetime spread as large as a lifetime's bursts' part: both levels count, and the
        // 2 degrees of freedom of 3 lifetimes weigh most — (2v)²/(v²/2 + v²/3) = 4.8.
        let (_, df) = spread_range(&c(6, 3, 0.05 / 2f64.sqrt()), 2, 0.90).unwrap();
        assert!((df - 4.8).abs() < 1e-9, "{df}");
        // The same spread seen over 30 lifetimes of 2 blocks: (2v)²/(v²/29 + v²/30) = 58.98.
        let (_, df) = spread_range(&c(60, 30, 0.05 / 2f64.sqrt()), 2, 0.90).unwrap();
        assert!((df - 4.0 / (1.0 / 29.0 + 1.0 / 30.0)).abs() < 1e-9, "{df}");
    }

    fn placed(groups: &[&[f64]]) -> Vec<Placed> {
        let mut v = Vec::new();
        let mut block = 0;
        for (l, g) in groups.iter().enumerate() {
            for x in *g {
                v.push(Placed {
                    lifetime: l,
                    replica: 0,
                    block,
                    value: *x,
                });
                block += 1;
            }
        }
        v
    }

    #[test]
    fn lifetime_means_average_each_lifetimes_blocks() {
        let x = placed(&[&[1.0, 3.0], &[10.0], &[4.0, 5.0, 6.0]]);
        assert_eq!(lifetime_means(&x), vec![2.0, 10.0, 5.0]);
    }

    #[test]
    fn components_match_a_hand_computed_anova() {
        // Balanced, 3 groups of 2: MSW = (2+2+2)/3 = 2; group means 1, 3, 8 (grand 4):
        // SSB = 2·(9+1+16) = 52, MSB = 26; n0 = 2; between = (26−2)/2 = 12.
        let x = placed(&[&[0.0, 2.0], &[2.0, 4.0], &[7.0, 9.0]]);
        let c = components(&x).unwrap();
        assert_eq!((c.lifetimes, c.blocks), (3, 6));
        assert!((c.within_sd - 2f64.sqrt()).abs() < 1e-12, "{c:?}");
        assert!((c.between_sd - 12f64.sqrt()).abs() < 1e-12, "{c:?}");
        // Lifetimes that differ less than their blocks: no between part, not a negative one.
        let flat = placed(&[&[0.0, 4.0], &[1.0, 3.0], &[2.0, 2.0]]);
        assert_eq!(components(&flat).unwrap().between_sd, 0.0);
        assert!(components(&placed(&[&[1.0], &[2.0]])).is_none());
        assert!(components(&placed(&[&[1.0, 2.0]])).is_none());
    }

    #[test]
    fn replicas_restarted_together_have_their_shared_effect_apart() {
        // 3 restarts × 2 replicas × 2 blocks, every lifetime's blocks 2 apart (T²₁ = 2).
        // Replica means 1, 3 | 6, 8 | 11, 13: within a restart their variance is 2, of which
        // T²₁/2 = 1 is the blocks' (T²₂ = 1); restart means 2, 7, 12: MSB = 2·50/2 = 50,
        // shared = (50 − 2)/2 = 24.
        let mut x = Vec::new();
        for (restart, means) in [[1.0, 3.0], [6.0, 8.0], [11.0, 13.0]].iter().enumerate() {
            for (replica, m) in means.iter().enumerate() {
                for d in [-1.0, 1.0] {
                    x.push(Placed {
                        lifetime: restart,
                        replica,
                        block: x.len(),
                        value: m + d,
                    });
                }
            }
        }
        let c = components(&x).unwrap();
        assert_eq!((c.lifetimes, c.blocks, c.replicas), (6, 12, 2));
        assert!((c.within_sd - 2f64.sqrt()).abs() < 1e-12, "{c:?}");
        assert!((c.between_sd - 1.0).abs() < 1e-12, "{c:?}");
        assert!((c.shared_sd.unwrap() - 24f64.sqrt()).abs() < 1e-12, "{c:?}");
        // The unit is the restart: one mean per restart, over both replicas' blocks.
        assert_eq!(lifetime_means(&x), vec![2.0, 7.0, 12.0]);
        // The sizing counts the shared part once per restart: T²₂ + n·S² = 1 + 2·24 = 49,
        // so r = ⌈√((c_r/c_b)·T²₁/49)⌉ with c_r/c_b = 49·8/2 = 196: √(196·2/49) = √8 → 3.
        let s = size_replicated(&c, 196.0, 1.0, (None, None), Rule::Fixed { z: 2.576 }, 2);
        assert_eq!(s.blocks, 3);
    }

    #[test]
    fn sizing_follows_kalibera_and_jones_within_its_bounds() {
        let c = |w: f64, b: f64| Components {
            lifetimes: 5,
            blocks: 10,
            within_sd: w,
            between_sd: b,
            replicas: 1,
            shared_sd: None,
        };
        // √((3 / 1.2) · (0.04² / 0.01²)) = √40 = 6.3 → 7.
        let s = size(&c(0.04, 0.01), 3.0, 1.2, None, 2.576);
        assert_eq!((s.blocks, s.bound, s.predicted), (7, None, None));
        // Instance spread as large as the bursts' and a cheap restart: at least 2.
        assert_eq!(
            size(&c(0.01, 0.02), 0.5, 1.0, None, 2.576).bound,
            Some("at least 2")
        );
        // None seen: taken as a tenth of the bursts' (said), √(1 · 100) = 10 blocks, unless
        // --max-time then holds fewer than 30 lifetimes; never the cap for want of a variance.
        let s = size(&c(0.04, 0.0), 1.0, 1.0, None, 2.576);
        assert_eq!(
            (s.blocks, s.bound),
            (
                10,
                Some("instance spread below a tenth of the bursts': taken as that")
            )
        );
        let s = size(&c(0.04, 0.0), 1.0, 1.0, Some((300.0, 0)), 2.576);
        assert_eq!(
            (s.blocks, s.bound),
            (9, Some("at least 30 lifetimes in the run"))
        );
        // 20 done already: 10 more in the 100 s left; 30 done: no such bound.
        assert_eq!(
            size(&c(0.04, 0.0), 1.0, 1.0, Some((100.0, 20)), 2.576).blocks,
            9
        );
        assert_eq!(
            size(&c(0.04, 0.0), 1.0, 1.0, Some((3.0, 30)), 2.576).blocks,
            10
        );
        // The prediction: 600 s of lifetimes costing 3 + 7·1.2 = 11.4 s → 52.6 lifetimes;
        // z·√((0.01² + 0.04²/7) / 52.6).
        let s = size(&c(0.04, 0.01), 3.0, 1.2, Some((600.0, 0)), 2.576);
        let want = 2.576 * ((1e-4 + 0.0016 / 7.0) / (600.0f64 / 11.4)).sqrt();
        assert_eq!(s.blocks, 7);
        assert!((s.predicted.unwrap() - want).abs() < 1e-12, "{s:?}");
        assert!((s.lifetimes.unwrap() - 600.0 / 11.4).abs() < 1e-9);
        // 300 s would hold only 26 such lifetimes: 5 blocks each keep 30 (300 / 9 s).
        let s = size(&c(0.04, 0.01), 3.0, 1.2, Some((300.0, 0)), 2.576);
        assert_eq!(s.blocks, 5);
        // The time ±1% needs at 7 blocks a lifetime: z²(0.01² + 0.04²/7)/ln(1.01)² lifetimes of
        // 11.4 s; the inverse of the prediction above.
        let t = time_for(&c(0.04, 0.01), 7, 3.0, 1.2, 2.576, 0.01);
        let l = 2.576f64.powi(2) * (1e-4 + 0.0016 / 7.0) / 0.01f64.ln_1p().powi(2);
        assert!((t - l * 11.4).abs() < 1e-9, "{t}");
        let t = time_for(&c(0.04, 0.01), 7, 3.0, 1.2, 2.576, 0.005);
        let at = size(&c(0.04, 0.01), 3.0, 1.2, Some((t, 0)), 2.576);
        assert_eq!(at.blocks, 7);
        assert!(
            (at.predicted.unwrap() - 0.005f64.ln_1p()).abs() < 1e-9,
            "{at:?}"
        );
        let p = pooled(&[c(0.03, 0.0), c(0.04, 0.02)]).unwrap();
        assert!((p.within_sd - (0.00125f64).sqrt()).abs() < 1e-12);
        assert!((p.between_sd - (0.0002f64).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn instance_sds_remove_what_the_arms_share() {
        // Both arms follow the same drift; arm 1 adds its own ±1 per lifetime.
        let drift = [0.0, 5.0, -3.0, 2.0, 8.0, -1.0];
        let own = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
        let a0: Vec<f64> = drift.to_vec();
        let a1: Vec<f64> = drift.iter().zip(own).map(|(d, o)| d + o).collect();
        let s = instance_sds(&[a0, a1], &[0.0, 0.0], 4.0);
        assert!(s[0].unwrap() < 0.5, "{s:?}");
        assert!((s[1].unwrap() - 1.0).abs() < 0.35, "{s:?}");
        assert_eq!(
            instance_sds(&[vec![1.0, 2.0], vec![1.0, 2.0]], &[], 1.0),
            [None, None]
        );
    }

    #[test]
    fn a_cold_first_burst_is_found_and_a_warm_one_is_not() {
        // Arm 0's first burst of every lifetime runs 10% slower; arm 1's does not.
        let mut t = Vec::new();
        let mut block = 0;
        for l in 0..30 {
            for k in 0..3 {
                for arm in 0..2 {
                    let wiggle = 1.0 + 0.002 * ((l * 7 + k * 3 + arm) % 5) as f64;
                    let cold = if arm == 0 && k == 0 { 0.9 } else { 1.0 };
                    t.push(crate::analyze::trial_data::TrialData {
                        block,
                        arm,
                        ok: true,
                        metrics: [("tps".to_string(), 1000.0 * cold * wiggle)].into(),
                        lifetime: Some(l),
                        ..Default::default()
                    });
                }
                block += 1;
            }
        }
        let e = first_burst_effects(&t, 2, "tps", 0.99);
        let cold = e[0].as_ref().unwrap();
        assert!(
            cold.hi.unwrap() < -0.09 && cold.lo.unwrap() > -0.12,
            "{cold:?}"
        );
        let warm = e[1].as_ref().unwrap();
        assert!(
            warm.lo.unwrap() <= 0.0 && warm.hi.unwrap() >= -0.01,
            "{warm:?}"
        );
    }

    #[test]
    fn an_arm_whose_servers_differ_more_is_found_from_trials() {
        // 400 lifetimes × 4 blocks: arm 1's instances spread with SD 3%, arm 0's not at all;
        // both under shared drift and common block noise, and 2% burst noise each.
        let mut rng = crate::rng::XorShift::new(7);
        let mut g = || {
            // Box–Muller from two uniforms.
            let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let (u, v) = (unit().max(1e-12), unit());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let mut t = Vec::new();
        let mut block = 0;
        for l in 0..400 {
            let drift = 0.05 * g();
            let inst = [0.0, 0.03 * g()];
            for _ in 0..4 {
                let common = 0.04 * g();
                for (arm, own) in inst.iter().enumerate() {
                    let v: f64 = drift + common + own + 0.02 * g();
                    t.push(crate::analyze::trial_data::TrialData {
                        block,
                        arm,
                        ok: true,
                        metrics: [("tps".to_string(), 100.0 * v.exp())].into(),
                        lifetime: Some(l),
                        ..Default::default()
                    });
                }
                block += 1;
            }
        }
        let s = arm_instance_sds(&t, 2, "tps");
        assert!(s[0].unwrap() < 0.01, "{s:?}");
        assert!((s[1].unwrap() - 0.03).abs() < 0.006, "{s:?}");
    }
}
