//! One trial of a run: the arm's system settings applied through the guard, `--prepare`,
//! caches dropped or memory compacted, the command (or its server and load) run through the
//! injected runner with evidence gathered around it, the metrics read from its output, and the
//! trial's row — with why it failed, in words, when it did.

use super::Effects;
mod slot;
use super::service;
use super::watch;
use crate::analyze::experiment;
use crate::analyze::flagged::State;
use crate::backing::arm::Arm;
use crate::backing::qemu;
use crate::collect::event::{DuringEvent, EventView};
use crate::collect::sampler::Schedule;
use crate::collect::server::DuringLoad;
use crate::collect::trial::{Gatherer, TrialEvidence};
use crate::control::{self, Guard, Knob};
use crate::error::UsageError;
use crate::model::evidence::EventEvidence;
use crate::model::run::Plan;
use crate::probe::Root;
use crate::store::{Evidence, TrialRow};
use crate::units::Bytes;
use crate::workload::child::{TrialOutcome, TrialSpec};
use anyhow::Context as _;
pub(super) use slot::ServerSlot;
use std::cell::RefCell;
use std::collections::BTreeMap;

mod begin;
mod end;
mod evidence;
pub(super) use begin::{Begun, begin, ready};
pub(super) use end::{Beside, end, own_cpu_ns};
use evidence::{cpu_per_op, event_costs, pools_at_start, qemu_failure, read_metrics};

/// A trial's end in words: `exit 1`, `killed by SIGKILL`, with `--timeout` and a metric not
/// found named.
pub fn describe_end(evidence: &Evidence) -> String {
    let o = &evidence.outcome;
    let mut s = match (o.exit_code, o.signal) {
        (_, Some(sig)) => format!("killed by {}", crate::workload::child::signal_name(sig)),
        (Some(c), _) => format!("exit {c}"),
        // The load never ran: its server did not come up (the reason follows).
        _ => "the load did not run".to_string(),
    };
    if let Some(w) = &evidence.failure_reason {
        s.push_str(&format!("; {w}"));
    }
    if o.timed_out {
        s.push_str(", killed by --timeout");
    }
    if !evidence.missing_metrics.is_empty() {
        s.push_str(&format!(
            ", metric not found in the output: {}",
            evidence.missing_metrics.join(", ")
        ));
    }
    s
}

/// Every system knob any arm sets, once each.
fn touched_knobs(all: &[Arm]) -> Vec<Knob> {
    let mut v: Vec<Knob> = Vec::new();
    for k in all.iter().flat_map(|a| a.system.iter().map(|(k, _)| *k)) {
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

/// Apply one arm's system-wide settings; knobs other arms set go back to their originals.
fn apply_system(
    arm: &Arm,
    all: &[Arm],
    ctx: &mut Effects,
    guard: &mut Option<Guard>,
) -> anyhow::Result<Vec<String>> {
    let touched = touched_knobs(all);
    if touched.is_empty() {
        return Ok(Vec::new());
    }
    if guard.is_none() {
        *guard = Some((ctx.guard)()?);
    }
    let g = guard.as_mut().expect("just set");
    let mut short = Vec::new();
    for k in touched {
        let want = match arm.system.iter().find(|(x, _)| *x == k) {
            Some((_, v)) => v.clone(),
            None => match g.original(&k) {
                Some(o) => o.to_string(),
                None => continue, // never changed: already the machine's own value
            },
        };
        let applied = g.set(k, &want)?;
        if !applied.honoured() {
            short.push(format!(
                "{k}: asked {want}, the kernel gave {}",
                applied.actual
            ));
        }
    }
    Ok(short)
}

/// `--during`: the event's thread, started as the load is (its moment measured from here), and
/// the arm's fork-report command. None when its moment is a share of a burst not yet known.
fn start_event(
    d: &crate::model::run::During,
    server: i32,
    arm: &super::servers::ArmServer,
) -> anyhow::Result<Option<(DuringEvent, Option<String>)>> {
    use crate::model::run::DuringAt;
    let at = match d.at {
        DuringAt::After(t) => Some(t),
        DuringAt::Share(p) => arm
            .burst()
            .map(|b| std::time::Duration::from_secs_f64(b as f64 * p)),
    };
    let Some(at) = at else { return Ok(None) };
    let e = DuringEvent::start(server, arm.fill(&d.command), at)
        .context("a thread for the --during event")?;
    Ok(Some((e, d.fork_report.as_deref().map(|r| arm.fill(r)))))
}

/// What every trial of one run shares.
pub(super) struct Job<'a> {
    plan: &'a Plan,
    pub(super) base_spec: TrialSpec,
    /// Per arm, its `watch=` spec and the PID it named when the run started.
    watched: BTreeMap<usize, (String, u32)>,
    /// Per arm, the watched process's huge coverage after its first trial.
    watch_first: RefCell<BTreeMap<usize, f64>>,
    /// When a server is read after its load starts: half a burst, else 200 ms.
    pub(super) read_after: std::time::Duration,
    /// Per arm with `tmpfs.huge=`, the tmpfs mounted for it (unmounted when the job ends).
    tmpfs: BTreeMap<usize, crate::backing::tmpfs::Mount>,
}

impl<'a> Job<'a> {
    /// What the plan's trials share, with each `watch=` arm's process resolved once: a watched
    /// process that exits mid-run flags its arm's trials.
    pub(super) fn new(plan: &'a Plan) -> Result<Job<'a>, UsageError> {
        let mut watched = BTreeMap::new();
        let mut tmpfs = BTreeMap::new();
        for (i, x) in plan.arms.iter().enumerate() {
            if let Some(w) = &x.process.watch {
                watched.insert(i, (w.clone(), watch::resolve(w).map_err(UsageError)?));
            }
            // A server arm's tmpfs is its directory (`ArmDirs`); a command's is its own.
            if let Some(h) = x.process.tmpfs_huge.filter(|_| plan.server.is_none()) {
                let m = crate::backing::tmpfs::Mount::new(h).map_err(|e| {
                    UsageError(format!("arm {}: tmpfs.huge={}: {e}", x.name, h.option()))
                })?;
                tmpfs.insert(i, m);
            }
        }
        Ok(Job {
            plan,
            base_spec: TrialSpec {
                argv: plan.command.clone(),
                shell: plan.trial.shell,
                cwd: plan.trial.cwd.clone(),
                env: plan.trial.env.clone(),
                config: Default::default(),
                timeout: plan.trial.timeout,
                user: plan.user.map(|u| (u.uid, u.gid)),
                pin_cpu: plan.pin,
            },
            watched,
            tmpfs,
            watch_first: RefCell::new(BTreeMap::new()),
            read_after: plan
                .server
                .as_ref()
                .and_then(|s| s.warm.as_ref())
                .and_then(|w| w.burst)
                .map_or(std::time::Duration::from_millis(200), |b| b / 2),
        })
    }
}

/// Before a trial: the arm's system settings (the warm design set them once, for every
/// arm's server at once), `--prepare`, caches dropped and memory compacted when asked. Returns
/// the hugetlb pools as the trial starts.
fn prepare_machine(
    plan: &Plan,
    arm: &Arm,
    ctx: &mut Effects,
    guard: &mut Option<Guard>,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<(u64, u64)>> {
    let setup = &plan.trial;
    let warm = plan.server.as_ref().is_some_and(|s| s.warm.is_some());
    if !warm {
        for s in apply_system(arm, &plan.arms, ctx, guard)? {
            if !notes.contains(&s) {
                notes.push(s);
            }
        }
    }
    let pools = pools_at_start(arm, &ctx.root);
    if let Some(p) = &setup.prepare {
        let st = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(p)
            .status()
            .with_context(|| format!("--prepare {p:?}"))?;
        if !st.success() {
            anyhow::bail!("--prepare {p:?} failed ({st})");
        }
    }
    if setup.drop_caches {
        control::drop_caches()?;
    }
    if setup.compact {
        control::compact_memory()?;
    }
    Ok(pools)
}

/// The child's spec for this arm: with a server, the arm configures the server and the load
/// runs as given (its own per arm when the design gave each arm one); a forking JMH gets the
/// JVM options for its forks; a QEMU command its guest RAM backing.
fn trial_spec(
    plan: &Plan,
    base: &TrialSpec,
    arm: &Arm,
    arm_idx: usize,
    servers: Option<&ServerSlot>,
) -> anyhow::Result<TrialSpec> {
    let mut spec = TrialSpec {
        config: if plan.server.is_some() {
            Default::default()
        } else {
            arm.process.clone()
        },
        ..base.clone()
    };
    if arm.process.jvm_to_forks && plan.server.is_none() {
        let opts = arm.process.java_options().join(" ");
        if spec.shell {
            if let Some(cmd) = spec.argv.first_mut() {
                cmd.push_str(&format!(" -jvmArgsAppend '{opts}'"));
            }
        } else {
            spec.argv.extend(["-jvmArgsAppend".to_string(), opts]);
        }
    }
    if let Some(q) = &arm.process.qemu {
        spec.argv = qemu::rewrite(&spec.argv, spec.shell, q).map_err(UsageError)?;
    }
    if let Some(s) = servers
        && plan.server.as_ref().is_some_and(|p| p.per_arm_load)
    {
        spec.argv = s.schedule.arm(s.seat(arm_idx)).load.clone();
    }
    Ok(spec)
}

/// The arm's tmpfs (`tmpfs.huge=`), emptied, and named to the child as `{tmpfs}` in its words
/// and `$HUGELAB_TMPFS` in its environment.
fn with_tmpfs(job: &Job, arm_idx: usize, spec: &mut TrialSpec) -> anyhow::Result<()> {
    let Some(m) = job.tmpfs.get(&arm_idx) else {
        return Ok(());
    };
    m.clear()
        .with_context(|| format!("emptying the arm's tmpfs {}", m.path.display()))?;
    let dir = m.path.display().to_string();
    for w in &mut spec.argv {
        *w = w.replace("{tmpfs}", &dir);
    }
    spec.env.push(("HUGELAB_TMPFS".into(), dir));
    Ok(())
}

/// A load format's temporary directory for its files, named to the child as
/// `$HUGELAB_TRIAL_DIR` (in its environment and, for an argv, in its words).
fn with_trial_dir(
    plan: &Plan,
    spec: &mut TrialSpec,
) -> anyhow::Result<Option<crate::collect::load::TrialDir>> {
    if plan.load_format.is_none() {
        return Ok(None);
    }
    let d = crate::collect::load::TrialDir::new(spec.user)
        .context("a temporary directory for the load's files")?;
    let dir = d.path().display().to_string();
    if !spec.shell {
        for w in &mut spec.argv {
            *w = w.replace("$HUGELAB_TRIAL_DIR", &dir);
        }
    }
    spec.env.push(("HUGELAB_TRIAL_DIR".into(), dir));
    Ok(Some(d))
}

/// A load format's rows found in the trial's output (JMH's, per trial); none from a JMH that
/// succeeded is a missing metric.
fn discovered_rows(
    plan: &Plan,
    o: &TrialOutcome,
    dir: Option<&crate::collect::load::TrialDir>,
    missing: &mut Vec<String>,
) -> Vec<crate::collect::load::LoadMetric> {
    let rows = match (plan.load_format, dir) {
        (Some(f), Some(d)) if o.succeeded() => {
            crate::collect::load::discovered(f, &o.stdout, &o.stderr, d.path())
        }
        _ => Vec::new(),
    };
    if plan.load_format == Some(crate::collect::load::LoadFormat::Jmh)
        && o.succeeded()
        && rows.is_empty()
    {
        missing.push("JMH's result rows".into());
    }
    rows
}

/// Once per run: which perf counters could not be counted for the child.
fn note_uncounted(ev: &TrialEvidence, notes: &mut Vec<String>) {
    if let Some(first) = ev.perf_unavailable.first()
        && !notes.iter().any(|n| n.starts_with("not counted"))
    {
        notes.push(format!(
            "not counted for the child: {first}{}",
            if ev.perf_unavailable.len() > 1 {
                " (and more; see the trial evidence)"
            } else {
                ""
            }
        ));
    }
}

/// The last `n` lines of the load's output (stdout, then stderr).
fn output_tail(o: &TrialOutcome, n: usize) -> Vec<&str> {
    let mut tail: Vec<&str> = o
        .stdout
        .lines()
        .chain(o.stderr.lines())
        .rev()
        .take(n)
        .collect();
    tail.reverse();
    tail
}

/// The watched process of this arm after its trial, and its flag when its backing was lost
/// against the arm's first trial.
fn watch_arm(job: &Job, arm_idx: usize, w: &str, pid: u32) -> (watch::Watched, Option<String>) {
    let seen = watch::observe(w, pid);
    let first = job.watch_first.borrow().get(&arm_idx).copied();
    if first.is_none()
        && let Some(c) = seen.coverage
    {
        job.watch_first.borrow_mut().insert(arm_idx, c);
    }
    let flag = watch::flag(&seen, first);
    (seen, flag)
}

/// The trial's costs beside its metrics: memory and CPU (the server's or the command's), CPU
/// per operation, an operator event's, and the restart design's server ready time. Returns
/// the event's evidence.
fn add_costs(
    plan: &Plan,
    metrics: &mut BTreeMap<String, f64>,
    (o, ev, pools): (&TrialOutcome, &TrialEvidence, &[(u64, u64)]),
    served: Option<&service::Served>,
    event: &Option<(EventView, Option<String>)>,
) -> Option<EventEvidence> {
    metrics.extend(match served {
        Some(s) => super::costs::of_server(s),
        None => super::costs::of_command(o, &ev.memory, super::costs::own_hwm(), pools),
    });
    if let Some(v) = cpu_per_op(plan, metrics) {
        metrics.insert(crate::analyze::costs::CPU_PER_OP.into(), v);
    }
    if let Some(r) = served.and_then(|s| s.ready_s)
        && plan.metrics.iter().any(|m| m.name == super::SERVER_READY)
    {
        metrics.insert(super::SERVER_READY.into(), r);
    }
    let (view, report) = event.as_ref()?;
    let (costs, evidence) = event_costs(view, report.as_deref());
    metrics.extend(costs);
    Some(evidence)
}

/// The trial's trace window, closed at the child's own start and end (`--trace`).
fn finish_trace(
    ctx: &mut Effects,
    spec: &TrialSpec,
    o: &TrialOutcome,
) -> Option<(crate::analyze::trace::TraceWindow, u64)> {
    let t = ctx.trace.as_deref_mut()?;
    let comm = spec
        .argv
        .first()
        .map_or("child", |c| c.rsplit('/').next().unwrap_or(c));
    Some(t.finish(o.start_mono_ns, o.end_mono_ns, comm))
}

/// One trial of arm `arm_idx` in `block` (−1: warm-up), not yet stored.
pub(super) fn trial(
    job: &Job,
    arm_idx: usize,
    block: i64,
    ctx: &mut Effects,
    guard: &mut Option<Guard>,
    notes: &mut Vec<String>,
    (mut servers, beside): (Option<ServerSlot>, Beside),
) -> anyhow::Result<TrialRow> {
    let r = match ready(job, arm_idx, block, ctx, guard, notes, servers.as_mut())? {
        Ok(r) => r,
        Err(failed) => return Ok(failed),
    };
    let mut b = begin(job, r, ctx, servers.as_ref())?;
    let o = ctx.runner.run(&b.spec, &mut b.gatherer);
    Ok(end(job, b, o, ctx, notes, servers)?.row(beside))
}

/// A trial whose server did not come up: failed, with the server's reason and last lines.
pub(super) fn server_failed(arm_idx: usize, block: i64, served: service::Served) -> TrialRow {
    let evidence = Evidence {
        server: Some(*served.evidence),
        failure_reason: served.failure,
        ..Default::default()
    };
    TrialRow {
        block,
        arm_idx: arm_idx as i64,
        seq: 0,
        ok: false,
        flagged: None,
        metrics: BTreeMap::new(),
        evidence,
    }
}
