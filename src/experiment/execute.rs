//! A run's trials: blocks in seeded random order, one trial at a time (`trial.rs`) through
//! the injected [`Effects`], each stored as it finishes; stops on the plan's design, failure or
//! Ctrl-C.

use super::Effects;
use super::servers::{PerTrial, ServerSchedule, Warm};
use super::trial::{Job, ServerSlot, describe_end, trial};
use crate::analyze::experiment::{self, TrialData};
use crate::analyze::sequential::ConfidenceSequence;
use crate::analyze::verdict::{self, Design, Verdict};
use crate::control::Guard;
use crate::model::run::Plan;
use crate::store::{TrialRow, trial_data};
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
}

/// Whether every contrast of the primary metric is settled by the plan's design.
fn settled(plan: &Plan, trials: &[TrialRow]) -> bool {
    let primary = plan.primary();
    let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
    let d: Vec<Vec<f64>> = (0..plan.arms.len())
        .filter(|i| *i != plan.baseline)
        .map(|i| experiment::log_ratios(&data, i, plan.baseline, &primary.name))
        .collect();
    verdict::verdicts_only(
        &d,
        plan.effect,
        plan.confidence,
        primary.better,
        &plan.design,
    )
    .iter()
    .all(|c| {
        c.as_ref()
            .is_some_and(|c| c.verdict != Verdict::Inconclusive)
    })
}

/// Whether the design looks after `blocks` complete blocks.
fn is_look(design: &Design, blocks: usize) -> bool {
    match design {
        Design::Sequential { .. } => blocks >= ConfidenceSequence::MIN_BLOCKS,
        // The looks of GroupSequential::new, without computing its boundaries every block.
        Design::GroupSequential { looks, max_blocks } => {
            (1..=*looks).any(|i| (max_blocks * i).div_ceil(*looks).max(2) == blocks)
        }
        _ => false,
    }
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

/// Run the experiment through `ctx`, storing each trial as it finishes.
pub fn execute(plan: &Plan, ctx: &mut Effects) -> anyhow::Result<Executed> {
    let started = Instant::now();
    let job = Job::new(plan)?;
    let mut guard: Option<Guard> = None;
    let mut x = Executed {
        stop_reason: format!("{} blocks done", plan.blocks),
        ..Default::default()
    };
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    warm_settings(plan, ctx, &mut guard, &mut x.notes)?;
    let mut servers: Option<Box<dyn ServerSchedule>> = match &plan.server {
        Some(sp) if sp.warm.is_some() => Some(Box::new(Warm::new(plan, &job.base_spec)?)),
        Some(_) => Some(Box::new(PerTrial::new(plan, &job.base_spec)?)),
        None => None,
    };
    let mut lifetime: Option<usize> = None;
    let mut flagged_arms: Vec<usize> = Vec::new();
    let mut seq = 0i64;
    let stopped = |ctx: &Effects, x: &mut Executed, what: String| {
        let stop = (ctx.stop)();
        if stop {
            x.interrupted = true;
            x.stop_reason = what;
        }
        stop
    };
    if plan.warmup > 0 {
        let n = (plan.warmup * plan.arms.len()) as u64;
        ctx.progress.phase("warm-up", Some(n));
    }
    if let Some(s) = servers.as_mut() {
        match s.before_block(0, ctx.progress) {
            Ok(l) => lifetime = l,
            Err((arm, served)) => {
                x.failed = true;
                x.stop_reason = format!(
                    "the server of arm {} did not come up ({}); nothing was measured",
                    plan.arms[arm].name,
                    served.failure.unwrap_or_default()
                );
                return Ok(x);
            }
        }
    }
    for w in 0..plan.warmup {
        for arm in 0..plan.arms.len() {
            ctx.progress.message(&format!(
                "warm-up {}/{} · {}",
                w + 1,
                plan.warmup,
                plan.arms[arm].name
            ));
            let slot = servers.as_deref_mut().map(|s| ServerSlot {
                schedule: s,
                lifetime,
            });
            let t = trial(&job, arm, -1, ctx, &mut guard, &mut x.notes, slot)?;
            ctx.progress.step("");
            if !t.ok && !plan.keep_going {
                x.failed = true;
                x.stop_reason = format!(
                    "warm-up trial of arm {} failed ({}); nothing was measured; use --keep-going to continue past failures",
                    plan.arms[arm].name,
                    describe_end(&t.evidence)
                );
                return Ok(x);
            }
            if stopped(ctx, &mut x, "interrupted (Ctrl-C) during warm-up".into()) {
                return Ok(x);
            }
        }
    }
    // A fixed number of trials has a length (and an ETA); a run that may stop early has not.
    let open_ended = plan.max_time.is_some() || !matches!(plan.design, Design::Fixed);
    let total = (plan.blocks * plan.arms.len()) as u64;
    ctx.progress.phase("trials", (!open_ended).then_some(total));
    'blocks: for block in 0..plan.blocks {
        if let Some(max) = plan.max_time
            && started.elapsed() >= max
        {
            x.stop_reason = format!(
                "{} {} s reached after {block} blocks",
                if plan.calibrate {
                    "--calibrate"
                } else {
                    "--max-time"
                },
                max.as_secs()
            );
            break;
        }
        let block_started = Instant::now();
        if let Some(s) = servers.as_mut() {
            match s.before_block(block, ctx.progress) {
                Ok(l) => lifetime = l,
                Err((arm, served)) => {
                    let mut t = super::trial::server_failed(arm, block as i64, served);
                    t.seq = seq;
                    seq += 1;
                    ctx.store.add_trial(ctx.run_id, &t)?;
                    let why = describe_end(&t.evidence);
                    x.trials.push(t);
                    if !plan.keep_going {
                        x.failed = true;
                        x.stop_reason = format!(
                            "the server of arm {} did not come up for lifetime {} ({why}); every server was stopped",
                            plan.arms[arm].name,
                            lifetime.map_or(1, |l| l + 2)
                        );
                        break 'blocks;
                    }
                    continue 'blocks;
                }
            }
            for n in s.notes() {
                ctx.progress.note(&n);
                x.notes.push(n);
            }
        }
        let order = block_order(plan.arms.len(), block, plan.seed);
        let mut block_ok = true;
        for arm in order {
            let est = estimate_line(&names, plan, &x.trials);
            ctx.progress.message(&format!(
                "block {}/{} · {}{est}",
                block + 1,
                plan.blocks,
                plan.arms[arm].name,
            ));
            let slot = servers.as_deref_mut().map(|s| ServerSlot {
                schedule: s,
                lifetime,
            });
            let mut t = trial(&job, arm, block as i64, ctx, &mut guard, &mut x.notes, slot)?;
            ctx.progress.step("");
            t.seq = seq;
            seq += 1;
            ctx.store.add_trial(ctx.run_id, &t)?;
            if let Some(f) = &t.flagged
                && !flagged_arms.contains(&arm)
            {
                // Live, once per arm; the final report counts every flagged trial.
                flagged_arms.push(arm);
                ctx.progress
                    .note(&format!("FLAGGED {}: {f}", plan.arms[arm].name));
            }
            let failed = !t.ok;
            x.trials.push(t);
            if failed {
                block_ok = false;
                if !plan.keep_going {
                    let last = x.trials.last().expect("just pushed");
                    x.failed = true;
                    x.stop_reason = format!(
                        "trial of arm {} failed ({}); use --keep-going to continue past failures",
                        plan.arms[arm].name,
                        describe_end(&last.evidence),
                    );
                    break 'blocks;
                }
            }
            let done = x.blocks_done;
            if stopped(
                ctx,
                &mut x,
                format!(
                    "interrupted (Ctrl-C) in block {}; the trial in flight finished and was kept; {done} complete blocks analysed",
                    block + 1
                ),
            ) {
                break 'blocks;
            }
        }
        x.blocks_done += 1;
        if let Some(s) = servers.as_mut() {
            s.after_block(block_started.elapsed().as_secs_f64());
        }
        if block_ok && is_look(&plan.design, x.blocks_done) && settled(plan, &x.trials) {
            x.stop_reason = format!(
                "every contrast settled after {} blocks ({})",
                x.blocks_done,
                plan.design.describe(plan.arms.len() - 1, plan.confidence)
            );
            break;
        }
    }
    if let Some(s) = servers.as_mut() {
        s.shutdown();
    }
    drop(servers); // every server stopped, every arm's directory removed
    drop(guard); // restores every system setting the arms changed
    Ok(x)
}

fn estimate_line(names: &[String], plan: &Plan, trials: &[TrialRow]) -> String {
    let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
    let mut parts = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if i == plan.baseline {
            continue;
        }
        let d = experiment::log_ratios(&data, i, plan.baseline, &plan.primary().name);
        if let Some(e) = crate::analyze::stats::hodges_lehmann(&d, plan.confidence) {
            let p = crate::analyze::verdict::to_percent(e);
            parts.push(match (p.lo, p.hi) {
                (Some(lo), Some(hi)) => format!("{n} {:+.1}% [{lo:+.1}, {hi:+.1}]", p.point),
                _ => format!("{n} {:+.1}%", p.point),
            });
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(
            " · {}: {} (unadjusted, for orientation)",
            plan.primary().name,
            parts.join(", ")
        )
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
