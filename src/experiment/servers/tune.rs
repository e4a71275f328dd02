//! The warm design's choices from measurements of its own: the burst length (the load's fixed
//! cost), duet or alternating (one arm's CPU use alone against the machine), and the blocks per
//! lifetime (the run's own variance components, Kalibera–Jones).

use super::{Components, FIXED_SHARE, Instant, PILOT_LIFETIMES, Sizing, Spread, Warm};
use crate::analyze::lifetimes::design::{self, Budget};
use crate::analyze::lifetimes::tuning::{Chosen, Sized};
use crate::model::run::{BurstChoice, LengthPilot};

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
        self.tuning.choice = ok.then_some(BurstChoice {
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
    /// runs its bursts at two lengths, so that the noise chooses the burst
    /// (`Tuning::plan_lengths`). Said either way.
    pub(super) fn plan_lengths(&mut self) {
        let Some(choice) = self.tuning.choice.clone() else {
            return;
        };
        let first = choice.secs;
        let one_after_another = if self.duet { 1 } else { self.arms } as f64;
        self.tuning.replicas = self.replicas;
        let time_s = self.max_time.map(|m| m.as_secs_f64());
        match self
            .tuning
            .plan_lengths((first, choice.fixed_s), one_after_another, time_s)
        {
            Err(why) => {
                // Said where --max-time might have let the noise choose; recorded always.
                if self.max_time.is_some() && !self.tuning.given {
                    self.pending.push(format!(
                        "burst {first} s for the whole run, one length: {why}"
                    ));
                }
                if let Some(c) = self.tuning.choice.as_mut() {
                    c.one_length = Some(why);
                }
            }
            Ok(second) => {
                self.pending.push(format!(
                    "the pilot's {PILOT_LIFETIMES} lifetimes run bursts of {first} s and {second} s ({first}, {second}, {second}, {first} s in each): the noise at both lengths chooses the burst for the rest of the run"
                ));
            }
        }
    }

    /// During the pilot at two lengths: the burst for the lifetime's next block.
    pub(super) fn pilot_length(&mut self) {
        if let Some(l) = self.tuning.pilot_length(self.blocks_in)
            && self.burst != Some(l)
        {
            self.set_burst(l);
        }
    }

    /// What is left of the run: its blocks (with the restarts the fewest lifetimes need) and
    /// `--max-time`, whichever ends first, and the restarts done (the unit is the restart:
    /// every replica's lifetime that began with it).
    fn budget(&self) -> Budget {
        self.tuning.budget(
            self.max_time
                .map(|m| m.saturating_sub(self.started.elapsed()).as_secs_f64()),
            self.blocks_total.saturating_sub(self.tuning.block_s.len()) as f64,
            self.lifetimes,
        )
    }

    /// At the pilot's end, where it ran two lengths: the burst for the rest of the run
    /// (`Tuning::choose_burst`), said with its reason and kept in the run's record.
    pub(super) fn choose_burst(
        &mut self,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
    ) -> Option<Chosen> {
        let first = self.tuning.lengths?[0];
        self.tuning.replicas = self.replicas;
        let budget = self.budget();
        let chosen = self.tuning.choose_burst(spread, budget)?;
        match &chosen {
            Chosen::Kept([a, b]) => {
                self.pending.push(format!(
                    "burst {a} s kept: the pilot's bursts at {a} s and {b} s gave no spread to compare"
                ));
                self.set_burst(*a);
            }
            Chosen::Length { choice, pilot, .. } => {
                self.pending.push(burst_note(choice, pilot, first));
                self.set_burst(choice.secs);
            }
        }
        Some(chosen)
    }

    /// Whether half the run has passed: of `--max-time` when given, else of its blocks.
    fn past_half_way(&self) -> bool {
        match self.max_time {
            Some(m) => self.started.elapsed() * 2 >= m,
            None => self.tuning.block_s.len() * 2 >= self.blocks_total,
        }
    }

    /// Blocks per lifetime from the run's own spread so far (`Tuning::size`: Kalibera–Jones,
    /// in `analyze::lifetimes::size`), re-estimated at every lifetime boundary after the pilot;
    /// said when the number changes, with the half-width it predicts at the run's end.
    pub(super) fn size_lifetimes(&mut self, spread: Option<Spread>) {
        self.tuning.replicas = self.replicas;
        let (budget, half) = (self.budget(), self.past_half_way());
        let was = self.tuning.per_lifetime;
        let Some(Sized {
            sizing: s,
            components: c,
            forecast,
            need_s: need,
        }) = self.tuning.size(spread, budget, half, self.target)
        else {
            return;
        };
        let b = self
            .tuning
            .block_cost(self.burst.filter(|_| self.tuning.two_lengths()))
            .0;
        let note = sizing_note(
            &s,
            &c,
            forecast,
            (self.tuning.restart_s, b),
            (self.target, need),
        );
        self.forecast = s.predicted.map(|h| {
            format!(
                "forecast ±{:.1}% at the end (±{} needs about {})",
                h.exp_m1() * 100.0,
                crate::render::words::two_significant(self.target * 100.0).trim_start_matches('+'),
                crate::units::fmt_elapsed(need)
            )
        });
        // The first sizing is said at once; later ones as one line at the end of the run.
        match was {
            None => self.pending.push(note),
            Some(k) => {
                self.resized += usize::from(k != s.blocks);
                self.range = (self.range.0.min(s.blocks), self.range.1.max(s.blocks));
                self.last = Some(note);
            }
        }
    }
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
                    " (±{:.1}–{:.1}% as {} degrees of freedom allow a normal spread, {})",
                    pct(lo),
                    pct(hi),
                    f.df,
                    crate::model::verdict::fmt_level(crate::model::run::RANGE_LEVEL)
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
