//! experiment: the run engine that `hugelab run` drives. Given a validated [`Plan`] it opens the
//! run in the results database, switches arms through the settings guard, runs the blocks
//! (`execute.rs`: seeded order; `servers.rs`: the restart and warm designs behind one seam;
//! `trial.rs`: one trial and its evidence), stores each trial as it finishes, and assembles
//! the [`RunResult`] that every renderer reads (`summary.rs`). It sits above `render` (progress
//! goes through its observer) and below `commands`, which only parses, plans and prints.

pub mod costs;
pub mod effects;
pub mod execute;
pub mod plan;
pub mod process;
pub mod servers;
pub mod service;
pub mod summary;
pub mod tracing;
pub mod trial;
pub mod watch;

pub use effects::Effects;
pub use execute::{Executed, block_order, execute};

use crate::analyze::experiment::{self, TrialData};
use crate::analyze::stored::trial_data;
use crate::control::{self, Guard};
use crate::model::run::{Plan, RunResult};
use crate::model::stored::{RunOwner, StoredPlan, StoredRunPlan};
use crate::probe::Root;
use crate::render::progress::{Observer, Progress};
use crate::store::{ArmRow, Store};
use crate::workload::child::ProcessRunner;
use anyhow::Context as _;
use std::path::PathBuf;
use std::time::Instant;

pub const SCHEMA: &str = "hugelab.run/1";

/// The metric of a server trial under the restart design: from the spawn to ready, seconds.
pub const SERVER_READY: &str = "server_ready_s";

/// What the command hands the engine beside the plan.
pub struct Request<'a> {
    /// The measured command, as given (stored with the run).
    pub command: &'a [String],
    pub shell: bool,
    pub label: Option<&'a str>,
    /// The results database; `None` keeps the run in memory only (`--no-save`).
    pub db: Option<PathBuf>,
    pub quiet: bool,
    /// This process's ownership of the settings, taken while planning when the plan changes
    /// them (`plan::plan_owned`); held until the run has restored everything.
    pub owner: Option<std::sync::Arc<control::Owner>>,
    /// The TLB reach `bench tlb` last measured here, when it has: the answer's "why" is read
    /// against it and kept in the record.
    pub reach: Option<crate::model::tlb::Measured>,
}

/// Run the plan to its end (or Ctrl-C, or a failed trial) and analyse what was stored.
pub fn conduct(plan: Plan, req: &Request) -> anyhow::Result<Conducted> {
    let started = Instant::now();
    let mut store = match &req.db {
        Some(db) => Store::open(db)?,
        None => Store::in_memory()?,
    };
    // Earlier runs killed outright (their process gone) are marked so, not left `running`.
    store.mark_interrupted(|o| !control::journal::process_alive(o.pid, o.start))?;
    let (run_id, mut stored) = open_run(&mut store, &plan, req)?;
    control::defer_first_signal(
        "stopping after the trial in flight (it is kept); settings are then restored and the completed blocks analysed; a second Ctrl-C kills that trial",
    );
    if let Some(cpu) = plan.pin {
        pin_self_away_from(cpu)?;
    }
    let mut progress = Progress::stderr("hugelab run", req.quiet);
    let too_few = summary::too_few_blocks(&plan);
    announce(&plan, too_few.as_deref(), &mut progress);
    let mut trace = if plan.trace.is_empty() {
        None
    } else {
        match tracing::TrialTrace::open(&plan.trace) {
            Ok(t) => Some(t),
            Err(e) => {
                store.finish_run::<()>(run_id, "failed", None)?;
                return Err(e);
            }
        }
    };
    let mut notes = trace.as_ref().map(|t| t.notes.clone()).unwrap_or_default();
    notes.extend(plan.applied.clone());
    let mut runner = ProcessRunner;
    let stop = control::stop_requested;
    let mut ctx = Effects {
        runner: &mut runner,
        store: &mut store,
        run_id,
        root: Root::system(),
        cpu: crate::probe::cpu::read(&Root::system()).unwrap_or_default(),
        guard: Box::new(|| {
            Ok(match &req.owner {
                Some(owner) => Guard::system_owned(owner)?,
                None => Guard::system()?,
            })
        }),
        stop: &stop,
        progress: &mut progress,
        trace: trace.as_mut(),
    };
    let result = execute(&plan, &mut ctx);
    drop(ctx);
    drop(trace);
    progress.done();
    let x = match result {
        Ok(r) => r,
        Err(e) => {
            store.finish_run::<()>(run_id, "failed", None)?;
            return Err(match &req.db {
                Some(db) => e.context(format!(
                    "run {run_id} stopped; its completed trials are in {}",
                    db.display()
                )),
                None => e.context(format!(
                    "run {run_id} stopped (--no-save: nothing was stored)"
                )),
            });
        }
    };
    notes.extend(too_few);
    let (res, outcome) = analyse(plan, req, run_id, x, started, notes);
    // The plan as it ran (the replicas, the schedule and the forecasts the engine settled on
    // the way), with what the run printed, for `results show`.
    stored.plan = res.plan.clone();
    stored.said.clone_from(&res.notes);
    store.set_plan(run_id, &StoredRunPlan::Run(Box::new(stored)))?;
    // The whole record the answer is printed from, stored once and read back as it was.
    store.finish_run(
        run_id,
        outcome.status(),
        Some(&crate::model::record::RunRecord::of(&res)),
    )?;
    Ok(Conducted {
        result: res,
        outcome,
    })
}

/// How a run ended (its status in the results database).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    /// Stopped on a failed trial, or no block completed with every trial ok.
    Failed,
    /// Ctrl-C: the completed blocks were analysed.
    Interrupted,
    /// The primary metric came out 0 or negative: bad input, said at the first such trial.
    Refused,
}

impl Outcome {
    pub fn status(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Failed | Outcome::Refused => "failed",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// A finished run: its record and how it ended.
pub struct Conducted {
    pub result: RunResult,
    pub outcome: Outcome,
}

/// Create the run's row: the plan with the machine's huge-page state as the run starts.
fn open_run(store: &mut Store, plan: &Plan, req: &Request) -> anyhow::Result<(i64, StoredPlan)> {
    let kernel = crate::probe::cpu::kernel_release(&Root::system())
        .ok()
        .flatten();
    let arm_rows: Vec<ArmRow> = plan
        .arms
        .iter()
        .enumerate()
        .map(|(i, x)| ArmRow {
            idx: i as i64,
            name: x.name.clone(),
            spec: x.spec.clone(),
        })
        .collect();
    let pid = std::process::id();
    let stored = StoredPlan {
        plan: plan.clone(),
        owner: Some(RunOwner {
            pid,
            start: crate::control::journal::process_start_time(pid),
        }),
        system: crate::probe::status::probe(&Root::system()).ok(),
        said: Vec::new(),
        hugelab_version: None,
        imported_from: None,
    };
    let id = store.create_run(
        req.label,
        req.command,
        kernel.as_deref(),
        "running",
        &StoredRunPlan::Run(Box::new(stored.clone())),
        &arm_rows,
    )?;
    Ok((id, stored))
}

/// Before the first trial: a preset's arms as options to copy, the plan's notes, and a fixed
/// design too short for any interval.
fn announce(plan: &Plan, too_few: Option<&str>, progress: &mut dyn Observer) {
    if let Some(sp) = plan.server.as_ref().filter(|s| s.preset.is_some()) {
        let arms: Vec<String> = plan
            .arms
            .iter()
            .map(|x| format!("--arm '{}={}'", x.name, x.spec))
            .collect();
        progress.note(&format!(
            "--preset {} is {} --ready '{}'",
            sp.preset.as_deref().unwrap_or(""),
            arms.join(" "),
            sp.ready
        ));
    }
    for n in plan.notes.iter().chain(&plan.applied) {
        progress.note(n);
    }
    if let Some(w) = too_few {
        progress.note(w);
    }
}

/// The stored trials analysed with the design the plan chose, into the run's record.
fn analyse(
    mut plan: Plan,
    req: &Request,
    run_id: i64,
    x: Executed,
    started: Instant,
    mut notes: Vec<String>,
) -> (RunResult, Outcome) {
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    plan.metrics = crate::analyze::stored::with_discovered(plan.metrics, &x.trials);
    // The schedule that ran: a planned duet alternates on a machine too small for it.
    if let (Some(why), Some(w)) = (
        &x.schedule_change,
        plan.server.as_mut().and_then(|s| s.warm.as_mut()),
    ) {
        w.schedule = crate::model::run::BurstSchedule::Alternating;
        w.schedule_reason = why.clone();
    }
    // The replicas that ran (chosen at the first lifetime when not asked for).
    if let Some(w) = plan.server.as_mut().and_then(|s| s.warm.as_mut())
        && x.replicas > 0
    {
        w.replicas = Some(x.replicas);
        w.forecast = x.forecasts;
        w.burst_choice = x.burst_choice.clone();
    }
    let data: Vec<TrialData> = x.trials.iter().map(trial_data).collect();
    let described: Vec<(String, String)> = x
        .conditions
        .iter()
        .map(|(n, d, _)| (n.clone(), d.clone()))
        .collect();
    let report = crate::analyze::conditions::analyse(
        &names,
        plan.baseline,
        &data,
        &plan.metrics,
        plan.effect,
        plan.confidence,
        &plan.design,
        &described,
    );
    let primary = plan.primary().name.clone();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let noise = experiment::noise_attribution(&names, &data, &primary, cpus);
    let calibration = plan.calibrate.then(|| {
        let d = experiment::log_ratios(&data, 1, 0, &primary);
        let secs = started.elapsed().as_secs_f64() / x.blocks_done.max(1) as f64;
        crate::analyze::calibrate::calibrate(&d, secs, plan.effect, plan.confidence)
    });
    let (stop_reason, outcome) = ending(&plan, &x, &report, &primary);
    notes.extend(x.notes);
    let mut trace_stalls = Vec::new();
    if !plan.trace.is_empty() {
        notes.extend(summary::trace_summary(&plan, &x.trials));
        trace_stalls = summary::stall_contrasts_of(&plan, &x.trials);
    }
    let vm_advice = summary::vm_advice(&plan, req.command, req.shell, &report, x.blocks_done);
    let servers = summary::servers(&plan, &x.trials, &data);
    let pools = summary::pool_uses(&plan, &x.trials);
    let advice = advice_of(&plan, run_id, req, &report, &trace_stalls);
    let tlb = req
        .reach
        .clone()
        .map(|m| crate::analyze::tlb::why(&report, m));
    let res = RunResult {
        schema: SCHEMA,
        run_id,
        db: req
            .db
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        command: req.command.to_vec(),
        plan,
        blocks_done: x.blocks_done,
        stop_reason,
        report,
        noise,
        calibration,
        notes,
        trace_stalls,
        vm_advice,
        servers,
        elapsed_s: started.elapsed().as_secs_f64(),
        tlb,
        pools,
        advice,
        warmup_failed: x.warmup_failed,
    };
    (res, outcome)
}

/// How the run ended, and why in words: a run with no complete block, or whose `--during`
/// event never ran for an arm, failed at what it was asked (unless `--keep-going`).
fn ending(
    plan: &Plan,
    x: &Executed,
    report: &crate::model::analysis::ExperimentAnalysis,
    primary: &str,
) -> (String, Outcome) {
    let mut stop_reason = x.stop_reason.clone();
    let complete = summary::complete_blocks(&report.metrics, primary);
    // An operator's event that never ran (or always failed) for an arm leaves the event's
    // costs unmeasured: the run failed at what it was asked, unless --keep-going.
    let eventless: Vec<&str> = report
        .evidence
        .iter()
        .filter(|e| e.events.as_ref().is_some_and(|t| t.succeeded() == 0))
        .map(|e| e.arm.as_str())
        .collect();
    let event_failed = !eventless.is_empty() && !plan.keep_going && !x.interrupted;
    let failed = x.failed || (!x.interrupted && complete == 0) || event_failed;
    if failed && !x.failed && !x.refused && complete == 0 {
        stop_reason = format!(
            "{stop_reason}; no block completed with every arm's trial ok ({} failed trials), so there is nothing to compare",
            x.trials.iter().filter(|t| t.block >= 0 && !t.ok).count()
        );
    }
    if event_failed {
        stop_reason = format!(
            "{stop_reason}; the --during event ran successfully in no trial of {} (see the event lines; --keep-going analyses such a run anyway)",
            eventless.join(", ")
        );
    }
    let outcome = if x.refused {
        Outcome::Refused
    } else if x.interrupted {
        Outcome::Interrupted
    } else if failed {
        Outcome::Failed
    } else {
        Outcome::Complete
    };
    (stop_reason, outcome)
}

/// What `advise` says from this run alone (None with one arm: nothing is compared).
fn advice_of(
    plan: &Plan,
    run_id: i64,
    req: &Request,
    report: &crate::model::analysis::ExperimentAnalysis,
    stalls: &[crate::model::trace::StallContrast],
) -> Option<crate::model::advice::Advice> {
    (plan.arms.len() > 1).then(|| {
        crate::analyze::advice::for_one_run(crate::analyze::advice::RunEvidence {
            run_id,
            command: req.command.to_vec(),
            shell: req.shell,
            arms: plan.arms.clone(),
            baseline: plan.baseline,
            preset: plan.server.as_ref().and_then(|s| s.preset.clone()),
            report: report.clone(),
            stalls: stalls.to_vec(),
        })
    })
}

/// Keep hugelab's own threads off the child's CPU (`--pin`).
fn pin_self_away_from(cpu: usize) -> anyhow::Result<()> {
    let others: Vec<usize> = crate::probe::cpu::allowed_cpus()
        .into_iter()
        .filter(|c| *c != cpu)
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in others {
        // SAFETY: c came from the affinity mask, so c < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: setting this thread's affinity with a valid set; threads started later inherit it.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error()).context("sched_setaffinity for --pin");
    }
    Ok(())
}
