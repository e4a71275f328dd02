//! A run's plan: arguments and arms checked, the design chosen, output metrics compiled.

use crate::analyze::experiment::MetricDef;
use crate::analyze::verdict::Better;
use crate::backing::arm::{Arm, parse_arm, preset};
use crate::backing::condition::Condition;
use crate::backing::qemu;
use crate::collect::load::LoadFormat;
use crate::collect::output::OutputMetric;
use crate::collect::sampler::Schedule;
use crate::error::UsageError;
use crate::experiment::SERVER_READY;
use crate::model::run::Plan;
use crate::model::run::{ServerPlan, TrialSetup};
use pools::{
    check_knobs_exist, check_pools_fit, jmh_forks, service_pages, size_jvm_pools, size_pools,
};
use std::time::Duration;

mod args;
mod conditions;
mod design;
mod pools;

pub use args::{EXIT_FAILED, RunArgs};
use conditions::{check_conditions_fit, during, no_direct_compaction, parse_conditions};
pub use design::free_ports;

/// How long a warm service run lasts when neither `--blocks` nor `--max-time` is given.
pub const WARM_DEFAULT_TIME: Duration = Duration::from_secs(300);

/// A command's words: argv, or a shell string split on white space.
fn words_of(command: &[String], shell: bool) -> Vec<String> {
    if shell {
        command
            .join(" ")
            .split_whitespace()
            .map(String::from)
            .collect()
    } else {
        command.to_vec()
    }
}

/// The plan for this process's privileges and the machine's hugetlb pools.
pub fn plan(a: &RunArgs) -> Result<Plan, UsageError> {
    // SAFETY: geteuid has no preconditions.
    let privileged = unsafe { libc::geteuid() } == 0;
    let pages = match (&a.preset, &a.server) {
        (Some(name), Some(server)) => service_pages(a, name, &server_words(server, a.shell))?,
        _ => None,
    };
    let mut p = plan_with(a, privileged, pages)?;
    let root = crate::probe::Root::system();
    check_knobs_exist(
        &p.arms,
        &crate::probe::thp::read(&root).unwrap_or_default(),
        &crate::probe::hugetlb::read(&root).unwrap_or_default(),
    )?;
    let meminfo = crate::probe::meminfo::read(&root).ok().flatten();
    if let Some(total) = meminfo.as_ref().and_then(|m| m.mem_total) {
        check_pools_fit(&p.arms, total)?;
    }
    if let Some(avail) = meminfo.as_ref().and_then(|m| m.mem_available) {
        check_conditions_fit(&p.conditions, avail)?;
    }
    if p.conditions.iter().any(|c| *c != Condition::Clean) {
        let thp = crate::probe::thp::read(&root).unwrap_or_default();
        let notes = no_direct_compaction(&p.arms, thp.defrag.as_ref().map(|s| s.selected.as_str()));
        p.notes.extend(notes);
    }
    if let Some(d) = &a.cwd
        && !d.is_dir()
    {
        return Err(UsageError(format!(
            "--cwd {}: not a directory here; give an existing directory for the command to run in",
            d.display()
        )));
    }
    if p.arms.iter().any(|x| x.process.jvm.is_some()) {
        let pools = crate::probe::hugetlb::read(&root).unwrap_or_default();
        let words = match &p.server {
            Some(s) => s.argv.clone(),
            None => words_of(&p.command, a.shell),
        };
        if p.server.is_none() && jmh_forks(&words, p.load_format == Some(LoadFormat::Jmh)) {
            let mut given = Vec::new();
            for arm in p.arms.iter_mut() {
                let opts = arm.process.java_options();
                if !opts.is_empty() {
                    arm.process.jvm_to_forks = true;
                    given.push(format!("{}: -jvmArgsAppend '{}'", arm.name, opts.join(" ")));
                }
            }
            p.notes.push(format!(
                "jvm: JMH forks the measured JVM, which inherits the launcher's options: the arms' JVM options go to the forks only ({}), the launcher runs without them, and a hugetlb pool is sized for one heap",
                given.join("; ")
            ));
        }
        size_jvm_pools(&mut p.arms, &words, &pools, privileged)?;
    }
    if p.arms.iter().any(|x| x.process.qemu.is_some()) {
        let pools = crate::probe::hugetlb::read(&crate::probe::Root::system()).unwrap_or_default();
        let size = qemu::guest_size(&a.command, a.shell).map_err(UsageError)?;
        size_pools(&mut p.arms, size, &pools, privileged)?;
    }
    Ok(p)
}

/// The command's program, found before anything runs: a missing one is bad input (exit 2), not
/// a failed trial.
pub fn check_program(a: &RunArgs, p: &Plan) -> Result<(), UsageError> {
    let in_cwd = |prog: &str| match &a.cwd {
        // A relative path runs from --cwd.
        Some(d) if prog.contains('/') && !prog.starts_with('/') => {
            d.join(prog).display().to_string()
        }
        _ => prog.to_string(),
    };
    if !a.shell
        && let Some(prog) = p.command.first()
        && crate::probe::program::find_program(&in_cwd(prog)).is_none()
    {
        return Err(UsageError(format!(
            "program {prog:?} not found (give a path, or check PATH; use --shell for shell syntax)"
        )));
    }
    Ok(())
}

/// A server command's words: argv split on white space, or the one shell string.
pub fn server_words(server: &str, shell: bool) -> Vec<String> {
    if shell {
        vec![server.to_string()]
    } else {
        server.split_whitespace().map(String::from).collect()
    }
}

/// How a run holds the machine's settings: as their one owner (it changes them), or, where
/// it changes none, the lock that keeps every other hugelab from changing them under it.
pub type Held = (
    Option<std::sync::Arc<crate::control::Owner>>,
    Option<crate::control::MachineLock>,
);

/// Plan; where the plan changes system settings, become their one owner first (refused, exit
/// 2, while another hugelab is; or waiting with `--wait-for-settings`), else hold them as they
/// are for the measurement (waiting, said, for a hugelab that changes them), and plan again
/// under the lock, so that the plan reads values no other hugelab is changing.
pub fn plan_owned(a: &RunArgs) -> anyhow::Result<(Plan, Held)> {
    let first = plan(a)?;
    let held = if changes_settings(&first) {
        let owner = crate::control::own_settings(a.settings.wait_for_settings)?;
        (Some(owner), None)
    } else if first.trial.drop_caches || first.trial.compact {
        // Acting on the whole machine without changing a setting: its owner, after waiting.
        (Some(crate::control::own_for_actions()?), None)
    } else {
        (None, crate::control::read_settings()?)
    };
    let mut planned = plan(a)?;
    if held.0.is_none() {
        planned.applied = crate::control::applied();
    }
    Ok((planned, held))
}

/// Whether running `plan` changes the machine's state: an arm's or the warm design's
/// system-wide knobs, or a condition (it fragments, fills or compacts the machine's memory).
pub fn changes_settings(plan: &Plan) -> bool {
    plan.arms.iter().any(|x| !x.system.is_empty())
        || !plan.conditions.is_empty()
        || plan
            .server
            .as_ref()
            .and_then(|s| s.warm.as_ref())
            .is_some_and(|w| !w.side_by_side.system.is_empty())
}

pub fn plan_as(a: &RunArgs, privileged: bool) -> Result<Plan, UsageError> {
    plan_with(a, privileged, None)
}

/// The server's part of the plan: its words, its readiness probe (given, or the preset's),
/// and the preset's arms (printed so they can be copied and changed).
fn server_plan(
    a: &RunArgs,
    pages: Option<u64>,
) -> Result<(Option<ServerPlan>, Vec<Arm>), UsageError> {
    use crate::backing::services;
    let service = a.preset.as_deref().filter(|p| services::is_service(p));
    let Some(server) = &a.server else {
        if let Some(p) = service {
            return Err(UsageError(format!(
                "--preset {p} is for a server: give --server 'COMMAND' (e.g. --server 'postgres -D DATADIR -p 5433') and the load after --"
            )));
        }
        if a.ready.is_some()
            || a.server_warmup.is_some()
            || a.server_pidfile.is_some()
            || a.server_data.is_some()
        {
            return Err(UsageError(
                "--ready, --server-warmup, --server-pidfile and --server-data need --server 'COMMAND'".into(),
            ));
        }
        return Ok((None, Vec::new()));
    };
    let words = server_words(server, a.shell);
    if words.is_empty() {
        return Err(UsageError(
            "--server is empty; give the server's command".into(),
        ));
    }
    if !a.shell && crate::probe::program::find_program(&words[0]).is_none() {
        return Err(UsageError(format!(
            "--server: program {:?} not found (give a path, or check PATH; e.g. /usr/lib/postgresql/15/bin/postgres)",
            words[0]
        )));
    }
    let (arms, preset_ready) = match service {
        Some(p) => {
            let sp = services::preset(p, &words, pages).map_err(UsageError)?;
            let arms = sp
                .arms
                .iter()
                .map(|s| parse_arm(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(UsageError)?;
            (arms, Some(sp.ready))
        }
        None => (Vec::new(), None),
    };
    let ready = a.ready.clone().or(preset_ready).ok_or_else(|| {
        UsageError(
            "--server needs --ready: tcp:HOST:PORT, unix:PATH, cmd:COMMAND or log:REGEX (or a --preset for the server: postgres, redis, memcached, mariadb)".into(),
        )
    })?;
    // Checked as one arm's would be, with its placeholders filled.
    let sample = crate::backing::services::Slot {
        arm: "arm".into(),
        port: 1,
        host: "127.0.0.1".into(),
        dir: "/tmp".into(),
        burst: Some(1),
        replica: 0,
    };
    crate::workload::server::Ready::parse(&crate::backing::services::fill(&ready, &sample))
        .map_err(UsageError)?;
    Ok((
        Some(ServerPlan {
            argv: words,
            ready,
            ready_timeout: a.ready_timeout,
            warmup: a.server_warmup.clone(),
            stop_grace: a.stop_grace,
            pidfile: a.server_pidfile.clone(),
            preset: service.map(String::from),
            design: crate::model::run::ServiceDesign::Restart,
            design_reason: String::new(),
            warm: None,
            slots: Vec::new(),
            copy_data: server_data(a)?,
            per_arm_load: false,
            hot: a.hot,
        }),
        arms,
    ))
}

/// `--server-data`: a directory, copied into each server's `{dir}` as `{dir}/data`, which the
/// server's words must name.
fn server_data(a: &RunArgs) -> Result<Option<std::path::PathBuf>, UsageError> {
    let Some(d) = &a.server_data else {
        return Ok(None);
    };
    if !d.is_dir() {
        return Err(UsageError(format!(
            "--server-data {}: not a directory; give the data directory each server gets a copy of",
            d.display()
        )));
    }
    if !a.server.as_deref().is_some_and(|s| s.contains("{dir}")) {
        return Err(UsageError(format!(
            "--server-data {} is copied into each server's {{dir}} as {{dir}}/data: name it in --server (e.g. -D {{dir}}/data)",
            d.display()
        )));
    }
    Ok(Some(d.clone()))
}

fn plan_with(a: &RunArgs, privileged: bool, pages: Option<u64>) -> Result<Plan, UsageError> {
    let (mut server, service_arms) = server_plan(a, pages)?;
    check_service_options(a, server.is_some())?;
    let (arms, baseline) = plan_arms(a, server.as_ref(), service_arms)?;
    check_privilege(a, &arms, privileged)?;
    design::check_tmpfs(a, &arms, privileged, server.is_some())?;
    if arms.iter().any(|x| x.process.qemu.is_some()) {
        qemu::guest_size(&a.command, a.shell).map_err(UsageError)?;
    }
    let mut command = a.command.clone();
    if let Some(sp) = server.as_mut() {
        design::choose(a, sp, &arms, &mut command, pages)?;
    }
    let warm = server.as_ref().is_some_and(|s| s.warm.is_some());
    let (load_format, outputs, load_metrics) = plan_load(a, server.is_some(), &mut command)?;
    crate::options::check_confidence(a.decision.confidence)?;
    crate::options::parse_effect(&a.decision.effect.to_string())
        .map_err(|e| UsageError(format!("--effect {e}")))?;
    // Warm services replicate over lifetimes, not blocks: without --blocks they run as many
    // blocks as fit in --max-time (WARM_DEFAULT_TIME when not given).
    let warm_default = warm && a.blocks.is_none() && a.calibrate.is_none();
    let (blocks, design) = design::plan_blocks(a, warm_default)?;
    check_pin(a)?;
    let metrics = metric_defs(
        a,
        server.as_ref(),
        (load_format, &outputs, load_metrics),
        &command,
    )?;
    let seed = a.order.or_clock();
    Ok(Plan {
        notes: Vec::new(),
        conditions: parse_conditions(a, privileged)?,
        during: during(a, server.as_ref(), &words_of(&command, a.shell))?,
        applied: None,
        arms,
        baseline,
        blocks,
        warmup: a.warmup.unwrap_or(if warm { 0 } else { 1 }),
        sequential: a.sequential || a.target_halfwidth.is_some(),
        target_halfwidth: a.target_halfwidth,
        design,
        effect: a.decision.effect,
        confidence: a.decision.confidence,
        seed,
        metrics,
        sampling: if a.no_sample {
            Schedule::off()
        } else {
            Schedule {
                every: a.sample_every.max(Duration::from_millis(1)),
                ..Schedule::default()
            }
        },
        pin: a.pin,
        max_time: a
            .calibrate
            .or(a.max_time)
            .or(warm_default.then_some(WARM_DEFAULT_TIME)),
        calibrate: a.calibrate.is_some(),
        server,
        load_format,
        command,
        user: match &a.user {
            Some(u) => Some(crate::probe::user::lookup(u).ok_or_else(|| {
                UsageError(format!(
                    "--user {u:?}: no such user on this system (see getent passwd)"
                ))
            })?),
            None => None,
        },
        trace: crate::analyze::trace::catalogue::distinct(&a.trace),
        outputs,
        trial: TrialSetup {
            shell: a.shell,
            cwd: a.cwd.clone(),
            env: a.env.clone(),
            timeout: a.timeout,
            prepare: a.prepare.clone(),
            drop_caches: a.drop_caches,
            compact: a.compact,
        },
        keep_going: a.keep_going,
    })
}

/// Options that only a service run has, refused for a command.
fn check_service_options(a: &RunArgs, service: bool) -> Result<(), UsageError> {
    if !service && a.hot {
        return Err(UsageError(
            "--hot is for services (--server or a server --preset): it clears the server's referenced bits before each load; a command starts fresh every trial, so all it touched is referenced and its hot set is its resident memory (see `hugelab inspect --hot` for a running process)".into(),
        ));
    }
    let warm_only = a.burst.is_some()
        || a.lifetime_blocks.is_some()
        || a.schedule.is_some()
        || a.replicas.is_some();
    if !service && (a.design.is_some() || warm_only) {
        return Err(UsageError(
            "--design, --schedule, --burst, --lifetime-blocks and --replicas are for services: give --server 'COMMAND'"
                .into(),
        ));
    }
    Ok(())
}

/// The arms (a preset's, the service preset's, `--arm`s, or `--calibrate`'s two), checked, and
/// the baseline's index.
fn plan_arms(
    a: &RunArgs,
    server: Option<&ServerPlan>,
    service_arms: Vec<Arm>,
) -> Result<(Vec<Arm>, usize), UsageError> {
    let mut arms = match &a.preset {
        _ if server.is_some_and(|s| s.preset.is_some()) => service_arms,
        Some(p) => preset(
            p,
            crate::probe::status::has_defrag_mode(&crate::probe::Root::system()),
        )
        .map_err(UsageError)?,
        None => Vec::new(),
    };
    for s in &a.arms {
        arms.push(parse_arm(s).map_err(UsageError)?);
    }
    if let Some(x) = arms.iter().find(|x| x.process.thp_advised)
        && !crate::sys::thp_advised_supported()
    {
        return Err(UsageError(format!(
            "arm {}: process.thp=advised needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18+), which this kernel refuses; compare thp=madvise and thp=always as separate arms instead",
            x.name
        )));
    }
    if a.calibrate.is_some() {
        // Two identical arms: the given one (or the plain command) twice.
        let spec = a
            .arms
            .first()
            .and_then(|s| s.split_once('=').map(|x| x.1.to_string()))
            .unwrap_or_default();
        if a.arms.len() > 1 {
            return Err(UsageError(
                "--calibrate runs one configuration against itself: give at most one --arm".into(),
            ));
        }
        arms = vec![
            parse_arm(&format!("A1={spec}")).map_err(UsageError)?,
            parse_arm(&format!("A2={spec}")).map_err(UsageError)?,
        ];
    }
    if arms.len() < 2 {
        return Err(UsageError("give at least two arms (--arm NAME=SPEC, repeated) or a --preset (thp, malloc, jvm); an A/A check is two arms with the same spec".into()));
    }
    for (i, x) in arms.iter().enumerate() {
        if arms[..i].iter().any(|y| y.name == x.name) {
            return Err(UsageError(format!("two arms are named {:?}", x.name)));
        }
    }
    let baseline = match &a.baseline {
        Some(b) => arms.iter().position(|x| &x.name == b).ok_or_else(|| {
            UsageError(format!(
                "--baseline {b:?} is not an arm; arms: {}",
                arms.iter()
                    .map(|x| x.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
        None => 0,
    };
    Ok((arms, baseline))
}

/// What needs root, refused without it with the per-process alternative.
fn check_privilege(a: &RunArgs, arms: &[Arm], privileged: bool) -> Result<(), UsageError> {
    if !privileged {
        if let Some(x) = arms.iter().find(|x| x.needs_root()) {
            return Err(UsageError(format!(
                "arm {:?} changes system-wide settings ({}), which needs root; without root use per-process arms: process.thp=off, malloc=thp|hugetlb, jvm=…, collapse=after:…, env.*",
                x.name, x.spec
            )));
        }
        if a.drop_caches || a.compact || a.user.is_some() {
            return Err(UsageError(
                "--drop-caches, --compact and --user need root".into(),
            ));
        }
        if !a.trace.is_empty() {
            return Err(UsageError(
                "--trace needs root (tracepoints through perf_event_open)".into(),
            ));
        }
    }
    Ok(())
}

/// A load's format, the `--metric NAME=REGEX` outputs, and the metrics the format reads.
type Load = (
    Option<LoadFormat>,
    Vec<OutputMetric>,
    Vec<crate::collect::load::LoadMetric>,
);

/// The load's format (given or detected for a service), the `--metric NAME=REGEX` outputs, and
/// the metrics the format reads; the command prepared for the format.
fn plan_load(a: &RunArgs, service: bool, command: &mut Vec<String>) -> Result<Load, UsageError> {
    let mut load_format = None;
    let mut outputs = Vec::new();
    for m in &a.metrics {
        match LoadFormat::parse(m) {
            Some(f) if load_format.is_none() => load_format = Some(f),
            Some(_) => {
                return Err(UsageError(
                    "give at most one load format (--metric pgbench, redis-benchmark, memtier, sysbench, wrk or jmh)".into(),
                ));
            }
            None if !m.contains('=') => {
                return Err(UsageError(format!(
                    "--metric {m:?}: not NAME=REGEX[,higher|lower] nor a load format ({})",
                    crate::collect::load::FORMAT_NAMES
                )));
            }
            None => outputs.push(OutputMetric::parse(m).map_err(UsageError)?),
        }
    }
    if service && a.metrics.is_empty() {
        load_format = LoadFormat::detect(&words_of(command, a.shell));
    }
    let mut load_metrics = Vec::new();
    if let Some(f) = load_format {
        crate::collect::load::prepare(f, command, a.shell).map_err(UsageError)?;
        load_metrics =
            crate::collect::load::metrics(f, &words_of(command, a.shell)).map_err(UsageError)?;
    }
    if load_format == Some(LoadFormat::Jmh) && (a.sequential || a.looks.is_some()) {
        return Err(UsageError(
            "--metric jmh: JMH's rows are found in the trials' results, so none can be the metric --sequential or --looks stops on; give a fixed --blocks, or a --metric NAME=REGEX for the row to stop on".into(),
        ));
    }
    Ok((load_format, outputs, load_metrics))
}

/// The block count of a run that ends on a decision or a time, not a count.
pub const UNBOUNDED_BLOCKS: usize = 100_000;

/// `--pin`: a CPU hugelab may run on.
fn check_pin(a: &RunArgs) -> Result<(), UsageError> {
    if let Some(cpu) = a.pin {
        let allowed = crate::probe::cpu::allowed_cpus();
        if !allowed.contains(&cpu) {
            return Err(UsageError(format!(
                "--pin {cpu}: hugelab may run on CPUs {:?} only (its affinity mask); pick one of them",
                allowed
            )));
        }
    }
    Ok(())
}

/// The metric definitions: wall time, the outputs, the load's, the server's ready time (restart
/// design), the costs and an operator event's; names distinct.
fn metric_defs(
    a: &RunArgs,
    server: Option<&ServerPlan>,
    (load_format, outputs, load_metrics): (
        Option<LoadFormat>,
        &[OutputMetric],
        Vec<crate::collect::load::LoadMetric>,
    ),
    command: &[String],
) -> Result<Vec<MetricDef>, UsageError> {
    let warm = server.is_some_and(|s| s.warm.is_some());
    // A load that runs for a set time (pgbench -T, a timed burst) fixes its own wall time:
    // recorded, not a contrast.
    let fixed = crate::collect::load::fixed_duration(&words_of(command, a.shell));
    let mut metrics = vec![MetricDef {
        context: fixed && (server.is_some() || load_format.is_some()),
        ..MetricDef::contrasted("wall_s", Better::Lower)
    }];
    let outputs = outputs.iter().map(|m| (m.name.clone(), m.higher));
    let loads = load_metrics.into_iter().map(|m| (m.name, m.higher));
    metrics.extend(
        outputs
            .chain(loads)
            .map(|(name, higher)| MetricDef::contrasted(name, Better::of(higher))),
    );
    if server.is_some() && !warm {
        metrics.push(MetricDef::contrasted(SERVER_READY, Better::Lower));
    }
    let per_op = crate::analyze::costs::is_rate_of_work(
        &metrics[crate::analyze::experiment::primary_index(&metrics)].name,
    );
    metrics.extend(crate::analyze::costs::defs(server.is_some(), per_op));
    if a.during.is_some() {
        let redis = server.and_then(|s| s.preset.as_deref()) == Some("redis");
        metrics.extend(crate::analyze::costs::event_defs(redis));
    }
    for (i, m) in metrics.iter().enumerate() {
        if metrics[..i].iter().any(|x| x.name == m.name) {
            return Err(UsageError(format!(
                "two metrics are named {:?}; rename the --metric",
                m.name
            )));
        }
    }
    Ok(metrics)
}
