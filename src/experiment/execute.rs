//! A run's trials: blocks in seeded random order, one trial at a time (`trial.rs`) through
//! the injected [`Effects`], each stored as it finishes; stops on the plan's design, failure or
//! Ctrl-C.

use super::Effects;
use super::servers::{PerTrial, ServerSchedule, Warm};
use super::trial::{Beside, Job, ServerSlot, describe_end, trial};

mod duet;
mod progress;
mod stopping;

use crate::analyze::experiment::TrialData;
use crate::analyze::stored::trial_data;
use crate::analyze::verdict::Design;
use crate::backing::condition::{Condition, Held, Prepared};
use crate::control::Guard;
use crate::model::run::Plan;
use crate::store::TrialRow;
use crate::units::Bytes;
use anyhow::Context as _;
use progress::{block_label, estimate_line};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::time::Instant;

/// What `execute` did.
#[derive(Debug, Default)]
pub struct Executed {
    pub trials: Vec<TrialRow>,
    pub blocks_done: usize,
    pub stop_reason: String,
    pub notes: Vec<String>,
    /// Stopped by the user (Ctrl-C) rather than by the plan.
    pub interrupted: bool,
    /// Stopped on a failed trial (without `--keep-going`): the run's status is `failed`.
    pub failed: bool,
    /// `--condition`: each condition's name, description and preparation, as it ran.
    pub conditions: Vec<(String, String, Prepared)>,
    /// Why a planned duet alternated instead (the machine too small for every arm at once).
    pub schedule_change: Option<String>,
    /// Warm design: the servers per arm that ran at once (0: not a warm run).
    pub replicas: usize,
    /// Warm design: the half-widths its lifetime sizing forecast.
    pub forecasts: crate::model::run::Forecasts,
    /// Warm design: how the burst length was chosen.
    pub burst_choice: Option<crate::model::run::BurstChoice>,
    /// Warm-up trials that failed (a non-zero exit, a signal, `--timeout`): not measured, but
    /// counted in the answer.
    pub warmup_failed: usize,
    /// The primary metric came out 0 or negative: no ratio can be taken, so the run stopped at
    /// once (bad input, not a failed trial).
    pub refused: bool,
}

/// The trials so far as the analysis will measure them: a warm service's detected warm-up
/// bursts left out.
fn measured(plan: &Plan, trials: &[TrialRow]) -> Vec<TrialData> {
    let data = trials.iter().map(trial_data).collect();
    let primary = &plan.primary().name;
    crate::analyze::warmup::measured(data, plan.arms.len(), primary, plan.confidence)
}

/// The warm design's system-wide settings, once, for every arm's server at once.
fn warm_settings(
    plan: &Plan,
    ctx: &mut Effects,
    guard: &mut Option<Guard>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let Some(w) = plan.server.as_ref().and_then(|s| s.warm.as_ref()) else {
        return Ok(());
    };
    if w.side_by_side.system.is_empty() {
        return Ok(());
    }
    let g = guard.insert((ctx.guard)()?);
    for (k, v) in &w.side_by_side.system {
        let applied = g.set(*k, v)?;
        if !applied.honoured() {
            notes.push(format!(
                "{k}: asked {v}, the kernel gave {}",
                applied.actual
            ));
        }
    }
    Ok(())
}

/// A run in progress: what `execute` carries from one block to the next.
struct Course<'p> {
    plan: &'p Plan,
    job: Job<'p>,
    guard: Option<Guard>,
    servers: Option<Box<dyn ServerSchedule>>,
    lifetime: Option<usize>,
    flagged_arms: Vec<usize>,
    seq: i64,
    /// The condition held now (`--condition`), and its name.
    held: Option<Held>,
    x: Executed,
}

/// How a block ended.
enum BlockEnd {
    Done,
    /// A trial failed (its block is incomplete) and the run goes on (`--keep-going`).
    Incomplete,
    /// The run stops here.
    Stop,
}

/// Run the experiment through `ctx`, storing each trial as it finishes: under each condition
/// in turn (one phase of `plan.blocks` blocks each; none given: one phase, the machine as found).
pub fn execute(plan: &Plan, ctx: &mut Effects) -> anyhow::Result<Executed> {
    let started = Instant::now();
    let mut c = Course {
        plan,
        job: Job::new(plan)?,
        guard: None,
        servers: None,
        lifetime: None,
        flagged_arms: Vec::new(),
        seq: 0,
        held: None,
        x: Executed {
            stop_reason: format!("{} blocks done", plan.blocks * plan.conditions.len().max(1)),
            ..Default::default()
        },
    };
    warm_settings(plan, ctx, &mut c.guard, &mut c.x.notes)?;
    c.servers = match &plan.server {
        Some(sp) if sp.warm.is_some() => Some(Box::new(Warm::new(plan, &c.job.base_spec)?)),
        Some(_) => Some(Box::new(PerTrial::new(plan, &c.job.base_spec)?)),
        None => None,
    };
    let phases: Vec<Option<&Condition>> = if plan.conditions.is_empty() {
        vec![None]
    } else {
        plan.conditions.iter().map(Some).collect()
    };
    for (phase, condition) in phases.iter().enumerate() {
        if let Some(cond) = condition {
            c.enter(cond, ctx)?;
        }
        if phase == 0 && !(c.first_lifetime(ctx) && c.warm_up(ctx)?) {
            break;
        }
        // Each phase has its share of --max-time.
        let deadline = plan
            .max_time
            .map(|m| (m.mul_f64((phase + 1) as f64 / phases.len() as f64), m));
        if !c.phase(phase, started, deadline, ctx)? {
            break;
        }
        c.held = None; // the condition's memory given back
    }
    c.held = None;
    if let Some(s) = c.servers.as_mut() {
        s.shutdown();
        c.x.notes.extend(s.notes());
        c.x.schedule_change = s.schedule_change().map(String::from);
        c.x.replicas = s.replicas();
        c.x.forecasts = s.forecasts();
        c.x.burst_choice = s.burst_choice();
    }
    drop(c.servers); // every server stopped, every arm's directory removed
    drop(c.guard); // restores every system setting the arms and conditions changed
    Ok(c.x)
}

impl Course<'_> {
    /// Bring the machine into `cond` (its settings through the guard, restored with the rest).
    fn enter(&mut self, cond: &Condition, ctx: &mut Effects) -> anyhow::Result<()> {
        self.held = None;
        let g = match self.guard.as_mut() {
            Some(g) => g,
            None => self.guard.insert((ctx.guard)()?),
        };
        for k in [crate::control::knob::Knob::CompactionProactiveness] {
            if let Some(o) = g.original(&k).map(String::from) {
                g.set(k, &o)?; // a previous condition's value undone
            }
        }
        for (k, v) in cond.settings() {
            g.set(k, &v)?;
        }
        ctx.progress.message(&format!(
            "preparing --condition {}: {}",
            cond.name(),
            cond.describe()
        ));
        let (held, prepared) = Held::prepare(cond, &ctx.root)
            .with_context(|| format!("preparing --condition {}", cond.name()))?;
        let note = format!(
            "condition {}: prepared in {:.1} s{}{}",
            cond.name(),
            prepared.seconds,
            if prepared.held_bytes > 0 {
                format!(", holding {}", Bytes(prepared.held_bytes))
            } else {
                String::new()
            },
            if prepared.cache_bytes > 0 {
                format!(", {} of page cache read", Bytes(prepared.cache_bytes))
            } else {
                String::new()
            },
        );
        if *cond != Condition::Clean {
            ctx.progress.note(&note);
            self.x.notes.push(note);
        }
        self.x
            .conditions
            .push((cond.name(), cond.describe(), prepared));
        self.held = Some(held);
        Ok(())
    }

    /// Before the first block: every server of the first lifetime up. False when one did not
    /// come up (the run stops, nothing measured).
    fn first_lifetime(&mut self, ctx: &mut Effects) -> bool {
        let Some(s) = self.servers.as_mut() else {
            return true;
        };
        match s.before_block(0, &|_| None, ctx.progress) {
            Ok(l) => {
                self.lifetime = l;
                true
            }
            Err((arm, served)) => {
                self.x.failed = true;
                self.x.stop_reason = format!(
                    "the server of arm {} did not come up ({}); nothing was measured",
                    self.plan.arms[arm].name,
                    served.failure.unwrap_or_default()
                );
                false
            }
        }
    }

    /// The condition brought back before a trial, recorded with it.
    fn restore(
        &mut self,
        ctx: &Effects,
    ) -> anyhow::Result<Option<crate::model::evidence::ConditionStamp>> {
        let Some(h) = self.held.as_mut() else {
            return Ok(None);
        };
        let r = h
            .restore(&ctx.root)
            .with_context(|| format!("bringing back --condition {}", h.condition().name()))?;
        Ok(Some(crate::model::evidence::ConditionStamp {
            name: h.condition().name(),
            restored: r,
        }))
    }

    /// One trial of `arm` in `block` (−1: warm-up), under the condition brought back first.
    fn trial(&mut self, arm: usize, block: i64, ctx: &mut Effects) -> anyhow::Result<TrialRow> {
        let condition = self.restore(ctx)?;
        let slot = self.servers.as_deref_mut().map(|s| ServerSlot {
            schedule: s,
            lifetime: self.lifetime,
            replica: 0,
        });
        let beside = Beside {
            condition,
            ..Beside::default()
        };
        trial(
            &self.job,
            arm,
            block,
            ctx,
            &mut self.guard,
            &mut self.x.notes,
            (slot, beside),
        )
    }

    /// The unmeasured runs of each arm. False when the run stops (a failure, Ctrl-C).
    fn warm_up(&mut self, ctx: &mut Effects) -> anyhow::Result<bool> {
        let plan = self.plan;
        if plan.warmup > 0 {
            let n = (plan.warmup * plan.arms.len()) as u64;
            ctx.progress.phase("warm-up", Some(n));
        }
        for w in 0..plan.warmup {
            for arm in 0..plan.arms.len() {
                ctx.progress.message(&format!(
                    "warm-up {}/{} · {}",
                    w + 1,
                    plan.warmup,
                    plan.arms[arm].name
                ));
                let t = self.trial(arm, -1, ctx)?;
                ctx.progress.step("");
                self.x.warmup_failed += usize::from(!t.ok);
                if !t.ok && !plan.keep_going {
                    self.x.failed = true;
                    self.x.stop_reason = format!(
                        "warm-up trial of arm {} failed ({}); nothing was measured; use --keep-going to continue past failures",
                        plan.arms[arm].name,
                        describe_end(&t.evidence)
                    );
                    return Ok(false);
                }
                if self.stopped(ctx, "interrupted (Ctrl-C) during warm-up".into()) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn stopped(&mut self, ctx: &Effects, what: String) -> bool {
        let stop = (ctx.stop)();
        if stop {
            self.x.interrupted = true;
            self.x.stop_reason = what;
        }
        stop
    }

    /// The blocks of one phase (blocks numbered on from the previous phases'). False when the
    /// run stops before its plan is done.
    fn phase(
        &mut self,
        phase: usize,
        started: Instant,
        deadline: Option<(std::time::Duration, std::time::Duration)>,
        ctx: &mut Effects,
    ) -> anyhow::Result<bool> {
        let plan = self.plan;
        // A fixed number of trials has a length (and an ETA); a run that may stop early has not.
        let open_ended = plan.max_time.is_some() || !matches!(plan.design, Design::Fixed);
        let total = (plan.blocks * plan.arms.len()) as u64;
        ctx.progress.phase(
            &match plan.conditions.get(phase) {
                Some(c) => format!("trials · {}", c.name()),
                None => "trials".into(),
            },
            (!open_ended).then_some(total),
        );
        let mut took = stopping::Took::default();
        // Before the first block, where the servers' set-up ran the load alone: whether the
        // time holds an interval at that pace.
        if phase == 0
            && let Some((solo_s, arms)) = self.servers.as_ref().and_then(|s| s.solo())
            && self.refused(
                stopping::Pace::Solo { solo_s, arms },
                deadline,
                started,
                ctx,
            )
        {
            return Ok(false);
        }
        for b in 0..plan.blocks {
            // A block that cannot end before the deadline is not started.
            if let Some((at, max)) = deadline
                && let Some(why) = took.past(started.elapsed(), at)
            {
                if phase + 1 == plan.conditions.len().max(1) {
                    self.x.stop_reason = format!(
                        "{} {} s reached after {}{why}",
                        if plan.calibrate {
                            "--calibrate"
                        } else {
                            "--max-time"
                        },
                        max.as_secs(),
                        progress::blocks_done(self.x.blocks_done, self.replicas())
                    );
                }
                return Ok(true);
            }
            let block = phase * plan.blocks + b;
            let block_started = Instant::now();
            let end = self.block(block, ctx)?;
            if matches!(end, BlockEnd::Stop) {
                return Ok(false);
            }
            self.x.blocks_done += 1;
            let secs = block_started.elapsed().as_secs_f64();
            took.add(secs);
            if let Some(s) = self.servers.as_mut() {
                s.after_block(secs);
            }
            // After the first block: whether the time left holds an interval at all.
            if phase == 0
                && b == 0
                && self.refused(
                    stopping::Pace::First { block_s: secs },
                    deadline,
                    started,
                    ctx,
                )
            {
                return Ok(false);
            }
            if matches!(end, BlockEnd::Done)
                && stopping::is_look(&plan.design, self.x.blocks_done)
                && let Some(why) = stopping::stop_now(plan, &self.x.trials)
            {
                self.x.stop_reason = format!(
                    "{why} after {} ({})",
                    progress::blocks_done(self.x.blocks_done, self.replicas()),
                    crate::render::words::design(
                        &plan.design,
                        plan.arms.len() - 1,
                        plan.confidence
                    )
                );
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Every arm once, in the block's seeded order.
    fn block(&mut self, block: usize, ctx: &mut Effects) -> anyhow::Result<BlockEnd> {
        let plan = self.plan;
        if let Some(end) = self.servers_before(block, ctx)? {
            return Ok(end);
        }
        // Every arm's burst of a block at the same moment (`duet.rs`).
        if self.servers.as_ref().is_some_and(|s| s.duet()) {
            return self.duet_block(block, ctx);
        }
        let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
        let mut end = BlockEnd::Done;
        for arm in block_order(plan.arms.len(), block, plan.seed) {
            let est = progress::with_forecast(
                estimate_line(&names, plan, &self.x.trials),
                self.servers.as_ref().and_then(|s| s.forecast()),
            );
            ctx.progress.message(&format!(
                "{} · {}{est}",
                block_label(plan, block),
                plan.arms[arm].name,
            ));
            let t = self.trial(arm, block as i64, ctx)?;
            ctx.progress.step("");
            if let Some(stop) = self.record(t, &mut end, ctx)? {
                return Ok(stop);
            }
            if self.interrupted_in(block, ctx) {
                return Ok(BlockEnd::Stop);
            }
        }
        Ok(end)
    }

    /// A measured trial stored and kept; its arm FLAGGED live once. Some(Stop) when it failed
    /// and the run does not go on past failures; `end` becomes Incomplete when it failed.
    fn record(
        &mut self,
        mut t: TrialRow,
        end: &mut BlockEnd,
        ctx: &mut Effects,
    ) -> anyhow::Result<Option<BlockEnd>> {
        let plan = self.plan;
        let arm = t.arm_idx as usize;
        t.seq = self.seq;
        self.seq += 1;
        ctx.store.add_trial(ctx.run_id, &t)?;
        if let Some(f) = &t.flagged
            && !self.flagged_arms.contains(&arm)
        {
            // Live, once per arm; the final report counts every flagged trial.
            self.flagged_arms.push(arm);
            ctx.progress
                .note(&format!("FLAGGED {}: {f}", plan.arms[arm].name));
        }
        let failed = !t.ok;
        let primary = plan.primary();
        let not_positive = t
            .metrics
            .get(&primary.name)
            .filter(|v| t.ok && !primary.context && **v <= 0.0)
            .copied();
        self.x.trials.push(t);
        if let Some(v) = not_positive {
            self.x.refused = true;
            self.x.stop_reason = format!(
                "the primary metric {} was {v} in a trial of arm {}: arms are compared by the ratio of a positive metric, and no ratio can be taken of {v}; give a metric that is positive in every arm (a duration, a rate, a count + 1), or make it a secondary metric after one that is",
                primary.name, plan.arms[arm].name
            );
            return Ok(Some(BlockEnd::Stop));
        }
        if failed {
            *end = BlockEnd::Incomplete;
            if !plan.keep_going {
                let last = self.x.trials.last().expect("just pushed");
                self.x.failed = true;
                self.x.stop_reason = format!(
                    "trial of arm {} failed ({}); use --keep-going to continue past failures",
                    plan.arms[arm].name,
                    describe_end(&last.evidence),
                );
                return Ok(Some(BlockEnd::Stop));
            }
        }
        Ok(None)
    }

    /// Whether Ctrl-C came during `block` (its trials in flight finished and were kept).
    fn interrupted_in(&mut self, block: usize, ctx: &Effects) -> bool {
        let done = self.x.blocks_done;
        self.stopped(
            ctx,
            format!(
                "interrupted (Ctrl-C) in block {}; the trial in flight finished and was kept; {done} complete block{} of the {} planned analysed",
                block + 1,
                if done == 1 { "" } else { "s" },
                self.plan.blocks
            ),
        )
    }

    /// The servers' schedule before a block (a new lifetime may start). Some(end) when a server
    /// did not come up: its failed trial is stored.
    fn servers_before(
        &mut self,
        block: usize,
        ctx: &mut Effects,
    ) -> anyhow::Result<Option<BlockEnd>> {
        if self.servers.is_none() {
            return Ok(None);
        }
        let (plan, trials) = (self.plan, &self.x.trials);
        let s = self.servers.as_mut().expect("checked");
        match s.before_block(
            block,
            &|burst| stopping::spread(plan, trials, burst),
            ctx.progress,
        ) {
            Ok(l) => self.lifetime = l,
            Err((arm, served)) => {
                let mut t = super::trial::server_failed(arm, block as i64, served);
                t.seq = self.seq;
                self.seq += 1;
                ctx.store.add_trial(ctx.run_id, &t)?;
                let why = describe_end(&t.evidence);
                self.x.trials.push(t);
                if !self.plan.keep_going {
                    self.x.failed = true;
                    self.x.stop_reason = format!(
                        "the server of arm {} did not come up for lifetime {} ({why}); every server was stopped",
                        self.plan.arms[arm].name,
                        self.lifetime.map_or(1, |l| l + 2)
                    );
                    return Ok(Some(BlockEnd::Stop));
                }
                return Ok(Some(BlockEnd::Incomplete));
            }
        }
        for n in s.notes() {
            ctx.progress.note(&n);
            self.x.notes.push(n);
        }
        Ok(None)
    }
}

/// The order of trials: each block is every arm once, shuffled with the seed.
pub fn block_order(arms: usize, block: usize, seed: u64) -> Vec<usize> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(
        seed ^ (block as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    let mut o: Vec<usize> = (0..arms).collect();
    o.shuffle(&mut rng);
    o
}
