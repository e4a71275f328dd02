//! `hugelab trace`: the kernel's huge-page costs as latency histograms, from stable tracepoints
//! only (perf_event_open, no BPF): system-wide for a duration, one process, or a command's
//! process tree from exec to exit; one window or one per `--interval`.

use super::{UsageError, print_json};
use crate::analyze::trace::catalogue::{self, distinct};
use crate::analyze::trace::{Aggregator, TraceKind, kernel_checks, tracepoints};
use crate::collect::tracepoints::{Event, Tracefs, Tracer};
use crate::model::trace::{MissingEvent, TraceResult};
use crate::probe::Root;
use crate::probe::process::comm;
use crate::render::progress::Observer;
use crate::render::trace as render;
use crate::units::parse_positive_duration;
use clap::Args;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.trace/1";
const FORK: &str = "sched:sched_process_fork";

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// What to trace, comma-separated [default: compaction,reclaim,migrate,khugepaged; alloc,
    /// tlb and faults fire on hot paths and cost more]
    #[arg(long, short, value_name = "KINDS", value_delimiter = ',')]
    pub events: Vec<TraceKind>,
    /// How long to trace system-wide or a --pid [default: 10s; with --interval, until Ctrl-C]
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// One histogram per interval, like vmstat
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub interval: Option<Duration>,
    /// Only this process (all its threads); the trace ends when it exits
    #[arg(long)]
    pub pid: Option<u32>,
    #[command(flatten)]
    pub out: crate::options::Json,
    #[command(flatten)]
    pub progress: crate::options::Quiet,
    /// A command to trace from exec to exit, with its children: `hugelab trace -- CMD ARGS…`
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Which processes a trace keeps.
enum Scope {
    All,
    Pid(u32),
    /// The command's process tree, grown by fork events.
    Tree(BTreeSet<u32>),
}

impl Scope {
    fn keeps(&self, pid: u32) -> bool {
        match self {
            Scope::All => true,
            Scope::Pid(p) => *p == pid,
            Scope::Tree(s) => s.contains(&pid),
        }
    }
}

/// A process that still runs (a zombie has exited, even while its parent has not reaped it).
fn alive(pid: u32) -> bool {
    crate::probe::process::Proc::system(pid).alive()
}

fn cpu_time() -> f64 {
    // SAFETY: getrusage fills a zeroed rusage for this process.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// What a trace needs besides its arguments: checked kinds, the scope and when it ends.
struct Plan {
    kinds: Vec<TraceKind>,
    duration: Option<Duration>,
    interval: Option<Duration>,
}

fn plan(a: &TraceArgs) -> Result<Plan, UsageError> {
    let kinds = if a.events.is_empty() {
        TraceKind::DEFAULT.to_vec()
    } else {
        distinct(&a.events)
    };
    if a.pid.is_some() && !a.command.is_empty() {
        return Err(UsageError(
            "give --pid or a command after --, not both".into(),
        ));
    }
    if let Some(i) = a.interval
        && i < Duration::from_millis(100)
    {
        return Err(UsageError(format!(
            "--interval {i:?} is too short: at least 100ms"
        )));
    }
    if let Some(p) = a.pid
        && !alive(p)
    {
        return Err(UsageError(format!("--pid {p}: no such process")));
    }
    let duration = match (a.duration, a.interval, a.command.is_empty()) {
        (Some(d), _, _) => Some(d),
        (None, None, true) => Some(Duration::from_secs(10)),
        _ => None,
    };
    Ok(Plan {
        kinds,
        duration,
        interval: a.interval,
    })
}

pub fn run(a: TraceArgs) -> anyhow::Result<i32> {
    let p = plan(&a)?;
    let tfs = Tracefs::open()?;
    let mut tracer = open_tracer(&tfs, &p.kinds, !a.command.is_empty())?;
    let fork = tracer.index(FORK);
    let fork_format = fork.map(|i| tracer.sources[i].format.clone());
    let names: Vec<String> = tracer.sources.iter().map(|s| s.name.clone()).collect();
    let mut agg = Aggregator::new(names.clone(), tracer.formats());
    let kernel = crate::probe::cpu::kernel_release(&Root::system())
        .ok()
        .flatten();
    let mut notes: Vec<String> = tfs.note.iter().cloned().collect();
    notes.extend(kinds_note(&p.kinds));
    crate::control::defer_first_signal("stopping: the histograms so far follow");
    tracer.enable()?;
    // The kernel's counters are system-wide: compared only with a system-wide trace.
    let system_wide = a.pid.is_none() && a.command.is_empty();
    let vmstat = || {
        if system_wide {
            crate::probe::thp::read_vmstat(&Root::system()).unwrap_or_default()
        } else {
            BTreeMap::new()
        }
    };
    let mut vm_start = vmstat();
    let cpu0 = cpu_time();
    let started = Instant::now();
    let (mut scope, mut child) = start_scope(&a)?;
    let scope_text = scope_words(&scope, &a);
    let mut comms: BTreeMap<u32, String> = BTreeMap::new();
    if let Some(c) = &child {
        comms.insert(c.id(), a.command[0].rsplit('/').next().unwrap_or("").into());
    }
    let mut result = TraceResult {
        kernel,
        scope: scope_text,
        notes,
        ..new_result(&names, &tracer)
    };
    if !a.out.json {
        print!("{}", render::header(&result));
    }
    let mut window_start = started;
    let (mut progress, bar) = progress_bar(&a, &p);
    let forks = (fork, fork_format.as_ref());
    let feed = |batch: Vec<Event>,
                scope: &mut Scope,
                agg: &mut Aggregator,
                comms: &mut BTreeMap<u32, String>| {
        feed_events(batch, forks, scope, agg, comms)
    };
    loop {
        let batch = tracer.poll(Duration::from_millis(100));
        feed(batch, &mut scope, &mut agg, &mut comms);
        let now = Instant::now();
        if bar.is_some() {
            progress.set(now.duration_since(started).as_secs());
        }
        let ended = why_ended(&p, now.duration_since(started), &scope, child.as_mut())?;
        let done = ended.is_some();
        if let Some((why, code)) = ended {
            result.ended = why;
            result.exit_code = code;
        }
        let window_due = p
            .interval
            .is_some_and(|i| now.duration_since(window_start) >= i);
        if done || window_due {
            // The kernel's own counts over the same window (read while the events are on).
            let vm_now = vmstat();
            if done {
                tracer.disable();
                let rest = tracer.drain();
                feed(rest, &mut scope, &mut agg, &mut comms);
            }
            let mut w = agg.take(
                window_start.duration_since(started).as_secs_f64(),
                now.duration_since(window_start).as_secs_f64(),
                &|pid| comms.get(&pid).cloned().unwrap_or_else(|| "?".into()),
            );
            if system_wide {
                let delta: BTreeMap<String, u64> = vm_now
                    .iter()
                    .map(|(k, v)| (k.clone(), v.saturating_sub(*vm_start.get(k).unwrap_or(v))))
                    .collect();
                w.kernel = kernel_checks(&w, &delta);
            }
            vm_start = vm_now;
            // Names are looked up again in the next window: the map stays as small as a window.
            comms.retain(|pid, _| child.as_ref().is_some_and(|c| c.id() == *pid));
            if !a.out.json {
                print!("{}", render::window(&w));
            }
            result.windows.push(w);
            window_start = now;
        }
        if done {
            break;
        }
    }
    progress.done();
    result.lost = tracer.lost;
    result.self_cpu_s = cpu_time() - cpu0;
    drop(tracer);
    drop(tfs); // unmounts tracefs if this trace mounted it
    if a.out.json {
        print_json(&result)?;
    } else {
        print!("{}", render::footer(&result));
    }
    Ok(if crate::control::stop_requested() {
        130
    } else {
        0
    })
}

/// The tracepoints of `kinds` opened (and `sched_process_fork` for a command's tree); an
/// error when none of the kinds' could be.
fn open_tracer(tfs: &Tracefs, kinds: &[TraceKind], command: bool) -> anyhow::Result<Tracer> {
    let mut wanted: Vec<(&str, Option<&str>)> = tracepoints(kinds);
    if command {
        wanted.push((FORK, None));
    }
    let tracer = Tracer::open(tfs, &wanted);
    if tracer.sources.iter().all(|s| s.name == FORK) {
        let why = tracer
            .missing
            .first()
            .map(|m| format!("{}: {}", m.event, m.reason))
            .unwrap_or_default();
        anyhow::bail!("no tracepoint could be opened ({why})");
    }
    Ok(tracer)
}

/// The kinds traced and the others available (unless every kind was asked for).
fn kinds_note(kinds: &[TraceKind]) -> Option<String> {
    use clap::ValueEnum;
    if kinds.contains(&TraceKind::Faults) {
        return None;
    }
    let others: Vec<TraceKind> = TraceKind::value_variants()
        .iter()
        .copied()
        .filter(|k| !kinds.contains(k))
        .collect();
    Some(format!(
        "kinds: {} (also available: {})",
        catalogue::names(kinds),
        catalogue::names(&others)
    ))
}

/// What is traced: a pid, everything, or a command started now and its tree.
fn start_scope(a: &TraceArgs) -> anyhow::Result<(Scope, Option<std::process::Child>)> {
    Ok(match (a.pid, a.command.is_empty()) {
        (Some(pid), _) => (Scope::Pid(pid), None),
        (None, true) => (Scope::All, None),
        (None, false) => {
            let mut cmd = std::process::Command::new(&a.command[0]);
            cmd.args(&a.command[1..]);
            if a.out.json {
                // stdout is the JSON document: the command's output goes to stderr.
                use std::os::fd::AsFd;
                cmd.stdout(std::io::stderr().as_fd().try_clone_to_owned()?);
            }
            let c = cmd
                .spawn()
                .map_err(|e| anyhow::anyhow!("cannot start {:?}: {e}", a.command[0]))?;
            (Scope::Tree(BTreeSet::from([c.id()])), Some(c))
        }
    })
}

/// Why the trace ends now, with the command's exit code when it exited; `None`: it goes on.
fn why_ended(
    p: &Plan,
    traced: Duration,
    scope: &Scope,
    child: Option<&mut std::process::Child>,
) -> anyhow::Result<Option<(String, Option<i32>)>> {
    let mut ended = None;
    if crate::control::stop_requested() {
        ended = Some((
            "interrupted (Ctrl-C): what was collected is shown".into(),
            None,
        ));
    }
    if let Some(d) = p.duration.filter(|d| traced >= *d) {
        ended = Some((format!("--duration {d:?} reached"), None));
    }
    if let Scope::Pid(pid) = scope
        && !alive(*pid)
    {
        ended = Some((format!("pid {pid} exited: the trace ends with it"), None));
    }
    if let Some(c) = child
        && let Some(st) = c.try_wait()?
    {
        let why = match st.code() {
            Some(c) => format!("the command exited with {c}"),
            None => format!("the command ended: {st}"),
        };
        ended = Some((why, st.code()));
    }
    Ok(ended)
}

/// The scope in words: system-wide, a pid and its name, or the command and its children.
fn scope_words(scope: &Scope, a: &TraceArgs) -> String {
    match (scope, a.pid) {
        (Scope::All, _) => "system-wide".to_string(),
        (Scope::Pid(_), Some(pid)) => {
            format!("pid {pid} ({})", comm(pid).unwrap_or_else(|| "?".into()))
        }
        _ => format!("command {:?} and its children", a.command.join(" ")),
    }
}

/// A batch of events into the aggregator: a fork in a command's tree adds the child to the
/// scope; an event outside the scope is dropped; a new pid's name is looked up once.
fn feed_events(
    batch: Vec<Event>,
    (fork, fork_format): (Option<usize>, Option<&crate::probe::tracefs::Format>),
    scope: &mut Scope,
    agg: &mut Aggregator,
    comms: &mut BTreeMap<u32, String>,
) {
    for e in batch {
        if Some(e.source) == fork {
            if let (Scope::Tree(set), Some(f)) = (&mut *scope, fork_format)
                && set.contains(&e.pid)
                && let Some(child) = f.int(&e.raw, "child_pid")
            {
                set.insert(child as u32);
            }
            continue;
        }
        if !scope.keeps(e.pid) {
            continue;
        }
        if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(e.pid) {
            v.insert(comm(e.pid).unwrap_or_else(|| "?".into()));
        }
        agg.add(&e);
    }
}

/// A trace's record before its windows: the events traced and those that could not be.
fn new_result(names: &[String], tracer: &Tracer) -> TraceResult {
    TraceResult {
        schema: SCHEMA,
        kernel: None,
        scope: String::new(),
        events: names.iter().filter(|n| *n != FORK).cloned().collect(),
        missing: tracer
            .missing
            .iter()
            .map(|m| MissingEvent {
                event: m.event.clone(),
                reason: m.reason.clone(),
            })
            .collect(),
        windows: Vec::new(),
        lost: 0,
        self_cpu_s: 0.0,
        notes: Vec::new(),
        exit_code: None,
        ended: String::new(),
    }
}

/// A bar for a fixed-length trace (seconds traced of --duration), on a terminal only: the
/// header on stdout already says how long it runs.
fn progress_bar(a: &TraceArgs, p: &Plan) -> (crate::render::progress::Progress, Option<Duration>) {
    let mut progress = crate::render::progress::Progress::stderr("hugelab trace", a.progress.quiet);
    let bar = p
        .duration
        .filter(|_| p.interval.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if let Some(d) = bar {
        progress.phase("tracing (s)", Some(d.as_secs().max(1)));
    }
    (progress, bar)
}
