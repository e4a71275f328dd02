//! A trial up to its load: made ready (the machine prepared, its spec, its server acquired),
//! then begun (its evidence started just before the load). A duet makes every arm's trial
//! ready, then begins them all, then runs their loads at once.

use super::{
    DuringEvent, DuringLoad, Effects, Gatherer, Guard, Job, Schedule, ServerSlot, TrialRow,
    TrialSpec, prepare_machine, server_failed, start_event, trial_spec, with_tmpfs, with_trial_dir,
};
use anyhow::Context as _;

/// A trial ready for its load: the machine prepared, its spec, its server acquired.
pub(in crate::experiment) struct Ready {
    pub(super) arm_idx: usize,
    pub(super) block: i64,
    pub(super) spec: TrialSpec,
    pub(super) trial_dir: Option<crate::collect::load::TrialDir>,
    pub(super) server_pid: Option<i32>,
    pub(super) pools: Vec<(u64, u64)>,
}

/// A trial up to its load: ready, and its evidence gatherers started; what its end needs.
pub(in crate::experiment) struct Begun {
    pub(super) arm_idx: usize,
    pub(super) block: i64,
    pub(in crate::experiment) spec: TrialSpec,
    pub(super) trial_dir: Option<crate::collect::load::TrialDir>,
    pub(super) pools: Vec<(u64, u64)>,
    pub(super) at_start: Option<crate::experiment::costs::MachineAtStart>,
    pub(in crate::experiment) gatherer: Gatherer,
    pub(super) during: Option<DuringLoad>,
    pub(super) event: Option<(DuringEvent, Option<String>)>,
}

/// Everything of a trial before its evidence starts: the machine prepared, the spec, the
/// server acquired. Err(row): the trial's server did not come up.
pub(in crate::experiment) fn ready(
    job: &Job,
    arm_idx: usize,
    block: i64,
    ctx: &mut Effects,
    guard: &mut Option<Guard>,
    notes: &mut Vec<String>,
    servers: Option<&mut ServerSlot>,
) -> anyhow::Result<Result<Ready, TrialRow>> {
    let (plan, base_spec) = (job.plan, &job.base_spec);
    let arm = &plan.arms[arm_idx];
    let pools = prepare_machine(plan, arm, ctx, guard, notes)?;
    let mut spec = trial_spec(plan, base_spec, arm, arm_idx, servers.as_deref())?;
    with_tmpfs(job, arm_idx, &mut spec)?;
    let trial_dir = with_trial_dir(plan, &mut spec)?;
    let server_pid = match servers {
        Some(s) => match s.schedule.acquire(s.seat(arm_idx)) {
            Ok(pid) => Some(pid),
            Err(served) => return Ok(Err(server_failed(arm_idx, block, served))),
        },
        None => None,
    };
    Ok(Ok(Ready {
        arm_idx,
        block,
        spec,
        trial_dir,
        server_pid,
        pools,
    }))
}

/// The evidence of a ready trial started, just before its load: the machine at its start, the
/// gatherer's "before" readings, the trace window, the server's reader, the `--during` event.
pub(in crate::experiment) fn begin(
    job: &Job,
    r: Ready,
    ctx: &mut Effects,
    servers: Option<&ServerSlot>,
) -> anyhow::Result<Begun> {
    let plan = job.plan;
    let arm = &plan.arms[r.arm_idx];
    let schedule = match arm.process.no_sample {
        true => Schedule::off(),
        false => plan.sampling,
    };
    // What the workload could get as it starts, read the same way for every arm.
    let at_start = crate::experiment::costs::machine_at_start(&ctx.root);
    let gatherer = Gatherer::new(&ctx.root, &ctx.cpu, schedule);
    if let Some(t) = ctx.trace.as_deref_mut() {
        t.start();
    }
    // The server is read while its load runs, at the same delay for every arm.
    let during = r
        .server_pid
        .map(|pid| DuringLoad::start(pid, job.read_after))
        .transpose()
        .context("a thread to read the server's memory during its load")?;
    let event = match (&plan.during, r.server_pid, servers) {
        (Some(d), Some(pid), Some(s)) => start_event(d, pid, s.schedule.arm(s.seat(r.arm_idx)))?,
        _ => None,
    };
    Ok(Begun {
        arm_idx: r.arm_idx,
        block: r.block,
        spec: r.spec,
        trial_dir: r.trial_dir,
        pools: r.pools,
        at_start,
        gatherer,
        during,
        event,
    })
}
