//! The burst length from the machine's noise. A longer burst averages the noise that changes
//! faster than it (the load's own jitter) and not the noise that changes slower (another
//! tenant, the host's scheduling); it costs time the run could spend on more bursts and more
//! lifetimes. The pilot measures the spread of the ratio between bursts at two lengths; the
//! line through them splits it into a floor no burst length averages and a part that falls as
//! 1/length, and Kalibera–Jones's sizing is run at every whole length from 1 s to
//! [`LONGEST`], with a block's cost at that length on the line through the two measured, so
//! that the burst and the blocks per lifetime are chosen together for the narrowest interval
//! the time left holds.

use super::{Components, MIN_LIFETIMES, Rule, Sizing, size_replicated, time_replicated};

/// The longest burst chosen, seconds.
pub const LONGEST: u64 = 10;

/// The first length (from the load's fixed cost) is left only for a forecast this much
/// narrower (or a time this much shorter): the pilot's spreads come from few blocks.
pub const GAIN: f64 = 0.95;

/// The pilot's second length beside the `first` (the fixed cost's): 3× it, or a third of it
/// past 3 s.
pub fn second_length(first: u64) -> u64 {
    if first <= 3 {
        first * 3
    } else {
        first.div_ceil(3)
    }
}

/// Lifetimes of 2 blocks run before the run's own spread sizes them (the pilot): the
/// between-lifetime variance needs several lifetimes to be estimated at all.
pub const PILOT_LIFETIMES: usize = 3;

/// A pilot's burst lengths: where a run of `time_s` has room for a second length beside
/// `first` (the fixed cost's), that length ([`second_length`]); else why not. A block is
/// `one_after_another` bursts in a row (the arms alternating; 1 in a duet), each paying
/// `fixed_s` beyond its length, and a lifetime starts with a restart of `restart_s`. Where
/// even a lifetime of two blocks at the longer length leaves fewer than [`MIN_LIFETIMES`] in
/// the run, no longer burst can be chosen (the lifetimes are the units) and a second length
/// would only cost time. Where it leaves room, the second length's extra seconds are under a
/// tenth of the run: the pilot's [`PILOT_LIFETIMES`] lifetimes hold a tenth as many bursts as
/// 30 lifetimes at the longer length, and each adds less than a burst at it.
pub fn pilot_room(
    first: u64,
    (fixed_s, restart_s): (f64, f64),
    one_after_another: f64,
    time_s: f64,
) -> Result<u64, String> {
    let second = second_length(first);
    let longer = first.max(second) as f64 + fixed_s;
    let lifetime_s = restart_s + 2.0 * one_after_another * longer;
    if time_s < MIN_LIFETIMES * lifetime_s {
        return Err(format!(
            "a lifetime of two blocks at the longer length takes about {}, so --max-time {} holds fewer than the {MIN_LIFETIMES:.0} lifetimes a run plans for: no longer burst could be chosen",
            crate::units::fmt_elapsed(lifetime_s),
            crate::units::fmt_elapsed(time_s)
        ));
    }
    Ok(second)
}

/// The spread of the ratio between bursts as a function of the burst length L (seconds):
/// var(L) = floor² + averaging²/L (log scale; `averaging` is its part at 1 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstNoise {
    pub floor_sd: f64,
    pub averaging_sd: f64,
}

impl BurstNoise {
    /// The line through two lengths' variances against 1/L. Where the longer burst was the
    /// noisier (the slope below 0) nothing was seen to average: the floor is their mean; where
    /// the line crosses below 0 the floor is 0 and the line goes through the origin (least
    /// squares on both).
    pub fn fit((la, sa): (f64, f64), (lb, sb): (f64, f64)) -> BurstNoise {
        let (xa, xb, va, vb) = (1.0 / la, 1.0 / lb, sa * sa, sb * sb);
        let slope = if (xa - xb).abs() > f64::EPSILON {
            (va - vb) / (xa - xb)
        } else {
            0.0
        };
        let floor = va - slope * xa;
        let (floor, slope) = if slope <= 0.0 {
            ((va + vb) / 2.0, 0.0)
        } else if floor < 0.0 {
            (0.0, (va * xa + vb * xb) / (xa * xa + xb * xb))
        } else {
            (floor, slope)
        };
        BurstNoise {
            floor_sd: floor.sqrt(),
            averaging_sd: slope.sqrt(),
        }
    }

    /// The SD of the ratio between bursts of `secs`.
    pub fn sd_at(&self, secs: f64) -> f64 {
        (self.floor_sd.powi(2) + self.averaging_sd.powi(2) / secs.max(1e-3)).sqrt()
    }
}

/// One burst length as the pilot measured it: the variance components of the blocks run at
/// it and a block's mean time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtLength {
    pub secs: u64,
    pub components: Components,
    pub block_s: f64,
}

/// What is left of a run: its `--max-time` (seconds, where given), its blocks, the restarts
/// the fewest lifetimes still need, and the restarts done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub time_s: Option<f64>,
    pub blocks: f64,
    pub restarts_needed: f64,
    pub done: usize,
}

impl Budget {
    /// The seconds left at a block cost of `block_s` (the blocks or the time, whichever ends
    /// first), and the restarts done: the sizing's `remaining`.
    pub fn at(&self, block_s: f64, restart_s: f64) -> (f64, usize) {
        let by_blocks = self.blocks * block_s + self.restarts_needed * restart_s;
        (
            self.time_s.map_or(by_blocks, |t| t.min(by_blocks)),
            self.done,
        )
    }
}

/// The burst chosen, with the sizing at it and at the first length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub secs: u64,
    pub sizing: Sizing,
    /// The length it was weighed against and the sizing there: the first length when another
    /// was chosen, else the best other length.
    pub against: (u64, Sizing),
    pub noise: BurstNoise,
    /// The spread between lifetimes beyond their bursts, both lengths pooled (log scale).
    pub between_sd: f64,
    /// The components the choice sized with (at its length), for the forecast's record.
    pub components: Components,
    /// A block's cost at the length chosen, seconds.
    pub block_s: f64,
}

/// The burst length and blocks per lifetime that give the narrowest interval at the run's end
/// within `budget` (with `stop_at`, the shortest time to that half-width), from the pilot at
/// `first` (the fixed cost's length) and `other`. Every whole length from 1 s to [`LONGEST`]
/// is sized as the run sizes lifetimes, its blocks at its own cost, among those that leave the
/// run as many lifetimes as the sizing plans for; the first length is kept unless another is
/// narrower by [`GAIN`]. None where no other length leaves that many.
pub fn choose(
    first: &AtLength,
    other: &AtLength,
    restart_s: f64,
    (budget, stop_at): (Budget, Option<f64>),
    rule: Rule,
    replicas: usize,
) -> Option<Choice> {
    let (la, lb) = (first.secs as f64, other.secs as f64);
    let noise = BurstNoise::fit(
        (la, first.components.within_sd),
        (lb, other.components.within_sd),
    );
    let mean_sq = |a: f64, b: f64| ((a * a + b * b) / 2.0).sqrt();
    let between_sd = mean_sq(first.components.between_sd, other.components.between_sd);
    let shared_sd = first
        .components
        .shared_sd
        .zip(other.components.shared_sd)
        .map(|(a, b)| mean_sq(a, b));
    // A block's cost on the line through the two measured (never falling with length).
    let per_s = ((other.block_s - first.block_s) / (lb - la)).max(0.0);
    let block_at = |l: f64| (first.block_s + per_s * (l - la)).max(0.05);
    let at = |secs: u64| {
        let c = Components {
            within_sd: noise.sd_at(secs as f64),
            between_sd,
            shared_sd,
            ..first.components
        };
        let b = block_at(secs as f64);
        let remaining = Some(budget.at(b, restart_s));
        let s = size_replicated(&c, restart_s, b, (remaining, stop_at), rule, replicas);
        // Narrower at the end, or (with a target) sooner there.
        let cost = match stop_at {
            Some(h) => Some(time_replicated(
                &c,
                s.blocks,
                (restart_s, b),
                rule,
                h.exp_m1(),
                replicas,
            )),
            None => s.predicted,
        };
        (secs, s, c, b, cost)
    };
    let kept = at(first.secs);
    // The interval's units are lifetimes: a length that leaves fewer than the sizing's fewest
    // (or than the first length's, where even it cannot hold them) is not weighed — the
    // normal model's half-width ignores how wide a signed-rank interval over few units is.
    let fewest = kept
        .1
        .lifetimes
        .map_or(MIN_LIFETIMES, |l| l.min(MIN_LIFETIMES));
    let by_cost = |x: &(u64, Sizing, Components, f64, Option<f64>),
                   y: &(u64, Sizing, Components, f64, Option<f64>)| {
        x.4.unwrap_or(f64::MAX).total_cmp(&y.4.unwrap_or(f64::MAX))
    };
    let best = (1..=LONGEST)
        .filter(|l| *l != first.secs)
        .map(at)
        .filter(|x| x.4.is_some_and(f64::is_finite))
        .filter(|x| x.1.lifetimes.is_some_and(|l| l >= fewest - 0.5))
        .min_by(by_cost)?;
    let better = matches!((best.4, kept.4), (Some(b), Some(k)) if b < GAIN * k);
    let (chosen, other) = if better { (best, kept) } else { (kept, best) };
    let (secs, sizing, components, block_s, _) = chosen;
    Some(Choice {
        secs,
        sizing,
        against: (other.0, other.1),
        noise,
        between_sd,
        components,
        block_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_length_is_measured_only_where_thirty_lifetimes_at_it_fit() {
        // Two arms alternating, 1 s bursts with 0.1 s to start, 0.2 s to restart: a lifetime
        // of two blocks at 3 s takes 0.2 + 2·2·3.1 = 12.6 s, 30 of them 378 s.
        let room = |time_s| pilot_room(1, (0.1, 0.2), 2.0, time_s);
        assert_eq!(room(1800.0), Ok(3));
        assert_eq!(room(378.5), Ok(3));
        let why = room(300.0).unwrap_err();
        assert!(
            why.contains("takes about 13 s") && why.contains("fewer than the 30 lifetimes"),
            "{why}"
        );
        // A duet's block is one burst long: half the time per lifetime.
        assert_eq!(pilot_room(1, (0.1, 0.2), 1.0, 300.0), Ok(3));
        // Past 3 s the second length is a third of the first.
        assert_eq!(pilot_room(6, (0.1, 0.2), 2.0, 3600.0), Ok(2));
    }

    fn at(secs: u64, within: f64, between: f64, block_s: f64) -> AtLength {
        AtLength {
            secs,
            components: Components {
                lifetimes: 3,
                blocks: 6,
                within_sd: within,
                between_sd: between,
                replicas: 1,
                shared_sd: None,
            },
            block_s,
        }
    }

    fn budget(time_s: f64) -> Budget {
        Budget {
            time_s: Some(time_s),
            blocks: 1e6,
            restarts_needed: 27.0,
            done: 3,
        }
    }

    #[test]
    fn a_run_bounded_by_its_blocks_pays_for_a_longer_burst_in_time_not_blocks() {
        let b = Budget {
            time_s: None,
            blocks: 10.0,
            restarts_needed: 2.0,
            done: 3,
        };
        assert_eq!(b.at(3.0, 1.0), (32.0, 3));
        assert_eq!(
            Budget {
                time_s: Some(20.0),
                ..b
            }
            .at(3.0, 1.0),
            (20.0, 3)
        );
    }

    #[test]
    fn the_noise_splits_into_a_floor_and_a_part_that_averages() {
        // 6% at 1 s and 6%/√3 at 3 s: all of it averages.
        let n = BurstNoise::fit((1.0, 0.06), (3.0, 0.06 / 3f64.sqrt()));
        assert!(
            n.floor_sd < 1e-6 && (n.averaging_sd - 0.06).abs() < 1e-9,
            "{n:?}"
        );
        // The same at both: none of it does.
        let n = BurstNoise::fit((1.0, 0.05), (3.0, 0.05));
        assert!((n.floor_sd - 0.05).abs() < 1e-9 && n.averaging_sd == 0.0);
        // Noisier when longer: taken as a floor of their mean.
        let n = BurstNoise::fit((1.0, 0.04), (3.0, 0.05));
        assert!((n.floor_sd - (0.00205f64).sqrt()).abs() < 1e-9 && n.averaging_sd == 0.0);
        // Below the origin: through it.
        let n = BurstNoise::fit((1.0, 0.06), (3.0, 0.01));
        assert_eq!(n.floor_sd, 0.0);
        assert!(n.averaging_sd > 0.0 && (n.sd_at(1.0) - n.averaging_sd).abs() < 1e-12);
        let n = BurstNoise::fit((1.0, 0.05), (2.0, 0.04));
        assert!((n.sd_at(1.0) - 0.05).abs() < 1e-9 && (n.sd_at(2.0) - 0.04).abs() < 1e-9);
    }

    #[test]
    fn noise_that_averages_with_a_costly_burst_start_takes_a_longer_burst() {
        // A block of 2 arms costs 2·(L + 1.5 s): a second and a half of every burst is start.
        let (a, b) = (
            at(1, 0.08, 0.005, 5.0),
            at(3, 0.08 / 3f64.sqrt(), 0.005, 9.0),
        );
        let rule = Rule::Fixed { z: 2.576 };
        let c = choose(&a, &b, 2.0, (budget(1800.0), None), rule, 1).unwrap();
        assert!(c.secs > 1, "{c:?}");
        assert_eq!(c.against.0, 1);
        assert!(c.sizing.predicted.unwrap() < GAIN * c.against.1.predicted.unwrap());
        // Noise that no length averages: the shortest, here the first.
        let (a, b) = (at(1, 0.08, 0.005, 5.0), at(3, 0.08, 0.005, 9.0));
        let c = choose(&a, &b, 2.0, (budget(1800.0), None), rule, 1).unwrap();
        assert_eq!(c.secs, 1);
        assert!(c.against.0 > 1 && c.against.1.predicted > c.sizing.predicted);
    }

    #[test]
    fn the_first_length_is_kept_without_a_clear_gain() {
        // Cheap starts: a longer burst saves little even where the noise averages.
        let (a, b) = (at(1, 0.05, 0.01, 2.1), at(3, 0.05 / 3f64.sqrt(), 0.01, 6.1));
        let rule = Rule::Fixed { z: 2.576 };
        let c = choose(&a, &b, 1.0, (budget(300.0), None), rule, 1).unwrap();
        assert_eq!(c.secs, 1, "{c:?}");
    }
}
