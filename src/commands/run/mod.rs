//! `hugelab run`: A/B/n experiments of any command under page configurations ("arms"),
//! interleaved in randomized complete blocks. Plan (arguments + arms → a validated [`Plan`]),
//! execute (one trial at a time through the injected [`Effects`]: runner, settings guard,
//! probe root; each trial stored as it finishes), then analyse with the design the plan chose
//! and render.

use super::print_json;
use crate::analyze::experiment::{self, TrialData};
use crate::analyze::verdict::Verdict;
use crate::control::{self, Guard};
pub use crate::model::run::{Plan, RunResult};
use crate::probe::Root;
use crate::render::progress::{Observer, Progress};
use crate::store::{ArmRow, Store};
use crate::units::parse_positive_duration;
use crate::workload::child::ProcessRunner;
use anyhow::Context as _;
use clap::Args;
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod design;
mod execute;
mod plan;
mod pools;
mod servers;
mod service;
pub mod tracing;
mod trial;
mod watch;

pub use crate::store::trial_data;
pub use execute::{Effects, Executed, execute};
pub use plan::{block_order, plan, plan_as};

pub const SCHEMA: &str = "hugelab.run/1";

/// Exit code of a run that stopped on a failed trial or completed no block with every trial
/// ok (its status in the results database is `failed`).
pub const EXIT_FAILED: i32 = 4;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 the run completed (whatever the verdicts); 1 an error stopped it; \
2 a usage error, found before anything ran or was stored; 3 --fail-on slower and an arm was SLOWER \
on the primary metric; 4 the run failed: it stopped on a failed trial (a non-zero exit, a signal, \
--timeout, a metric not found, a server that did not start or died) or no block completed with \
every trial ok (stored with status `failed`); 130 interrupted by Ctrl-C (completed blocks analysed).\n\
The primary metric is the first --metric (or a load parser's first metric), else wall time: \
--fail-on, --sequential and --looks decide on it."
)]
pub struct RunArgs {
    /// An arm NAME=SPEC (repeatable), SPEC = comma-separated key=value. System-wide: thp,
    /// defrag, shmem, mthp.<size>, hugetlb.<size> (a pool). Per process: process.thp=off,
    /// malloc=thp|hugetlb|hugetlb-1G, jvm=off|thp|hugetlbfs, jvm.pretouch, jvm.pagesize,
    /// collapse=after:<duration>, env.<NAME>. VMs: qemu.backing, qemu.prealloc. Evidence:
    /// sample=off, watch=<comm>, expect=huge|none; services: server.arg=<word>. Every key:
    /// docs/run.md
    #[arg(short = 'a', long = "arm", value_name = "NAME=SPEC")]
    pub arms: Vec<String>,
    /// Arms from a preset: thp (never/madvise/always), malloc (process.thp=off/malloc=thp/malloc=hugetlb),
    /// jvm (off/thp/hugetlbfs); for --server: postgres, redis, memcached, mariadb (arms, readiness,
    /// fallback signature and load parser; the arms are printed)
    #[arg(short = 'p', long)]
    pub preset: Option<String>,
    /// The arm the others are compared with (default: the first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// Unmeasured runs of each arm before the blocks [default: 1; services under the warm
    /// design: 0, their warm-up is the server's own at every lifetime start]
    #[arg(short = 'w', long, allow_negative_numbers = true, value_parser = crate::commands::parse_warmup)]
    pub warmup: Option<usize>,
    /// Blocks (each runs every arm once, in random order) [default: 10; with --sequential, a
    /// maximum of 1000, usually bounded by --max-time; services under the warm design: as many
    /// as fit in --max-time, 5 minutes by default]
    #[arg(short = 'b', long, allow_negative_numbers = true, value_parser = crate::commands::parse_count)]
    pub blocks: Option<usize>,
    /// Stop as soon as every contrast is settled (a confidence sequence for the mean log-ratio,
    /// looked at after every block; α split across contrasts). Its time-uniform validity is
    /// asymptotic: the sample SD is plugged in for the unknown one (the simulation study
    /// measures the false-positive rate it really has)
    #[arg(long, conflicts_with = "looks")]
    pub sequential: bool,
    /// Group-sequential O'Brien–Fleming design: K equally spaced looks up to --blocks (the
    /// maximum); stops at the first look where every contrast is settled
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..=20))]
    pub looks: Option<u32>,
    /// A/A calibration: run the command as two identical arms for this long and print the
    /// machine's noise floor (the smallest effect it can resolve per minute of running)
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, conflicts_with_all = ["preset", "sequential", "looks"])]
    pub calibrate: Option<Duration>,
    #[command(flatten)]
    pub decision: super::options::Decision,
    /// Stop starting new blocks after this long (e.g. 10m)
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub max_time: Option<Duration>,
    /// Shell command run before every trial (not measured)
    #[arg(long)]
    pub prepare: Option<String>,
    /// Drop the page cache before every trial (root)
    #[arg(long)]
    pub drop_caches: bool,
    /// Compact memory before every trial, so each arm starts from the same fragmentation (root)
    #[arg(long)]
    pub compact: bool,
    /// Kill a trial (and its process group) after this long
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub timeout: Option<Duration>,
    /// Working directory of the command (and of the server with --server)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Extra environment for the command, NAME=VALUE (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = super::parse_env)]
    pub env: Vec<(String, String)>,
    /// Period of the cheap memory reads of the child (/proc/PID/status); the page-table walk of
    /// smaps_rollup backs off from 4× this (at most 10 walks per trial), the same for every arm
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "20ms")]
    pub sample_every: Duration,
    /// Do not sample the child's memory (flags then rest on the kernel's THP counters alone)
    #[arg(long)]
    pub no_sample: bool,
    /// Trace the kernel's costs per trial (root), comma-separated kinds; each trial's histograms
    /// are stored with it and the stall time per trial is summarised per arm
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub trace: Vec<crate::analyze::trace::TraceKind>,
    /// Run the child on this CPU only and hugelab on the others (less cross-talk; docs/run.md)
    #[arg(long, value_name = "CPU")]
    pub pin: Option<usize>,
    /// Run the command through /bin/sh -c
    #[arg(long)]
    pub shell: bool,
    /// Run the command as this user (when hugelab runs as root)
    #[arg(long)]
    pub user: Option<String>,
    /// Extract a number from the command's output: NAME=REGEX[,higher|lower] (first capture
    /// group), or a load generator's output read by a built-in parser: pgbench (tps and
    /// latency p50/p95/p99/p99.9 from its per-transaction log, which hugelab asks for),
    /// redis-benchmark (--csv, per -t test: rps, p50, p99), memtier, sysbench, wrk, jmh. With
    /// --server, a known load program is read without --metric
    #[arg(
        short = 'm',
        long = "metric",
        value_name = "NAME=REGEX[,higher|lower]|FORMAT"
    )]
    pub metrics: Vec<String>,
    /// Measure a service: start this server for every trial under the arm's configuration
    /// (per-process keys, env.* and server.arg=WORD apply to the server, not to the load),
    /// wait until it is ready, run the command after -- as its load (the measured trial),
    /// then stop it (SIGTERM, --stop-grace, SIGKILL of its process tree) and read its memory.
    /// A fresh server per trial is the default because page state carries over: pages
    /// already faulted keep their size after a sysfs change, and fragmentation persists
    #[arg(long, value_name = "COMMAND")]
    pub server: Option<String>,
    /// When the server is ready: tcp:HOST:PORT, unix:PATH, cmd:COMMAND (exits 0), log:REGEX
    /// (a line of its output); a --preset brings one
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Fail the trial when the server is not ready after this long
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "60s")]
    pub ready_timeout: Duration,
    /// A shell command run against the ready server before the load (not measured)
    #[arg(long, value_name = "COMMAND")]
    pub server_warmup: Option<String>,
    /// For a server that daemonizes (its command exits 0 once the daemon runs, e.g. pg_ctl
    /// start, redis-server --daemonize yes): the pid file it writes; the daemon and its
    /// descendants are then the server that is read and stopped
    #[arg(long, value_name = "PATH")]
    pub server_pidfile: Option<PathBuf>,
    /// How a service is measured: warm (every arm's server up at once, warmed, one short load
    /// burst per arm in random order per block, all restarted every lifetime; the default
    /// wherever the arms can run side by side) or restart (a fresh server per trial)
    #[arg(long, value_enum, value_name = "DESIGN")]
    pub design: Option<crate::model::run::ServiceDesign>,
    /// Services: clear the server tree's referenced bits before each load and read what the
    /// load touched after it (its hot memory): the answer's "why" then holds the hot memory,
    /// not all the memory that matters, against the TLB reach `bench tlb` measured. Perturbs
    /// reclaim's aging of the server's pages
    #[arg(long)]
    pub hot: bool,
    /// Warm design: the length of each load burst, filled into {burst} (whole seconds; a
    /// pgbench -T of a preset becomes {burst}); default: calibrated against the first server
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub burst: Option<Duration>,
    /// Warm design: blocks per server lifetime before every server is restarted; default:
    /// sized from the first lifetimes (restart cost against burst cost)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub lifetime_blocks: Option<u32>,
    /// Warm design: a lifetime ends after this long even with blocks to go
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "60s")]
    pub lifetime_max: Duration,
    /// After SIGTERM, how long the server may take to exit before it is killed
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "15s")]
    pub stop_grace: Duration,
    /// Keep going when a trial fails (failed trials are kept, counted and excluded)
    #[arg(long)]
    pub keep_going: bool,
    /// Exit with code 3 when any arm is SLOWER on the primary metric (for CI; the primary
    /// metric is the first --metric, or a load parser's first, else wall_s)
    #[arg(long, value_enum)]
    pub fail_on: Option<super::options::FailOn>,
    #[command(flatten)]
    pub store: super::options::Database,
    /// Do not store the run (the results database is not opened; `results show` cannot see it)
    #[arg(long, conflicts_with_all = ["db", "label"])]
    pub no_save: bool,
    /// A label for this run in the results database
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub order: super::options::Seed,
    #[command(flatten)]
    pub out: super::options::Json,
    /// After the answer, print every table: per-metric summaries, evidence, machine noise,
    /// servers (what `results show` prints for a stored run)
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    pub progress: super::options::Quiet,
    /// The command and its arguments (after --)
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `--trace`: per latency and count kind that saw anything, the mean per trial of each arm.
fn trace_summary(plan: &Plan, trials: &[crate::store::TrialRow]) -> Vec<String> {
    use std::collections::BTreeMap;
    // kind → arm → (trials, total ns or count, stalls)
    let mut lat: BTreeMap<String, BTreeMap<usize, (u64, f64, f64)>> = BTreeMap::new();
    let mut cnt: BTreeMap<String, BTreeMap<usize, (u64, f64)>> = BTreeMap::new();
    let mut lost = 0u64;
    for t in trials.iter().filter(|t| t.block >= 0) {
        lost += t.trace_lost();
        let Some(w) = t.trace() else {
            continue;
        };
        let arm = t.arm_idx as usize;
        for l in w.latencies {
            let e = lat.entry(l.kind).or_default().entry(arm).or_default();
            e.0 += 1;
            e.1 += l.hist.total_ns as f64;
            e.2 += l.hist.count as f64;
        }
        for c in w.counts {
            let e = cnt.entry(c.kind).or_default().entry(arm).or_default();
            e.0 += 1;
            e.1 += c.total as f64;
        }
    }
    let name = |i: &usize| plan.arms[*i].name.clone();
    let mut out = Vec::new();
    for (kind, arms) in &lat {
        if arms.values().all(|v| v.2 == 0.0) {
            continue;
        }
        let parts: Vec<String> = arms
            .iter()
            .map(|(i, (n, ns, k))| {
                let n = (*n).max(1) as f64;
                let what = if kind.ends_with("compaction") {
                    "zone compactions"
                } else {
                    "stalls"
                };
                format!("{} {:.1} ms ({:.1} {what})", name(i), ns / n / 1e6, k / n)
            })
            .collect();
        out.push(format!(
            "trace, mean per trial: {kind}: {}",
            parts.join(" · ")
        ));
    }
    for (kind, arms) in &cnt {
        if arms.values().all(|v| v.1 == 0.0) {
            continue;
        }
        let parts: Vec<String> = arms
            .iter()
            .map(|(i, (n, c))| format!("{} {:.1}", name(i), c / (*n).max(1) as f64))
            .collect();
        out.push(format!(
            "trace, mean per trial: {kind}: {}",
            parts.join(" · ")
        ));
    }
    if out.is_empty() {
        out.push(format!(
            "trace ({}): no events in any trial's process tree",
            crate::analyze::trace::catalogue::names(&plan.trace)
        ));
    }
    if lost > 0 {
        out.push(format!(
            "trace: the kernel dropped {lost} records during trials (ring buffers full): the means above are lower bounds"
        ));
    }
    out
}

/// `--trace`: each arm's stall time per trial against the baseline's, by paired blocks.
fn stall_contrasts_of(
    plan: &Plan,
    trials: &[crate::store::TrialRow],
) -> Vec<crate::analyze::trace::StallContrast> {
    let names: Vec<String> = plan.arms.iter().map(|a| a.name.clone()).collect();
    crate::store::analysis::stall_contrasts(trials, &names, plan.baseline, plan.confidence)
}

/// A fixed design whose blocks cannot give any signed-rank interval at the level of the first
/// (strictest) Holm step: said before the first trial, with the blocks it needs.
fn too_few_blocks(plan: &Plan) -> Option<String> {
    if !matches!(plan.design, crate::analyze::verdict::Design::Fixed) {
        return None;
    }
    let m = plan.arms.len().saturating_sub(1).max(1);
    let level = 1.0 - (1.0 - plan.confidence) / m as f64;
    let need = crate::analyze::stats::min_pairs_for_interval(level);
    (plan.blocks < need).then(|| {
        format!(
            "{} blocks are too few for a signed-rank interval at {:.2}% (the first Holm step of {m} contrasts at {:.0}%): every verdict will be INCONCLUSIVE; give --blocks {need} or more, or --sequential",
            plan.blocks,
            level * 100.0,
            plan.confidence * 100.0
        )
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

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let plan = plan(&a)?;
    let db = a
        .store
        .db
        .clone()
        .unwrap_or_else(crate::store::default_path);
    let mut store = if a.no_save {
        Store::in_memory()?
    } else {
        Store::open(&db)?
    };
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
    // The machine's huge-page state as the run starts, for the report.
    let mut stored_plan = serde_json::to_value(&plan)?;
    if let Ok(s) = crate::probe::status::probe(&Root::system()) {
        stored_plan["system"] = serde_json::to_value(s)?;
    }
    let run_id = store.create_run(
        a.label.as_deref(),
        &a.command,
        kernel.as_deref(),
        "running",
        &stored_plan,
        &arm_rows,
    )?;
    control::defer_first_signal(
        "stopping after the trial in flight (it is kept); settings are then restored and the completed blocks analysed; a second Ctrl-C kills that trial",
    );
    if let Some(cpu) = plan.pin {
        pin_self_away_from(cpu)?;
    }
    let mut progress = Progress::stderr("hugelab run", a.progress.quiet);
    if let Some(sp) = plan.server.as_ref().filter(|s| s.preset.is_some()) {
        // The preset's arms as options, to copy and change.
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
    for n in &plan.notes {
        progress.note(n);
    }
    let too_few = too_few_blocks(&plan);
    if let Some(w) = &too_few {
        progress.note(w);
    }
    let cpu = crate::probe::cpu::read(&Root::system()).unwrap_or_default();
    let mut runner = ProcessRunner;
    let stop = control::stop_requested;
    let mut trace = if plan.trace.is_empty() {
        None
    } else {
        match tracing::TrialTrace::open(&plan.trace) {
            Ok(t) => Some(t),
            Err(e) => {
                store.finish_run(run_id, "failed", None)?;
                return Err(e);
            }
        }
    };
    let trace_notes = trace.as_ref().map(|t| t.notes.clone()).unwrap_or_default();
    let mut ctx = Effects {
        runner: &mut runner,
        store: &mut store,
        run_id,
        root: Root::system(),
        cpu,
        guard: Box::new(|| Ok(Guard::system()?)),
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
            store.finish_run(run_id, "failed", None)?;
            return Err(e.context(format!(
                "run {run_id} stopped; its completed trials are in {}",
                db.display()
            )));
        }
    };
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    let data: Vec<TrialData> = x.trials.iter().map(trial_data).collect();
    let report = experiment::analyse(
        &names,
        plan.baseline,
        &data,
        &plan.metrics,
        plan.effect,
        plan.confidence,
        &plan.design,
    );
    let primary = &plan.primary().name;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let noise = experiment::noise_attribution(&names, &data, primary, cpus);
    let calibration = plan.calibrate.then(|| {
        let d = experiment::log_ratios(&data, 1, 0, primary);
        let secs = started.elapsed().as_secs_f64() / x.blocks_done.max(1) as f64;
        crate::analyze::calibrate::calibrate(&d, secs, plan.effect, plan.confidence)
    });
    let interrupted = x.interrupted;
    let mut stop_reason = x.stop_reason;
    let complete = report
        .metrics
        .iter()
        .find(|m| m.metric.name == *primary)
        .map_or(0, |m| m.complete_blocks);
    let failed = x.failed || (!interrupted && complete == 0);
    if failed && !x.failed {
        stop_reason = format!(
            "{stop_reason}; no block completed with every arm's trial ok ({} failed trials), so there is nothing to compare",
            x.trials.iter().filter(|t| t.block >= 0 && !t.ok).count()
        );
    }
    let status = if interrupted {
        "interrupted"
    } else if failed {
        "failed"
    } else {
        "complete"
    };
    store.finish_run(run_id, status, Some(&serde_json::to_value(&report)?))?;
    let mut notes = trace_notes;
    notes.extend(too_few);
    notes.extend(x.notes);
    let mut trace_stalls = Vec::new();
    if !plan.trace.is_empty() {
        notes.extend(trace_summary(&plan, &x.trials));
        trace_stalls = stall_contrasts_of(&plan, &x.trials);
    }
    let backings: Vec<_> = plan
        .arms
        .iter()
        .map(|x| x.process.qemu.map(|q| q.backing))
        .collect();
    let vm_advice = match crate::backing::qemu::guest_size(&a.command, a.shell) {
        Ok(guest) if backings.iter().any(Option::is_some) && x.blocks_done >= 2 => {
            let nodes = crate::probe::hugetlb::read(&Root::system())
                .ok()
                .and_then(|p| p.first().map(|p| p.nodes.len()))
                .unwrap_or(1);
            crate::analyze::vm::advise(&report, &backings, guest, nodes)
        }
        _ => None,
    };
    let servers = if plan.server.is_some() {
        let measured: Vec<(usize, f64, &serde_json::Value)> = x
            .trials
            .iter()
            .filter(|t| t.block >= 0)
            .map(|t| {
                (
                    t.arm_idx as usize,
                    t.metrics.get("wall_s").copied().unwrap_or(0.0),
                    &t.evidence,
                )
            })
            .collect();
        let mut s = crate::analyze::server::summarise(&names, &measured);
        let sds = crate::analyze::lifetimes::arm_instance_sds(&data, names.len(), primary);
        for (x, sd) in s.iter_mut().zip(sds) {
            x.instance_sd = sd;
        }
        let first = crate::analyze::lifetimes::first_burst_effects(
            &data,
            names.len(),
            primary,
            plan.confidence,
        );
        for (x, e) in s.iter_mut().zip(first) {
            x.first_burst = e.map(|e| {
                let p = crate::analyze::verdict::to_percent(e);
                (p.point, p.lo, p.hi)
            });
        }
        s
    } else {
        Vec::new()
    };
    let res = RunResult {
        schema: SCHEMA,
        run_id,
        db: if a.no_save {
            String::new()
        } else {
            db.display().to_string()
        },
        command: a.command.clone(),
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
        tlb: crate::commands::stored::measured_tlb(&Some(db.clone())),
    };
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::run::render(&res, a.verbose));
    }
    let primary = res.plan.primary().name.clone();
    let slower = res
        .report
        .metrics
        .iter()
        .filter(|m| m.metric.name == primary)
        .flat_map(|m| m.contrasts.iter())
        .any(|(_, c)| c.as_ref().is_some_and(|c| c.verdict == Verdict::Slower));
    Ok(if interrupted {
        130
    } else if failed {
        EXIT_FAILED
    } else if a.fail_on.is_some() && slower {
        3
    } else {
        0
    })
}
