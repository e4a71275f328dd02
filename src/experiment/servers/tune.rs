//! The warm design's choices from measurements of its own: the burst length (the load's fixed
//! cost), duet or alternating (one arm's CPU use alone against the machine), and the blocks per
//! lifetime (the run's own variance components, Kalibera–Jones).

use super::{Components, FIXED_SHARE, Instant, PILOT_LIFETIMES, Sizing, Spread, Warm};
use crate::analyze::lifetimes::design::{self, AtLength, Budget};
use crate::model::run::{BurstChoice, LengthPilot, MeasuredLength};

/// The CPUs a solo burst kept busy: its own (load and server) and everything else's meanwhile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Demand {
    pub own: f64,
    pub others: f64,
}

impl Warm {
    /// The first arm's load run once against its server, alone, outside the measurements:
    /// whether it succeeded, its wall time beyond `less` seconds, and the CPUs it used — the
    /// load's and the server tree's own (rusage, the tree's CPU time) beside what everything
    /// else on the machine kept busy meanwhile (/proc/stat's busy time less ours).
    fn run_alone(&self, less: f64) -> (bool, f64, Option<Demand>) {
        let s = &self.servers[0];
        let mut spec = self.base.clone();
        // The load's files (pgbench's log) go to a directory of their own, removed after.
        let files = crate::workload::server::dirs::TrialDir::new(spec.user).ok();
        let at = files
            .as_ref()
            .map_or("/nonexistent".into(), |d| d.path().display().to_string());
        spec.argv = s
            .load
            .iter()
            .map(|w| w.replace("$HUGELAB_TRIAL_DIR", &at))
            .collect();
        spec.env.push(("HUGELAB_TRIAL_DIR".into(), at.clone()));
        let server = self.running[0].as_ref().map(|r| r.pid());
        let server_before = server.map_or(0, crate::collect::server::tree_cpu_ns);
        let load_before = crate::collect::noise::children_cpu_ns();
        let machine = || crate::probe::noise::read(&crate::probe::Root::system()).ok();
        let machine_before = machine();
        let t = Instant::now();
        let ok = crate::workload::child::command(&spec)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|st| st.success());
        let wall = t.elapsed().as_secs_f64();
        let machine_after = machine();
        let used = crate::collect::noise::children_cpu_ns().saturating_sub(load_before)
            + server
                .map_or(0, crate::collect::server::tree_cpu_ns)
                .saturating_sub(server_before);
        let own = (used as f64 / 1e9) / wall.max(1e-3);
        // USER_HZ ticks: 100 a second.
        let busy = machine_before.zip(machine_after).map(|(b, a)| {
            a.cpu.busy().saturating_sub(b.cpu.busy()) as f64 / 100.0 / wall.max(1e-3)
        });
        let others = busy.map_or(0.0, |b| (b - own).max(0.0));
        (ok, (wall - less).max(0.0), Some(Demand { own, others }))
    }

    /// The burst length: the shortest whole number of seconds whose fixed cost (client start,
    /// connections: the load's wall time beyond a 1 s burst, measured once against the first
    /// arm's server) is under 5% of it, at most 10 s. Short bursts buy lifetimes, and lifetimes
    /// are the units: on the development VM a PostgreSQL A/A reached ±1.5% in 5 minutes with
    /// 1 s bursts (45 ms of fixed cost, 56 lifetimes) against ±2.3% with 3 s bursts (23).
    /// Returns the CPUs the calibrating burst kept busy, its own and the rest of the machine's.
    pub(super) fn calibrate_burst(&mut self) -> Option<Demand> {
        self.set_burst(1);
        let (ok, fixed, cpus) = self.run_alone(1.0);
        let secs = if ok {
            ((fixed / FIXED_SHARE).ceil() as u64).clamp(1, 10)
        } else {
            1
        };
        self.set_burst(secs);
        // A burst of `secs` and the load's fixed cost: one arm's burst alone.
        self.solo_s = ok.then_some(secs as f64 + fixed);
        self.burst_choice = ok.then_some(BurstChoice {
            secs,
            fixed_s: fixed,
            by_fixed_cost: secs,
            pilot: None,
            one_length: None,
        });
        self.pending.push(if ok {
            format!(
                "burst {secs} s: the load's fixed cost (start, connections) was {:.0} ms beyond a 1 s burst, {:.1}% of {secs} s (--burst to choose)",
                fixed * 1e3,
                fixed / secs as f64 * 100.0
            )
        } else {
            "burst 1 s: the calibrating burst failed, so the shortest was kept (--burst to choose)".into()
        });
        cpus.filter(|_| ok)
    }

    /// Duet unless every arm's burst at once would oversubscribe what the machine has left: one
    /// arm's load alone (the calibrating burst, else one run of the load) kept `own` CPUs busy
    /// while everything else kept `others` busy; the room is the CPUs less `others`. With
    /// every arm at once beyond it, a closed-loop load gets its share of the CPUs, which pulls
    /// the arms' throughputs together — the contrast would shrink towards zero. Then the run
    /// alternates, and says so; without a measurement (the solo burst failed) it alternates
    /// too, since room was not shown. A duet asked for with `--schedule` (or `--replicas`
    /// above 1) is kept. Returns what one arm's burst alone used, where measured (the
    /// replicas are chosen from it).
    pub(super) fn check_headroom(&mut self, alone: Option<Demand>) -> Option<Demand> {
        let kept = self.schedule_asked || self.replicas_asked.is_some_and(|n| n > 1);
        if !self.duet || (kept && self.replicas_asked.is_some()) {
            return alone;
        }
        let alone = alone.or_else(|| {
            let (ok, wall, demand) = self.run_alone(0.0);
            self.solo_s = self.solo_s.or(ok.then_some(wall));
            demand.filter(|_| ok)
        });
        if kept {
            return alone;
        }
        let cpus = crate::probe::cpu::allowed_cpus().len().max(1) as f64;
        let n = self.servers.len();
        let why = match alone {
            None => Some(
                "the burst that measures the machine's room failed, so no room for every arm at once was shown; --schedule duet to run them at once anyway".to_string(),
            ),
            Some(Demand { own, others }) => {
                let together = own * n as f64;
                let room = (cpus - others).max(0.0);
                (together > 0.9 * room).then(|| {
                    format!(
                        "duet would oversubscribe the machine: one arm's burst alone kept {own:.1} of {cpus:.0} CPUs busy while the rest of the machine kept {others:.1} busy, so {n} at once would need {together:.1} of the {room:.1} left, and on a saturated machine each arm's throughput is its share of the CPUs (the contrast shrinks towards zero); --schedule duet to run them at once anyway"
                    )
                })
            }
        };
        if let Some(why) = why {
            self.duet = false;
            self.pending.push(format!("alternating: {why}"));
            self.schedule_change = Some(why);
        }
        alone
    }

    /// After the first lifetime's set-up (burst, schedule, replicas known): whether the pilot
    /// runs its bursts at two lengths, so that the noise chooses the burst. It does where the
    /// burst was calibrated, the lifetimes are sized (no `--lifetime-blocks`) and `--max-time`
    /// leaves room for a longer burst (`design::one_length`). Said either way.
    pub(super) fn plan_lengths(&mut self) {
        let Some(choice) = self.burst_choice.as_mut() else {
            return;
        };
        let first = choice.secs;
        let one_after_another = if self.duet { 1 } else { self.arms } as f64;
        let room = match self.max_time {
            _ if self.given => Err("--lifetime-blocks given".to_string()),
            None => Err("no --max-time: a run bounded by its blocks keeps the burst".into()),
            Some(m) => design::pilot_room(
                first,
                (choice.fixed_s, self.restart_s),
                one_after_another,
                m.as_secs_f64(),
            ),
        };
        match room {
            Err(why) => {
                // Said where --max-time might have let the noise choose; recorded always.
                if self.max_time.is_some() && !self.given {
                    self.pending.push(format!(
                        "burst {first} s for the whole run, one length: {why}"
                    ));
                }
                choice.one_length = Some(why);
            }
            Ok(second) => {
                self.lengths = Some([first, second]);
                self.pending.push(format!(
                    "the pilot's {PILOT_LIFETIMES} lifetimes run bursts of {first} s and {second} s ({first}, {second}, {second}, {first} s in each): the noise at both lengths chooses the burst for the rest of the run"
                ));
            }
        }
    }

    /// During the pilot at two lengths: the burst for the lifetime's next block.
    pub(super) fn pilot_length(&mut self) {
        if let Some([a, b]) = self.lengths {
            let l = [a, b, b, a][self.blocks_in.min(3)];
            if self.burst != Some(l) {
                self.set_burst(l);
            }
        }
    }

    /// Whether the pilot ran two burst lengths (its blocks are then told apart by length).
    pub(super) fn two_lengths(&self) -> bool {
        self.burst_choice
            .as_ref()
            .is_some_and(|c| c.pilot.is_some())
    }

    /// A block's mean time, over the blocks at the burst in use once the pilot ran two.
    fn block_cost(&self, secs: Option<u64>) -> (f64, usize) {
        let at: Vec<f64> = self
            .block_s
            .iter()
            .zip(&self.block_len)
            .filter(|(_, l)| secs.is_none_or(|s| **l == s))
            .map(|(t, _)| *t)
            .collect();
        match (
            at.len(),
            self.burst_choice.as_ref().and_then(|c| c.pilot.as_ref()),
        ) {
            // A length chosen but not yet run: its cost on the line the choice drew.
            (0, Some(p)) => (p.block_s, 0),
            (n, _) => (at.iter().sum::<f64>() / n.max(1) as f64, n),
        }
    }

    /// What is left of the run: its blocks (with the restarts the fewest lifetimes need) and
    /// `--max-time`, whichever ends first, and the restarts done (the unit is the restart:
    /// every replica's lifetime that began with it).
    fn budget(&self) -> Budget {
        let done = self.lifetimes;
        Budget {
            time_s: self
                .max_time
                .map(|m| m.saturating_sub(self.started.elapsed()).as_secs_f64()),
            blocks: self.blocks_total.saturating_sub(self.block_s.len()) as f64,
            restarts_needed: (crate::analyze::lifetimes::MIN_LIFETIMES - done as f64).max(1.0),
            done,
        }
    }

    /// At the pilot's end, where it ran two lengths: the burst for the rest of the run, from
    /// the spread at each and a block's cost at each (`analyze::lifetimes::design`). Said with
    /// its reason and kept in the run's record. Returns the spread the choice sized with (at
    /// its length), which the first sizing then uses, so that the two say one forecast.
    pub(super) fn choose_burst(
        &mut self,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
    ) -> Option<Spread> {
        let [a, b] = self.lengths.take()?;
        let at = |secs: u64| {
            let sp = spread(Some(secs))?;
            let (block_s, _) = self.block_cost(Some(secs));
            Some(AtLength {
                secs,
                components: sp.components,
                block_s,
            })
        };
        let stop_at = self.plan.target_halfwidth.map(f64::ln_1p);
        let chosen = at(a).zip(at(b)).and_then(|(first, other)| {
            let c = design::choose(
                &first,
                &other,
                self.restart_s,
                (self.budget(), stop_at),
                self.rule,
                self.replicas,
            )?;
            Some((first, other, c))
        });
        let Some((first, other, c)) = chosen else {
            self.set_burst(a);
            if let Some(ch) = self.burst_choice.as_mut() {
                ch.one_length = Some(
                    "the pilot's two lengths gave no spread to compare (too few blocks kept)"
                        .into(),
                );
            }
            self.pending.push(format!(
                "burst {a} s kept: the pilot's bursts at {a} s and {b} s gave no spread to compare"
            ));
            return None;
        };
        self.set_burst(c.secs);
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
        self.pending.push(burst_note(&c, &pilot, a));
        if let Some(ch) = self.burst_choice.as_mut() {
            ch.secs = c.secs;
            ch.pilot = Some(pilot);
        }
        Some(Spread {
            components: c.components,
            rank_ratio: None,
            means: Vec::new(),
        })
    }

    /// Whether half the run has passed: of `--max-time` when given, else of its blocks.
    fn past_half_way(&self) -> bool {
        match self.max_time {
            Some(m) => self.started.elapsed() * 2 >= m,
            None => self.block_s.len() * 2 >= self.blocks_total,
        }
    }

    /// Blocks per lifetime from the run's own spread so far (Kalibera–Jones, in
    /// `analyze::lifetimes::size`), re-estimated at every lifetime boundary after the pilot;
    /// said when the number changes, with the half-width it predicts at the run's end.
    pub(super) fn size_lifetimes(&mut self, spread: Option<Spread>) {
        let (b, _) = self.block_cost(self.burst.filter(|_| self.two_lengths()));
        let Some(Spread {
            components: c,
            rank_ratio,
            means,
        }) = spread.filter(|_| !self.given && b > 0.0)
        else {
            return;
        };
        // The model's half-width is the normal interval's; the answer's is the signed-rank one,
        // narrower where a few lifetimes lie far off: the forecast is of the answer's. A
        // confidence sequence is over the lifetime means themselves: no signed-rank ratio.
        let rank_ratio = rank_ratio.filter(|_| !self.rule.is_sequence());
        let scaled = crate::analyze::lifetimes::scaled(&c, rank_ratio.unwrap_or(1.0));
        let remaining = Some(self.budget().at(b, self.restart_s));
        // With --target-halfwidth the run ends where its interval first reaches the target.
        let stop_at = self.plan.target_halfwidth.map(f64::ln_1p);
        let s = crate::analyze::lifetimes::size_replicated(
            &scaled,
            self.restart_s,
            b,
            (remaining, stop_at),
            self.rule,
            self.replicas,
        );
        let need = crate::analyze::lifetimes::time_replicated(
            &scaled,
            s.blocks,
            (self.restart_s, b),
            self.rule,
            self.target,
            self.replicas,
        );
        let forecast = forecast_of(&s, &c, rank_ratio, self.rule.is_sequence());
        let note = sizing_note(&s, &c, forecast, (self.restart_s, b), (self.target, need));
        if let Some(mut f) = forecast {
            self.forecasts.pilot.get_or_insert(f);
            if self.past_half_way() && self.forecasts.half.is_none() {
                // The out-of-sample check's forecast, with the range the first half's own
                // lifetimes allow the end (resampled: their far ones at their measured rate).
                f.resampled = s.lifetimes.and_then(|l| {
                    crate::analyze::lifetimes::resampled_range(
                        &means,
                        l.round() as usize,
                        (self.plan.first_step_level(), &self.plan.design),
                        0.90,
                    )
                    .map(|(lo, hi)| (lo.exp_m1(), hi.exp_m1()))
                });
                self.forecasts.half = Some(f);
            }
            self.forecasts.last = Some(f);
        }
        self.forecast = s.predicted.map(|h| {
            format!(
                "forecast ±{:.1}% at the end (±{} needs about {})",
                h.exp_m1() * 100.0,
                crate::render::words::two_significant(self.target * 100.0).trim_start_matches('+'),
                crate::units::fmt_elapsed(need)
            )
        });
        // The first sizing is said at once; later ones as one line at the end of the run.
        match self.per_lifetime {
            None => self.pending.push(note),
            Some(k) => {
                self.resized += usize::from(k != s.blocks);
                self.range = (self.range.0.min(s.blocks), self.range.1.max(s.blocks));
                self.last = Some(note);
            }
        }
        self.per_lifetime = Some(s.blocks);
    }
}

/// The sizing's forecast for the run's record: the half-width at the end and, from fewer than
/// [`FEW_DF`] degrees of freedom, the range the spread allows (90%), as fractions.
///
/// [`FEW_DF`]: crate::analyze::lifetimes::FEW_DF
fn forecast_of(
    s: &Sizing,
    c: &Components,
    rank_ratio: Option<f64>,
    sequence: bool,
) -> Option<crate::model::run::Forecast> {
    use crate::analyze::lifetimes::{FEW_DF, spread_range};
    let h = s.predicted?;
    let range = spread_range(c, s.blocks, 0.90);
    Some(crate::model::run::Forecast {
        lifetimes: c.lifetimes,
        blocks: c.blocks,
        per_lifetime: s.blocks,
        half_width: h.exp_m1(),
        range: range
            .filter(|(_, df)| *df < FEW_DF as f64)
            .map(|((lo, hi), _)| ((h * lo).exp_m1(), (h * hi).exp_m1())),
        df: range.map_or(0, |(_, df)| df.round() as usize),
        rank_ratio,
        sequence,
        resampled: None,
    })
}

/// Lifetimes sized, in words: the choice, its inputs, what it predicts.
fn sizing_note(
    s: &Sizing,
    c: &Components,
    forecast: Option<crate::model::run::Forecast>,
    (restart_s, block_s): (f64, f64),
    (target, need_s): (f64, f64),
) -> String {
    let pct = |x: f64| x * 100.0;
    format!(
        "lifetimes of {} blocks{}: sized from this run's {} lifetimes (Kalibera–Jones: SD of the ratio between bursts {:.1}%, between lifetimes {:.1}%{}; restarting and warming every server {restart_s:.1} s, a block {block_s:.1} s){}; ±{} would need about {} of running (--lifetime-blocks to choose)",
        s.blocks,
        s.bound.map_or(String::new(), |b| format!(" ({b})")),
        c.lifetimes,
        pct(c.within_sd),
        pct(c.between_sd),
        match c.shared_sd {
            Some(sh) => format!(
                ", shared by a restart's {} replicas {:.1}% (the restart is the unit)",
                c.replicas,
                pct(sh)
            ),
            None => String::new(),
        },
        match (forecast, s.lifetimes) {
            (Some(f), Some(l)) => format!(
                "; predicted half-width at the run's end ±{:.1}%{} over about {l:.0} {} ({})",
                pct(f.half_width),
                f.range.map_or(String::new(), |(lo, hi)| format!(
                    " (±{:.1}–{:.1}% as {} degrees of freedom allow a normal spread, 90%)",
                    pct(lo),
                    pct(hi),
                    f.df
                )),
                if c.replicas > 1 {
                    "restarts"
                } else {
                    "lifetimes"
                },
                match f.rank_ratio {
                    _ if f.sequence =>
                        "the confidence sequence the answer prints, over lifetime means".into(),
                    Some(r) => format!(
                        "normal approximation × {r:.2}: the signed-rank interval over the {} {} means so far against the normal one",
                        c.lifetimes / c.replicas.max(1),
                        if c.replicas > 1 {
                            "restart"
                        } else {
                            "lifetime"
                        },
                    ),
                    None => "normal approximation".into(),
                }
            ),
            _ => String::new(),
        },
        crate::render::words::two_significant(pct(target)).trim_start_matches('+'),
        crate::units::fmt_elapsed(need_s)
    )
}

/// The burst chosen at the pilot's end, in words: the spreads measured, the split, the
/// forecasts at the length chosen and at the one it was weighed against.
fn burst_note(c: &design::Choice, p: &LengthPilot, first: u64) -> String {
    let pct = |x: f64| x * 100.0;
    let [m0, m1] = [p.lengths[0], p.lengths[1]];
    let (other, h, k) = p.against;
    format!(
        "burst {} s {}: the pilot's SD of the ratio between bursts was {:.1}% at {} s and {:.1}% at {} s (a block {:.1} s and {:.1} s), so {:.1}% of it does not average within a burst and {:.1}% at 1 s does; forecast at the run's end ±{:.1}% with {} s bursts in lifetimes of {} blocks, against ±{:.1}% with {other} s in lifetimes of {k}{} (--burst to choose)",
        c.secs,
        if c.secs == first { "kept" } else { "chosen" },
        pct(m0.within_sd),
        m0.secs,
        pct(m1.within_sd),
        m1.secs,
        m0.block_s,
        m1.block_s,
        pct(p.floor_sd),
        pct(p.averaging_sd),
        pct(p.chosen.0),
        c.secs,
        p.chosen.1,
        pct(h),
        if c.secs == first {
            format!(
                ", the best other length: none forecast {:.0}% narrower",
                (1.0 - design::GAIN) * 100.0
            )
        } else {
            " (the fixed cost's length)".to_string()
        }
    )
}
