//! `hugelab trace`: the kernel's huge-page costs as latency histograms, from stable tracepoints
//! only (perf_event_open, no BPF): system-wide for a duration, one process, or a command's
//! process tree from exec to exit; one window or one per `--interval` (the engine: `trace`).

use super::print_json;
use crate::analyze::trace::TraceKind;
use crate::render::trace as render;
use crate::trace::{Part, Request};
use crate::units::parse_positive_duration;
use clap::Args;
use std::time::Duration;

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

pub fn run(a: TraceArgs) -> anyhow::Result<i32> {
    let mut req = Request::new(&a.events, a.duration, a.interval, a.pid, a.command)?;
    // With --json, stdout is the JSON document: the command's output goes to stderr.
    req.command_to_stderr = a.out.json;
    req.quiet = a.progress.quiet;
    let result = crate::trace::trace(&req, &mut |part| match part {
        _ if a.out.json => {}
        Part::Header(r) => print!("{}", render::header(r)),
        Part::Window(w) => print!("{}", render::window(w)),
    })?;
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
