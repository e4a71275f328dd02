//! The trace engine: the kernel's huge-page costs as latency histograms from stable
//! tracepoints (perf_event_open, no BPF), system-wide for a duration, one process, or a
//! command's process tree from exec to exit; one window or one per interval. `hugelab trace`
//! parses its arguments into a [`Request`], shows each part of the record as it comes and
//! prints the whole.

mod scope;

use crate::analyze::trace::catalogue::{self, distinct};
use crate::analyze::trace::{Aggregator, TraceKind, kernel_checks, tracepoints};
use crate::collect::tracepoints::{Event, Tracefs, Tracer};
use crate::error::UsageError;
use crate::model::trace::{MissingEvent, TraceResult, TraceWindow};
use crate::probe::Root;
use crate::render::progress::{Observer, Progress};
use scope::Scope;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.trace/1";
const FORK: &str = "sched:sched_process_fork";

/// A trace as asked for: the kinds, its scope and when it ends.
pub struct Request {
    pub kinds: Vec<TraceKind>,
    pub duration: Option<Duration>,
    pub interval: Option<Duration>,
    pub pid: Option<u32>,
    /// A command to start and trace with its children (empty: none).
    pub command: Vec<String>,
    /// The command's stdout goes to stderr (stdout carries the JSON record).
    pub command_to_stderr: bool,
    pub quiet: bool,
}

impl Request {
    /// A checked request: the default kinds and duration filled in, contradictions refused.
    pub fn new(
        kinds: &[TraceKind],
        duration: Option<Duration>,
        interval: Option<Duration>,
        pid: Option<u32>,
        command: Vec<String>,
    ) -> Result<Request, UsageError> {
        if pid.is_some() && !command.is_empty() {
            return Err(UsageError(
                "give --pid or a command after --, not both".into(),
            ));
        }
        if let Some(i) = interval.filter(|i| *i < Duration::from_millis(100)) {
            return Err(UsageError(format!(
                "--interval {i:?} is too short: at least 100ms"
            )));
        }
        if let Some(p) = pid.filter(|p| !scope::alive(*p)) {
            return Err(UsageError(format!("--pid {p}: no such process")));
        }
        let duration = match (duration, interval, command.is_empty()) {
            (Some(d), _, _) => Some(d),
            (None, None, true) => Some(Duration::from_secs(10)),
            _ => None,
        };
        Ok(Request {
            kinds: if kinds.is_empty() {
                TraceKind::DEFAULT.to_vec()
            } else {
                distinct(kinds)
            },
            duration,
            interval,
            pid,
            command,
            command_to_stderr: false,
            quiet: false,
        })
    }

    /// The kernel's counters are system-wide: compared only with a system-wide trace.
    fn system_wide(&self) -> bool {
        self.pid.is_none() && self.command.is_empty()
    }
}

/// A part of the record, shown as soon as it is known.
pub enum Part<'a> {
    /// The record before its first window: scope, events, what could not be opened.
    Header(&'a TraceResult),
    Window(&'a TraceWindow),
}

/// Trace as `req` asks until it ends (its duration, the pid's or command's exit, Ctrl-C),
/// calling `show` with the header and each window as it closes.
pub fn trace(req: &Request, show: &mut dyn FnMut(Part)) -> anyhow::Result<TraceResult> {
    let tfs = Tracefs::open()?;
    let mut tracer = open_tracer(&tfs, &req.kinds, !req.command.is_empty())?;
    let mut t = Session::new(req, &tracer);
    t.result.notes = tfs.note.iter().cloned().collect();
    t.result.notes.extend(kinds_note(&req.kinds));
    crate::control::defer_first_signal("stopping: the histograms so far follow");
    tracer.enable()?;
    t.vm_start = t.vmstat();
    let cpu0 = cpu_time();
    let started = Instant::now();
    t.start(started)?;
    show(Part::Header(&t.result));
    let (mut progress, bar) = progress_bar(req);
    loop {
        let batch = tracer.poll(Duration::from_millis(100));
        t.feed(batch);
        let now = Instant::now();
        if bar {
            progress.set(now.duration_since(started).as_secs());
        }
        let done = t.ended(now.duration_since(started))?;
        let window_due = req
            .interval
            .is_some_and(|i| now.duration_since(t.window_start) >= i);
        if done || window_due {
            // The kernel's own counts over the same window (read while the events are on).
            let vm_now = t.vmstat();
            if done {
                tracer.disable();
                t.feed(tracer.drain());
            }
            t.close_window(started, now, vm_now);
            show(Part::Window(t.result.windows.last().expect("a window")));
        }
        if done {
            break;
        }
    }
    progress.done();
    t.result.lost = tracer.lost;
    t.result.self_cpu_s = cpu_time() - cpu0;
    drop(tracer);
    drop(tfs); // unmounts tracefs if this trace mounted it
    Ok(t.result)
}

/// A trace under way: the record so far and what the next window needs.
struct Session<'r> {
    req: &'r Request,
    result: TraceResult,
    agg: Aggregator,
    scope: Scope,
    child: Option<std::process::Child>,
    fork: Option<(usize, crate::probe::tracefs::Format)>,
    comms: BTreeMap<u32, String>,
    vm_start: BTreeMap<String, u64>,
    window_start: Instant,
}

impl<'r> Session<'r> {
    fn new(req: &'r Request, tracer: &Tracer) -> Session<'r> {
        let names: Vec<String> = tracer.sources.iter().map(|s| s.name.clone()).collect();
        let fork = tracer
            .index(FORK)
            .map(|i| (i, tracer.sources[i].format.clone()));
        Session {
            req,
            result: new_result(&names, tracer),
            agg: Aggregator::new(names, tracer.formats()),
            scope: Scope::All,
            child: None,
            fork,
            comms: BTreeMap::new(),
            vm_start: BTreeMap::new(),
            window_start: Instant::now(),
        }
    }

    /// The scope taken (the command started now), and the record's header filled.
    fn start(&mut self, at: Instant) -> anyhow::Result<()> {
        let (scope, child) = scope::start(self.req)?;
        self.result.scope = scope.words(self.req);
        if let Some(c) = &child {
            let name = self.req.command[0].rsplit('/').next().unwrap_or("");
            self.comms.insert(c.id(), name.into());
        }
        (self.scope, self.child) = (scope, child);
        self.result.kernel = crate::probe::cpu::kernel_release(&Root::system())
            .ok()
            .flatten();
        self.window_start = at;
        Ok(())
    }

    fn vmstat(&self) -> BTreeMap<String, u64> {
        if self.req.system_wide() {
            crate::probe::thp::read_vmstat(&Root::system()).unwrap_or_default()
        } else {
            BTreeMap::new()
        }
    }

    /// A batch of events into the aggregator: a fork in a command's tree adds the child to
    /// the scope; an event outside the scope is dropped; a new pid's name is looked up once.
    fn feed(&mut self, batch: Vec<Event>) {
        for e in batch {
            if let Some((source, format)) = &self.fork
                && e.source == *source
            {
                if let Some(child) = format.int(&e.raw, "child_pid") {
                    self.scope.forked(e.pid, child as u32);
                }
                continue;
            }
            if !self.scope.keeps(e.pid) {
                continue;
            }
            self.comms.entry(e.pid).or_insert_with(|| {
                crate::probe::process::comm(e.pid).unwrap_or_else(|| "?".into())
            });
            self.agg.add(&e);
        }
    }

    /// Whether the trace ends now; when it does, the record says why (and the command's exit
    /// code when it exited).
    fn ended(&mut self, traced: Duration) -> anyhow::Result<bool> {
        let Some((why, code)) =
            scope::why_ended(self.req, traced, &self.scope, self.child.as_mut())?
        else {
            return Ok(false);
        };
        self.result.ended = why;
        self.result.exit_code = code;
        Ok(true)
    }

    /// The window from its start to `now` into the record, with the kernel's own counts.
    fn close_window(&mut self, started: Instant, now: Instant, vm_now: BTreeMap<String, u64>) {
        let comms = &self.comms;
        let mut w = self.agg.take(
            self.window_start.duration_since(started).as_secs_f64(),
            now.duration_since(self.window_start).as_secs_f64(),
            &|pid| comms.get(&pid).cloned().unwrap_or_else(|| "?".into()),
        );
        if self.req.system_wide() {
            let delta: BTreeMap<String, u64> = vm_now
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.saturating_sub(*self.vm_start.get(k).unwrap_or(v)),
                    )
                })
                .collect();
            w.kernel = kernel_checks(&w, &delta);
        }
        self.vm_start = vm_now;
        // Names are looked up again in the next window: the map stays as small as a window.
        let child = self.child.as_ref().map(std::process::Child::id);
        self.comms.retain(|pid, _| child == Some(*pid));
        self.result.windows.push(w);
        self.window_start = now;
    }
}

fn cpu_time() -> f64 {
    // SAFETY: getrusage fills a zeroed rusage for this process.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
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

/// A bar for a fixed-length trace (seconds traced of the duration), on a terminal only: the
/// header on stdout already says how long it runs.
fn progress_bar(req: &Request) -> (Progress, bool) {
    let mut progress = Progress::stderr("hugelab trace", req.quiet);
    let bar = req
        .duration
        .filter(|_| req.interval.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if let Some(d) = bar {
        progress.phase("tracing (s)", Some(d.as_secs().max(1)));
    }
    (progress, bar.is_some())
}
