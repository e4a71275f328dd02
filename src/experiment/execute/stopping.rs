//! When the blocks stop: a sequential design's look, and `--max-time` kept — a block that
//! cannot end before the deadline is not started, and a run whose time cannot hold the blocks
//! an interval needs says so after its first block and stops there, with the time it would
//! need, rather than spending the time on a run that ends INCONCLUSIVE for want of blocks (a
//! load of a fixed count keeps its count, so its block lasts as long as the count takes).

use super::{Effects, measured};
use crate::analyze::experiment;
use crate::analyze::sequential::ConfidenceSequence;
use crate::analyze::verdict::{self, Design, Verdict};
use crate::model::run::Plan;
use crate::store::TrialRow;
use crate::units::fmt_elapsed;
use std::time::{Duration, Instant};

/// Why the run may stop at this look, on the trials the answer will use: every contrast of
/// the primary metric settled by the plan's design, or, with `--target-halfwidth`, every
/// contrast's interval (the design's: a confidence sequence) that narrow.
pub(super) fn stop_now(plan: &Plan, trials: &[TrialRow]) -> Option<String> {
    let primary = plan.primary();
    let data = super::measured(plan, trials);
    let d: Vec<Vec<f64>> = (0..plan.arms.len())
        .filter(|i| *i != plan.baseline)
        .map(|i| experiment::log_ratios(&data, i, plan.baseline, &primary.name))
        .collect();
    let cs = verdict::verdicts_only(
        &d,
        plan.effect,
        plan.confidence,
        primary.better,
        &plan.design,
    );
    match plan.target_halfwidth {
        Some(t) => cs
            .iter()
            .all(|c| {
                c.as_ref()
                    .and_then(|c| Some((c.percent.hi? - c.percent.lo?) / 2.0))
                    .is_some_and(|h| h <= t * 100.0)
            })
            .then(|| format!("every contrast within ±{}%", t * 100.0)),
        None => cs
            .iter()
            .all(|c| {
                c.as_ref()
                    .is_some_and(|c| c.verdict != Verdict::Inconclusive)
            })
            .then(|| "every contrast settled".to_string()),
    }
}

/// Whether the design looks after `blocks` complete blocks.
pub(super) fn is_look(design: &Design, blocks: usize) -> bool {
    match design {
        Design::Sequential { .. } => blocks >= ConfidenceSequence::MIN_BLOCKS,
        // The looks of GroupSequential::new, without computing its boundaries every block.
        Design::GroupSequential { looks, max_blocks } => {
            (1..=*looks).any(|i| (max_blocks * i).div_ceil(*looks).max(2) == blocks)
        }
        _ => false,
    }
}

/// The blocks' durations so far in a phase.
#[derive(Debug, Default)]
pub(super) struct Took {
    n: usize,
    sum: f64,
}

impl Took {
    pub(super) fn add(&mut self, secs: f64) {
        self.n += 1;
        self.sum += secs;
    }

    /// Whether the phase stops before its next block: the deadline `at` is reached, or the
    /// next block, as long as the mean block so far, would end past it (why, in words, to
    /// append to the stop reason). None while it fits.
    pub(super) fn past(&self, elapsed: Duration, at: Duration) -> Option<String> {
        if elapsed >= at {
            return Some(String::new());
        }
        let mean = (self.n > 0).then(|| self.sum / self.n as f64)?;
        (elapsed.as_secs_f64() + mean > at.as_secs_f64()).then(|| {
            format!(
                " (the next block, about {} like the blocks before it, would have ended past it)",
                fmt_elapsed(mean)
            )
        })
    }
}

/// What a block of the run costs, as known so far: the first block measured, or, before it,
/// estimated from the load run alone while the servers were set up (warm design); and the
/// seconds a restart of every server takes (warm design, measured; 0 without servers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Pace {
    /// The first block took this long.
    First { block_s: f64 },
    /// Before any block: one arm's load alone took `solo_s`, and a block runs `arms` of them
    /// one after another (1 under duet).
    Solo { solo_s: f64, arms: usize },
}

/// For a fixed design bounded by `--max-time` (`max`, this phase's share ending at `at`,
/// `elapsed` now), at `pace` with every server's restart taking `restart_s`: the refusal, in words, when the time left cannot hold the blocks
/// the first Holm step's signed-rank interval needs, every later lifetime paying a restart of
/// every server again. Without servers a later block is taken at two thirds of the first (which
/// paid for cold caches). None when it can, or when the plan's own block count is too few
/// anyway (said before the run).
pub(super) fn no_interval(
    plan: &Plan,
    (pace, restart_s): (Pace, f64),
    at: Duration,
    elapsed: Duration,
    max: Duration,
) -> Option<String> {
    if !matches!(plan.design, Design::Fixed) {
        return None;
    }
    let level = plan.first_step_level();
    let units = crate::stats::min_pairs_for_interval(level);
    let warm = plan.server.as_ref().and_then(|s| s.warm.as_ref());
    let per_unit = warm.map_or(1, |w| w.lifetime_blocks.unwrap_or(2).max(1));
    let need = units * per_unit;
    // What the estimate rests on, said with it: one block's time, and how later ones are taken.
    let (block_s, restart_s, done, said, basis) = match pace {
        Pace::First { block_s } => (
            if warm.is_some() {
                block_s
            } else {
                block_s * 2.0 / 3.0
            },
            if warm.is_some() { restart_s } else { 0.0 },
            1,
            format!("the first block took {}", fmt_elapsed(block_s)),
            if warm.is_some() {
                "taking every later block at the first's time"
            } else {
                "taking later blocks at two thirds of the first (which paid for cold caches)"
            },
        ),
        Pace::Solo { solo_s, arms } => (
            solo_s * arms as f64,
            restart_s,
            0,
            format!(
                "one arm's load alone took {}, so a block of {arms} one after another about {}",
                fmt_elapsed(solo_s),
                fmt_elapsed(solo_s * arms as f64)
            ),
            "taking every block at that",
        ),
    };
    if need > plan.blocks || block_s <= 0.0 {
        return None;
    }
    let left = at.saturating_sub(elapsed).as_secs_f64();
    let (most, need_s) = fits((units, per_unit), (block_s, restart_s), left, done)?;
    Some(format!(
        "--max-time {} is too short for an interval, by estimate: {said}{}; {basis}, it holds at most about {most} blocks, and an interval at {} needs {}{need} blocks, about {} at that pace; give --max-time {}m or more, or make a block shorter (a load of a fixed count, such as redis-benchmark -n or pgbench -t, keeps its count: give a smaller one, or bound the load by time with {{burst}})",
        fmt_elapsed(max.as_secs_f64()),
        match restart_s > 0.0 {
            true => format!(
                ", and starting and warming every server {} (again every lifetime)",
                fmt_elapsed(restart_s)
            ),
            false => String::new(),
        },
        crate::model::verdict::fmt_level(level),
        match warm {
            Some(_) => format!("{units} server lifetimes of {per_unit} blocks, "),
            None => String::new(),
        },
        fmt_elapsed(need_s),
        (need_s * 1.1 / 60.0).ceil() as u64,
    ))
}

/// Whether `units` lifetimes of `per_unit` blocks of `block_s`, each lifetime after a restart
/// of `restart_s`, fit the `left` seconds, with the first lifetime's restart and `done` blocks
/// behind: None when they do, else the blocks that fit in all and the seconds the interval
/// needs from the run's first block.
fn fits(
    (units, per_unit): (usize, usize),
    (block_s, restart_s): (f64, f64),
    left: f64,
    done: usize,
) -> Option<(usize, f64)> {
    let lifetime_s = restart_s + per_unit as f64 * block_s;
    let need_s = units as f64 * lifetime_s - restart_s;
    if left >= need_s - done as f64 * block_s {
        return None;
    }
    Some((
        done + (left / (lifetime_s / per_unit as f64)).floor() as usize,
        need_s,
    ))
}

impl super::Course<'_> {
    /// Whether a run bounded by `--max-time` (`deadline`: this phase's end and the whole limit)
    /// stops here because, at `pace`, its time cannot hold an interval; said and recorded as a
    /// refusal when it does.
    pub(super) fn refused(
        &mut self,
        pace: Pace,
        deadline: Option<(std::time::Duration, std::time::Duration)>,
        started: Instant,
        ctx: &mut Effects,
    ) -> bool {
        let Some((at, max)) = deadline else {
            return false;
        };
        if self.plan.calibrate {
            return false;
        }
        let restart_s = self.servers.as_ref().map_or(0.0, |s| s.restart_s());
        let Some(why) = no_interval(self.plan, (pace, restart_s), at, started.elapsed(), max)
        else {
            return false;
        };
        let when = match pace {
            Pace::Solo { .. } => "before",
            Pace::First { .. } => "after",
        };
        ctx.progress
            .note(&format!("stopped {when} the first block: {why}"));
        self.x.refused = true;
        self.x.stop_reason = why;
        true
    }
}

/// The primary contrasts' spread over the lifetimes so far (over the blocks whose bursts ran
/// `burst` seconds, where given): their variance components pooled, and how their signed-rank
/// interval compares with the normal one.
pub(super) fn spread(
    plan: &Plan,
    trials: &[TrialRow],
    burst: Option<u64>,
) -> Option<crate::analyze::lifetimes::Spread> {
    let mut data = measured(plan, trials);
    if let Some(secs) = burst {
        let other: std::collections::BTreeSet<i64> = trials
            .iter()
            .filter(|t| t.evidence.burst_s != Some(secs))
            .map(|t| t.block)
            .collect();
        data.retain(|t| !other.contains(&(t.block as i64)));
    }
    let primary = &plan.primary().name;
    let placed: Vec<_> = (0..plan.arms.len())
        .filter(|a| *a != plan.baseline)
        .map(|a| experiment::placed_log_ratios(&data, a, plan.baseline, primary))
        .collect();
    crate::analyze::lifetimes::spread(&placed, plan.confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_block_is_not_started_when_it_would_end_past_the_deadline() {
        let s = Duration::from_secs;
        let mut t = Took::default();
        assert_eq!(t.past(s(5), s(10)), None, "no block yet: nothing to go by");
        assert_eq!(t.past(s(10), s(10)), Some(String::new()), "reached");
        t.add(4.0);
        t.add(2.0);
        assert_eq!(t.past(s(6), s(10)), None, "6 + 3 ≤ 10");
        let why = t.past(s(8), s(10)).unwrap();
        assert!(why.contains("would have ended past it"), "{why}");
    }

    #[test]
    fn the_time_an_interval_needs_counts_every_lifetime_s_restart() {
        // 8 lifetimes of 2 blocks of 5 s, each after a 4 s restart (the first one's behind):
        // 8·14 − 4 = 108 s from the first block on; after it, 103 s more.
        let (most, need) = fits((8, 2), (5.0, 4.0), 60.0, 1).unwrap();
        assert_eq!(need, 108.0);
        assert_eq!(most, 1 + (60.0f64 / 7.0).floor() as usize);
        assert_eq!(fits((8, 2), (5.0, 4.0), 103.0, 1), None);
        assert!(fits((8, 2), (5.0, 4.0), 102.0, 1).is_some());
        // Before the first block, all of it.
        assert_eq!(fits((8, 2), (5.0, 4.0), 108.0, 0), None);
        assert!(fits((8, 2), (5.0, 4.0), 107.0, 0).is_some());
        // The restarts count: 16 blocks of 5 s fit 85 s without them, not with them.
        assert_eq!(fits((8, 2), (5.0, 0.0), 85.0, 0), None);
        assert!(fits((8, 2), (5.0, 4.0), 85.0, 0).is_some());
    }
}
