//! A warm run's tuning, decided from its own measurements — one author for the run engine
//! (`experiment/servers`) and the simulation study that certifies it: the pilot's burst lengths,
//! the burst chosen at the pilot's end (`design::choose`), the blocks per lifetime sized at every
//! lifetime boundary after it (Kalibera–Jones, `size_replicated`) and the forecasts of the
//! half-width the answer will print. The engine words and applies what it decides; the
//! simulation feeds it simulated blocks. Nothing here reads a clock or the system: the time left
//! and whether half the run has passed are handed in.

use super::design::{self, AtLength, Budget, Choice, PILOT_LIFETIMES};
use super::{Components, MIN_LIFETIMES, Rule, Sizing, Spread};
use crate::model::run::{BurstChoice, Forecast, Forecasts, LengthPilot, MeasuredLength};
use crate::model::verdict::Design;

pub use crate::model::run::RANGE_LEVEL;

/// The central share of the resampled rests the half-way range is read from, so that it holds
/// at [`RANGE_LEVEL`]: a two-stage bootstrap from one half's lifetimes holds less than the
/// share it spans (about 87% at a central 90% in the forecast study), and this wider share is
/// the one the stored study (docs/study/forecast.txt, `scripts/study/forecast.sh`) shows
/// holding the printed level in every fixed-design process it simulates.
pub const RESAMPLED_SHARE: f64 = 0.95;

/// [`RESAMPLED_SHARE`] for a confidence sequence's half-width (`--sequential`), whose spread
/// across runs the resampled rests see less of: the central 95% held it in only 84% of the
/// study's runs, missing on both sides.
pub const RESAMPLED_SHARE_SEQUENCE: f64 = 0.99;

/// What a warm run has decided so far, and the measurements it decides from.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// The interval the answer prints (the first Holm step's, or a confidence sequence's).
    pub rule: Rule,
    /// That interval's level and the design, which the half-way range recomputes.
    pub printed: (f64, Design),
    /// Replicas of every arm's server at once (a restart is then the unit).
    pub replicas: usize,
    /// `--target-halfwidth` (log scale): the run ends where its interval first reaches it.
    pub stop_at: Option<f64>,
    /// Blocks per lifetime, given (`--lifetime-blocks`) or sized; `None` before the pilot ends.
    pub per_lifetime: Option<usize>,
    pub given: bool,
    /// What restarting every server costs, seconds (measured at each restart).
    pub restart_s: f64,
    /// Each block's time and burst length, in order.
    pub block_s: Vec<f64>,
    pub block_len: Vec<u64>,
    /// The burst in use, and the pilot's two lengths while it runs them.
    pub burst: Option<u64>,
    pub lengths: Option<[u64; 2]>,
    /// How the burst was chosen (the run's record).
    pub choice: Option<BurstChoice>,
    pub forecasts: Forecasts,
    /// Whether the half-way forecast draws its range (four hundred resampled rests): always
    /// in a run; the simulation skips it in the runs whose rows do not read it.
    pub range_at_half: bool,
}

/// The burst the pilot's end chose.
#[derive(Debug, Clone)]
pub enum Chosen {
    /// From the spread at both lengths: the choice, what the pilot measured, and the spread the
    /// first sizing then uses (so that both say one forecast).
    Length {
        choice: Box<Choice>,
        pilot: LengthPilot,
        spread: Spread,
    },
    /// The pilot's two lengths gave no spread to compare: the first length is kept.
    Kept([u64; 2]),
}

/// One sizing: the blocks per lifetime and what it predicts.
#[derive(Debug, Clone)]
pub struct Sized {
    pub sizing: Sizing,
    pub components: Components,
    pub forecast: Option<Forecast>,
    /// The running time the target half-width would need at this sizing, seconds.
    pub need_s: f64,
}

impl Tuning {
    pub fn new(rule: Rule, printed: (f64, Design), per_lifetime: Option<usize>) -> Tuning {
        Tuning {
            rule,
            printed,
            replicas: 1,
            stop_at: None,
            per_lifetime,
            given: per_lifetime.is_some(),
            restart_s: 0.0,
            block_s: Vec::new(),
            block_len: Vec::new(),
            burst: None,
            lengths: None,
            choice: None,
            forecasts: Forecasts::default(),
            range_at_half: true,
        }
    }

    /// Blocks in a pilot lifetime: two, or four where it runs two lengths.
    pub fn pilot_blocks(&self) -> usize {
        if self.lengths.is_some() { 4 } else { 2 }
    }

    /// Blocks in the lifetime under way: sized, given, or the pilot's.
    pub fn lifetime_blocks(&self) -> usize {
        self.per_lifetime.unwrap_or(self.pilot_blocks())
    }

    /// Whether the pilot runs its bursts at two lengths, so that the noise chooses the burst:
    /// where the burst was calibrated (`first`, with its fixed cost), the lifetimes are sized
    /// and `--max-time` (`time_s`) leaves room for a longer burst (`design::pilot_room`).
    /// `one_after_another`: the bursts of a block that do not run at once. Returns the second
    /// length, or why there is one length.
    pub fn plan_lengths(
        &mut self,
        (first, fixed_s): (u64, f64),
        one_after_another: f64,
        time_s: Option<f64>,
    ) -> Result<u64, String> {
        let room = match time_s {
            _ if self.given => Err("--lifetime-blocks given".to_string()),
            None => Err("no --max-time: a run bounded by its blocks keeps the burst".into()),
            Some(t) => design::pilot_room(first, (fixed_s, self.restart_s), one_after_another, t),
        };
        if let Ok(second) = room {
            self.lengths = Some([first, second]);
        }
        room
    }

    /// During the pilot at two lengths: the burst of a lifetime's block `k` (from 0): the
    /// first length, the second twice, the first again.
    pub fn pilot_length(&self, k: usize) -> Option<u64> {
        self.lengths.map(|[a, b]| [a, b, b, a][k.min(3)])
    }

    /// Whether the pilot ran two burst lengths (its blocks are then told apart by length).
    pub fn two_lengths(&self) -> bool {
        self.choice.as_ref().is_some_and(|c| c.pilot.is_some())
    }

    /// A block ended: its time and the burst it ran.
    pub fn block(&mut self, secs: f64, len: u64) {
        self.block_s.push(secs);
        self.block_len.push(len);
    }

    /// A block's mean time, over the blocks at `secs` where given; with the count it is of.
    pub fn block_cost(&self, secs: Option<u64>) -> (f64, usize) {
        let at: Vec<f64> = self
            .block_s
            .iter()
            .zip(&self.block_len)
            .filter(|(_, l)| secs.is_none_or(|s| **l == s))
            .map(|(t, _)| *t)
            .collect();
        match (
            at.len(),
            self.choice.as_ref().and_then(|c| c.pilot.as_ref()),
        ) {
            // A length chosen but not yet run: its cost on the line the choice drew.
            (0, Some(p)) => (p.block_s, 0),
            (n, _) => (at.iter().sum::<f64>() / n.max(1) as f64, n),
        }
    }

    /// What is left of the run: `time_s` (of `--max-time`) and `blocks` (the plan's), with the
    /// restarts the fewest lifetimes need; `done` restarts so far.
    pub fn budget(&self, time_s: Option<f64>, blocks: f64, done: usize) -> Budget {
        Budget {
            time_s,
            blocks,
            restarts_needed: (MIN_LIFETIMES - done as f64).max(1.0),
            done,
        }
    }

    /// At the pilot's end, where it ran two lengths: the burst for the rest of the run, from
    /// the spread at each length (`spread`) and a block's cost at each. None where the pilot
    /// ran one length.
    pub fn choose_burst(
        &mut self,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
        budget: Budget,
    ) -> Option<Chosen> {
        let [a, b] = self.lengths.take()?;
        let at = |secs: u64| {
            let sp = spread(Some(secs))?;
            Some(AtLength {
                secs,
                components: sp.components,
                block_s: self.block_cost(Some(secs)).0,
            })
        };
        let chosen = at(a).zip(at(b)).and_then(|(first, other)| {
            let c = design::choose(
                &first,
                &other,
                self.restart_s,
                (budget, self.stop_at),
                self.rule,
                self.replicas,
            )?;
            Some((first, other, c))
        });
        let Some((first, other, c)) = chosen else {
            self.burst = Some(a);
            if let Some(ch) = self.choice.as_mut() {
                ch.one_length = Some(
                    "the pilot's two lengths gave no spread to compare (too few blocks kept)"
                        .into(),
                );
            }
            return Some(Chosen::Kept([a, b]));
        };
        self.burst = Some(c.secs);
        let measured = |m: &AtLength| MeasuredLength {
            secs: m.secs,
            within_sd: m.components.within_sd,
            block_s: m.block_s,
            blocks: self.block_cost(Some(m.secs)).1,
        };
        let pilot = LengthPilot {
            lengths: vec![measured(&first), measured(&other)],
            floor_sd: c.noise.floor_sd,
            averaging_sd: c.noise.averaging_sd,
            between_sd: c.between_sd,
            chosen: (
                c.sizing.predicted.unwrap_or(f64::NAN).exp_m1(),
                c.sizing.blocks,
            ),
            against: (
                c.against.0,
                c.against.1.predicted.unwrap_or(f64::NAN).exp_m1(),
                c.against.1.blocks,
            ),
            block_s: c.block_s,
        };
        if let Some(ch) = self.choice.as_mut() {
            ch.secs = c.secs;
            ch.pilot = Some(pilot.clone());
        }
        Some(Chosen::Length {
            choice: Box::new(c),
            pilot,
            spread: Spread {
                components: c.components,
                rank_ratio: None,
                means: Vec::new(),
            },
        })
    }

    /// The spread the sizing reads at a lifetime boundary: the one the burst choice sized with,
    /// else the blocks at the burst in use once the pilot ran two lengths, else all of them.
    pub fn sizing_spread(
        &self,
        chosen: Option<&Chosen>,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
    ) -> Option<Spread> {
        match chosen {
            Some(Chosen::Length { spread, .. }) => Some(spread.clone()),
            _ => spread(self.burst.filter(|_| self.two_lengths())),
        }
    }

    /// Blocks per lifetime from the run's spread so far (Kalibera–Jones), for the time and
    /// blocks left (`budget`), and the forecast of the half-width the answer will print, kept
    /// after the pilot, at half-way (`past_half_way`: with the range the first half's lifetimes
    /// resampled allow) and at the last sizing. `target`: the half-width sought (a fraction),
    /// whose running time is said. None where the lifetimes are given or nothing is measured.
    pub fn size(
        &mut self,
        spread: Option<Spread>,
        budget: Budget,
        past_half_way: bool,
        target: f64,
    ) -> Option<Sized> {
        let (b, _) = self.block_cost(self.burst.filter(|_| self.two_lengths()));
        let Spread {
            components: c,
            rank_ratio,
            means,
        } = spread.filter(|_| !self.given && b > 0.0)?;
        // The model's half-width is the normal interval's; the answer's is the signed-rank one,
        // narrower where a few lifetimes lie far off: the forecast is of the answer's. A
        // confidence sequence is over the lifetime means themselves: no signed-rank ratio.
        let rank_ratio = rank_ratio.filter(|_| !self.rule.is_sequence());
        let scaled = super::scaled(&c, rank_ratio.unwrap_or(1.0));
        let remaining = Some(budget.at(b, self.restart_s));
        let s = super::size_replicated(
            &scaled,
            self.restart_s,
            b,
            (remaining, self.stop_at),
            self.rule,
            self.replicas,
        );
        #[cfg(test)]
        let s = PLANTED.with(|p| p.get()).map_or(s, |f| f(&s));
        let need_s = super::time_replicated(
            &scaled,
            s.blocks,
            (self.restart_s, b),
            self.rule,
            target,
            self.replicas,
        );
        let forecast = forecast_of(&s, &c, rank_ratio, self.rule.is_sequence());
        if let Some(mut f) = forecast {
            self.forecasts.pilot.get_or_insert(f);
            if past_half_way && self.forecasts.half.is_none() {
                // The out-of-sample check's forecast, with the range the first half's own
                // lifetimes allow the end (resampled: their far ones at their measured rate).
                f.resampled = s.lifetimes.filter(|_| self.range_at_half).and_then(|l| {
                    super::resampled_range(
                        &means,
                        l.round() as usize,
                        (self.printed.0, &self.printed.1),
                        if self.rule.is_sequence() {
                            RESAMPLED_SHARE_SEQUENCE
                        } else {
                            RESAMPLED_SHARE
                        },
                    )
                    .map(|(lo, hi)| (lo.exp_m1(), hi.exp_m1()))
                });
                self.forecasts.half = Some(f);
            }
            self.forecasts.last = Some(f);
        }
        self.per_lifetime = Some(s.blocks);
        Some(Sized {
            sizing: s,
            components: c,
            forecast,
            need_s,
        })
    }
}

/// A sizing in place of the production one.
#[cfg(test)]
pub type Planted = fn(&Sizing) -> Sizing;

#[cfg(test)]
thread_local! {
    /// A sizing planted in place of the production one (in tests only, never in a build), to
    /// show that the simulation's rows run this code: a planted change moves them.
    pub static PLANTED: std::cell::Cell<Option<Planted>> =
        const { std::cell::Cell::new(None) };
}

/// Whether a lifetime boundary after `lifetimes` restarts is past the pilot (the burst choice
/// and the sizing read the spread from then on).
pub fn past_pilot(lifetimes: usize) -> bool {
    lifetimes >= PILOT_LIFETIMES
}

/// The sizing's forecast for the run's record: the half-width at the end and, from fewer than
/// [`super::FEW_DF`] degrees of freedom, the range the spread allows (90%), as fractions.
fn forecast_of(
    s: &Sizing,
    c: &Components,
    rank_ratio: Option<f64>,
    sequence: bool,
) -> Option<Forecast> {
    let h = s.predicted?;
    let range = super::spread_range(c, s.blocks, RANGE_LEVEL);
    Some(Forecast {
        lifetimes: c.lifetimes,
        blocks: c.blocks,
        per_lifetime: s.blocks,
        half_width: h.exp_m1(),
        range: range
            .filter(|(_, df)| *df < super::FEW_DF as f64)
            .map(|((lo, hi), _)| ((h * lo).exp_m1(), (h * hi).exp_m1())),
        df: range.map_or(0, |(_, df)| df.round() as usize),
        rank_ratio,
        sequence,
        resampled: None,
    })
}
