//! Where a service trial's server comes from — the one seam between the two designs:
//!
//! * [`PerTrial`] (restart design): a fresh server started for every trial under its arm and
//!   stopped after it;
//! * [`Warm`]: every arm's server up at once in its own directory and port, warmed, each block
//!   one load burst per arm (all at once under the duet schedule, `execute/duet.rs`, else one
//!   after another in random order); every server restarted (all stopped at once, then
//!   all started and warmed at once, spawned in random order) when a lifetime is over, so
//!   blocks are nested in lifetimes.
//!
//! Both give the same trial evidence (the server read during its load, on the same schedule
//! for every arm) to the same analysis; `execute.rs` drives either through
//! [`ServerSchedule`].

use super::service::{self, Running, Served};
use crate::analyze::lifetimes::tuning::Tuning;
use crate::analyze::lifetimes::{Components, Sizing, Spread};

mod arms;
mod replicas;
mod tune;
use crate::backing::arm::Arm;
use crate::backing::services::{Slot, fill};
use crate::collect::server::LoadView;
use crate::model::run::Plan;
use crate::model::run::ServerPlan;
use crate::render::progress::Observer;
use crate::workload::child::TrialSpec;
use crate::workload::server::dirs::ArmDirs;
use arms::arm_servers;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::time::{Duration, Instant};

use crate::analyze::lifetimes::design::PILOT_LIFETIMES;

/// The largest share of a burst its fixed cost (client start, connections) may take.
const FIXED_SHARE: f64 = 0.05;

/// One arm's server as this run starts it: the plan and arm with its placeholders filled.
#[derive(Clone)]
pub(super) struct ArmServer {
    pub plan: ServerPlan,
    pub arm: Arm,
    /// The load for this arm's server (placeholders filled; `{burst}` once it is known).
    pub load: Vec<String>,
    slot: Slot,
    /// Its server gets PR_SET_THP_DISABLE in place of a THP mode of `madvise` (checked per
    /// trial: a server with MADV_HUGEPAGE regions is FLAGGED).
    stand_in: bool,
}

impl ArmServer {
    /// `s` with this arm's placeholders filled ({port}, {host}, {dir}, {burst}).
    pub(super) fn fill(&self, s: &str) -> String {
        fill(s, &self.slot)
    }

    /// The burst length, seconds, once known (warm design).
    pub(super) fn burst(&self) -> Option<u64> {
        self.slot.burst
    }

    fn fill_all(&mut self, template_load: &[String]) {
        let f = |s: &str| fill(s, &self.slot);
        self.load = template_load.iter().map(|w| f(w)).collect();
    }
}

/// Which server a trial uses: its arm's, in one of the replicas (0 without replicas).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Seat {
    pub replica: usize,
    pub arm: usize,
}

/// The seam: how a run's trials get their servers.
pub(super) trait ServerSchedule {
    /// Before block `block`: (warm) restart every server when its lifetime is over, sizing
    /// the next lifetimes from `spread` (the run's variance components, computed only at a
    /// lifetime boundary; over the blocks of one burst length, where given); the lifetime the
    /// block runs in (None: restart design).
    fn before_block(
        &mut self,
        block: usize,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
        progress: &mut dyn Observer,
    ) -> Result<Option<usize>, (usize, Served)>;
    /// The server for a trial at `seat` (started now under the restart design); its pid.
    fn acquire(&mut self, seat: Seat) -> Result<i32, Served>;
    /// After the load, with what was read of the server while it ran.
    fn release(&mut self, seat: Seat, view: LoadView) -> Served;
    /// The server at `seat`: its load command and its adjusted arm.
    fn arm(&self, seat: Seat) -> &ArmServer;
    /// A block finished in `secs`.
    fn after_block(&mut self, secs: f64);
    /// Stop every server.
    fn shutdown(&mut self);
    /// What the schedule chose (burst, lifetime length), once each.
    fn notes(&mut self) -> Vec<String>;
    /// Whether a block's bursts run at once (duet).
    fn duet(&self) -> bool {
        false
    }
    /// Why the run alternates although duet was planned (the machine too small), once known.
    fn schedule_change(&self) -> Option<&str> {
        None
    }
    /// Servers per arm running at once (each block then holds this many paired bursts): known
    /// from the first lifetime on.
    fn replicas(&self) -> usize {
        1
    }
    /// The half-width the run's end is forecast to reach at the noise measured so far (warm
    /// design, after the pilot), in words for the progress line.
    fn forecast(&self) -> Option<&str> {
        None
    }
    /// The forecasts made, for the run's record (warm design, sized lifetimes).
    fn forecasts(&self) -> crate::model::run::Forecasts {
        Default::default()
    }
    /// How the burst length was chosen (warm design with a `{burst}` it chose).
    fn burst_choice(&self) -> Option<crate::model::run::BurstChoice> {
        None
    }
    /// Seconds the last start of every arm's server (stop, start, warm) took (warm design).
    fn restart_s(&self) -> f64 {
        0.0
    }
    /// Before the first block (warm design): one arm's load alone against its server, in
    /// seconds, as measured while the servers were set up, and the bursts a block runs one
    /// after another (every arm's when alternating, 1 under duet). None where not measured.
    fn solo(&self) -> Option<(f64, usize)> {
        None
    }
}

/// The restart design: a fresh server per trial.
pub(super) struct PerTrial {
    servers: Vec<ArmServer>,
    base: TrialSpec,
    running: Option<Running>,
    _dirs: Option<ArmDirs>,
}

impl PerTrial {
    pub(super) fn new(plan: &Plan, base: &TrialSpec) -> anyhow::Result<PerTrial> {
        let (servers, dirs) = arm_servers(plan, base, 0)?;
        Ok(PerTrial {
            servers,
            base: base.clone(),
            running: None,
            _dirs: dirs,
        })
    }
}

impl ServerSchedule for PerTrial {
    fn before_block(
        &mut self,
        _: usize,
        _: &dyn Fn(Option<u64>) -> Option<Spread>,
        _: &mut dyn Observer,
    ) -> Result<Option<usize>, (usize, Served)> {
        Ok(None)
    }

    fn acquire(&mut self, seat: Seat) -> Result<i32, Served> {
        let s = &self.servers[seat.arm];
        let mut r = service::start(&s.plan, &s.arm, &self.base)?;
        r.mark();
        let pid = r.pid();
        if s.plan.hot {
            r.hot_refused = crate::collect::hot::clear_tree(pid);
        }
        self.running = Some(r);
        Ok(pid)
    }

    fn release(&mut self, seat: Seat, view: LoadView) -> Served {
        let s = &self.servers[seat.arm];
        let r = self.running.take().expect("acquired before released");
        service::finish(r, &s.plan, &s.arm, view)
    }

    fn arm(&self, seat: Seat) -> &ArmServer {
        &self.servers[seat.arm]
    }

    fn after_block(&mut self, _: f64) {}

    fn shutdown(&mut self) {
        if let Some(r) = self.running.take() {
            let grace = self.servers[0].plan.stop_grace;
            r.stop(grace);
        }
    }

    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// The warm design: every arm's server up at once (in each replica), restarted every lifetime.
pub(super) struct Warm {
    /// Every replica's servers, replica by replica: seat `r·arms + a`.
    servers: Vec<ArmServer>,
    arms: usize,
    /// Replicas running (1 until the first lifetime chose), and `--replicas`.
    replicas: usize,
    replicas_asked: Option<usize>,
    /// Why the replicas of an arm cannot run at once (a path they would share).
    replicas_shared: Option<String>,
    plan: Plan,
    base: TrialSpec,
    template_load: Vec<String>,
    running: Vec<Option<Running>>,
    /// Lifetimes started so far.
    lifetimes: usize,
    blocks_in: usize,
    since: Instant,
    /// What the run decides from its own measurements (the pilot's lengths, the burst, the
    /// blocks per lifetime, the forecasts): `analyze::lifetimes::tuning`, which the simulation
    /// study drives too.
    tuning: Tuning,
    /// Every arm's burst at once (duet), whether `--schedule` asked for it, and why the run
    /// alternates instead when it found the machine too small.
    duet: bool,
    schedule_asked: bool,
    schedule_change: Option<String>,
    /// Re-sizings that changed the number, the numbers chosen, the last one in words.
    resized: usize,
    range: (usize, usize),
    last: Option<String>,
    forecast: Option<String>,
    /// The sizing's inputs: the run's start and `--max-time`.
    started: Instant,
    max_time: Option<Duration>,
    /// Blocks the plan holds in all (every condition's).
    blocks_total: usize,
    /// The half-width the run is after (`--target-halfwidth`, else δ), a fraction.
    target: f64,
    lifetime_max: Duration,
    /// One arm's load alone against its server (seconds), where measured at the first lifetime.
    solo_s: Option<f64>,
    bursts: bool,
    /// The burst the servers' loads are filled with (the tuning's, once applied).
    burst: Option<u64>,
    rng: rand::rngs::SmallRng,
    pending: Vec<String>,
    _dirs: Vec<ArmDirs>,
}

impl Warm {
    pub(super) fn new(plan: &Plan, base: &TrialSpec) -> anyhow::Result<Warm> {
        let (servers, dirs) = arm_servers(plan, base, 0)?;
        let w = plan
            .server
            .as_ref()
            .and_then(|s| s.warm.clone())
            .expect("a warm plan");
        let n = servers.len();
        let mut me = Warm {
            servers,
            arms: n,
            replicas: 1,
            replicas_asked: w.replicas,
            replicas_shared: w.replicas_shared.clone(),
            plan: plan.clone(),
            base: base.clone(),
            template_load: plan.command.clone(),
            running: (0..n).map(|_| None).collect(),
            lifetimes: 0,
            blocks_in: 0,
            since: Instant::now(),
            tuning: {
                // The forecast is of the interval printed: with several contrasts the widest
                // is the first Holm step's, at 1 − α/m; a confidence sequence under
                // --sequential and --target-halfwidth.
                let rule =
                    crate::analyze::lifetimes::Rule::of(&plan.design, plan.first_step_level());
                let mut c = Tuning::new(
                    rule,
                    (plan.first_step_level(), plan.design.clone()),
                    w.lifetime_blocks,
                );
                c.stop_at = plan.target_halfwidth.map(f64::ln_1p);
                c
            },
            duet: w.schedule == crate::model::run::BurstSchedule::Duet,
            schedule_asked: w.schedule_asked,
            schedule_change: None,
            resized: 0,
            range: (usize::MAX, 0),
            last: None,
            forecast: None,
            started: Instant::now(),
            max_time: plan.max_time,
            blocks_total: plan.blocks * plan.conditions.len().max(1),
            target: plan.target_halfwidth.unwrap_or(plan.effect),
            lifetime_max: w.lifetime_max,
            solo_s: None,
            bursts: w.bursts,
            burst: w.burst.map(|b| b.as_secs().max(1)),
            rng: rand::rngs::SmallRng::seed_from_u64(plan.seed ^ 0x5eed_11fe),
            pending: Vec::new(),
            _dirs: dirs.into_iter().collect(),
        };
        if let Some(b) = me.burst {
            me.set_burst(b);
        }
        Ok(me)
    }

    fn set_burst(&mut self, secs: u64) {
        self.burst = Some(secs);
        self.tuning.burst = Some(secs);
        for s in &mut self.servers {
            s.slot.burst = Some(secs);
            s.fill_all(&self.template_load);
        }
    }

    /// Stop every server that is up, all at once (each waits for its own exit on a thread of
    /// its own), the signals sent in random order.
    fn stop_all(&mut self) {
        let mut order: Vec<usize> = (0..self.running.len()).collect();
        order.shuffle(&mut self.rng);
        let servers = &self.servers;
        let running = &mut self.running;
        std::thread::scope(|sc| {
            for i in order {
                if let Some(r) = running[i].take() {
                    let grace = servers[i].plan.stop_grace;
                    sc.spawn(move || r.stop(grace));
                }
            }
        });
    }

    /// Start and warm every server that is not up at once: each is spawned (in random order),
    /// waited for and warmed on a thread of its own, so the ready waits and the warm-ups
    /// overlap. One that fails stops the others; its arm is returned.
    fn start_all(&mut self) -> Result<(), (usize, Served)> {
        let mut order: Vec<usize> = (0..self.servers.len())
            .filter(|i| self.running[*i].is_none())
            .collect();
        order.shuffle(&mut self.rng);
        let (servers, base) = (&self.servers, &self.base);
        let started: Vec<(usize, Result<Running, Served>)> = std::thread::scope(|sc| {
            let threads: Vec<_> = order
                .iter()
                .map(|&i| {
                    let s = &servers[i];
                    (i, sc.spawn(move || service::start(&s.plan, &s.arm, base)))
                })
                .collect();
            threads
                .into_iter()
                .map(|(i, t)| (i, t.join().expect("a server's start does not panic")))
                .collect()
        });
        let mut failed = None;
        for (i, r) in started {
            match r {
                Ok(r) => self.running[i] = Some(r),
                Err(served) => {
                    failed.get_or_insert((i, served));
                }
            }
        }
        match failed {
            Some((seat, served)) => {
                self.stop_all();
                Err((seat % self.arms, served))
            }
            None => Ok(()),
        }
    }

    fn seat(&self, seat: Seat) -> usize {
        seat.replica * self.arms + seat.arm
    }
}

impl ServerSchedule for Warm {
    fn before_block(
        &mut self,
        _: usize,
        spread: &dyn Fn(Option<u64>) -> Option<Spread>,
        progress: &mut dyn Observer,
    ) -> Result<Option<usize>, (usize, Served)> {
        let up = self.running.iter().all(Option::is_some);
        let due = self.blocks_in >= self.tuning.lifetime_blocks()
            || self.since.elapsed() >= self.lifetime_max;
        if up && !due {
            self.pilot_length();
            return Ok(Some(self.lifetimes - 1));
        }
        if crate::analyze::lifetimes::tuning::past_pilot(self.lifetimes) {
            // Once the pilot ran two lengths, the sizing reads the blocks of the one chosen.
            let chosen = self.choose_burst(spread);
            let sp = self.tuning.sizing_spread(chosen.as_ref(), spread);
            self.size_lifetimes(sp);
        }
        progress.message(&format!(
            "lifetime {}: starting and warming every arm's server",
            self.lifetimes + 1
        ));
        let t = Instant::now();
        self.stop_all();
        self.start_all()?;
        self.tuning.restart_s = t.elapsed().as_secs_f64();
        if self.lifetimes == 0 {
            let alone = match self.bursts && self.burst.is_none() {
                true => self.calibrate_burst(),
                false => None,
            };
            let room = self.check_headroom(alone);
            self.start_replicas(room)?;
            self.plan_lengths();
        }
        for r in self.running.iter_mut().flatten() {
            r.mark();
        }
        self.lifetimes += 1;
        self.blocks_in = 0;
        self.pilot_length();
        self.since = Instant::now();
        Ok(Some(self.lifetimes - 1))
    }

    fn acquire(&mut self, seat: Seat) -> Result<i32, Served> {
        let i = self.seat(seat);
        let hot = self.servers[i].plan.hot;
        match self.running[i].as_mut() {
            Some(r) => {
                r.mark();
                if hot {
                    r.hot_refused = crate::collect::hot::clear_tree(r.pid());
                }
                Ok(r.pid())
            }
            None => Err(not_up(
                "the server is not up (it failed earlier in this lifetime)",
            )),
        }
    }

    fn release(&mut self, seat: Seat, view: LoadView) -> Served {
        let i = self.seat(seat);
        let s = &self.servers[i];
        let Some(r) = self.running[i].as_mut() else {
            // A duet's other arm's server failed first, and every server was stopped.
            return not_up(
                "the server was stopped when another arm's server failed during the same block",
            );
        };
        let mut served = service::observe(r, &s.plan, &s.arm, view);
        if s.stand_in
            && served.flag.is_none()
            && let Some(b) = Some(served.evidence.memory.madvised).filter(|b| *b > 0)
        {
            // THP `madvise` was stood in for by PR_SET_THP_DISABLE, which also refuses what the
            // server asked for with MADV_HUGEPAGE: not the same setting for this server.
            served.flag = Some(format!(
                "its server asked for THP on {} (MADV_HUGEPAGE), which THP madvise would give and the side-by-side stand-in (PR_SET_THP_DISABLE) refuses; measure this arm with --design restart",
                crate::units::Bytes(b)
            ));
        }
        if served.failure.is_some() {
            // It died: stop the rest; the next block (with --keep-going) starts a new lifetime.
            self.running[i] = None;
            self.stop_all();
        }
        served
    }

    fn arm(&self, seat: Seat) -> &ArmServer {
        &self.servers[self.seat(seat)]
    }

    fn after_block(&mut self, secs: f64) {
        self.blocks_in += 1;
        self.tuning.block(secs, self.burst.unwrap_or(0));
    }

    fn shutdown(&mut self) {
        self.stop_all();
        if let Some(last) = self.last.take().filter(|_| self.resized > 0) {
            let (lo, hi) = self.range;
            self.pending.push(format!(
                "lifetimes re-sized {} times as the run went ({lo}–{hi} blocks); the last: {last}",
                self.resized
            ));
        }
    }

    fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending)
    }

    fn duet(&self) -> bool {
        self.duet
    }

    fn schedule_change(&self) -> Option<&str> {
        self.schedule_change.as_deref()
    }

    fn replicas(&self) -> usize {
        self.replicas
    }

    fn forecast(&self) -> Option<&str> {
        self.forecast.as_deref()
    }

    fn forecasts(&self) -> crate::model::run::Forecasts {
        self.tuning.forecasts
    }

    fn restart_s(&self) -> f64 {
        self.tuning.restart_s
    }

    fn burst_choice(&self) -> Option<crate::model::run::BurstChoice> {
        self.tuning.choice.clone()
    }

    fn solo(&self) -> Option<(f64, usize)> {
        let arms = if self.duet { 1 } else { self.arms };
        self.solo_s.map(|s| (s, arms))
    }
}

/// A trial's server that is not running, and why.
fn not_up(why: &str) -> Served {
    Served {
        ready_s: None,
        cpu_ns: 0,
        failure: Some(why.into()),
        flag: None,
        backing: None,
        evidence: Default::default(),
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        self.stop_all();
    }
}
