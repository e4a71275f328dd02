//! `hugelab run`: A/B/n experiments of any command under page configurations ("arms"),
//! interleaved in randomized complete blocks. Plan (arguments + arms → a validated [`Plan`]),
//! execute (one trial at a time through the injected [`Context`]: runner, settings guard,
//! probe root; each trial stored as it finishes), then analyse with the design the plan chose
//! and render.

use super::{UsageError, print_json};
use crate::analyze::experiment::{self, MetricDef, TrialData};
use crate::analyze::sequential::ConfidenceSequence;
use crate::analyze::verdict::{self, Better, Design, Verdict};
use crate::backing::arm::{Arm, parse_arm, preset};
use crate::collect::sampler::Schedule;
use crate::collect::trial::{Gatherer, TrialEvidence};
use crate::control::{self, Guard, Knob};
pub use crate::model::run::{Plan, RunResult};
use crate::probe::Root;
use crate::probe::cpu::Cpu;
use crate::render::progress::{Observer, Progress};
use crate::store::{ArmRow, Store, TrialRow};
use crate::units::parse_duration;
use crate::workload::child::{ProcessRunner, Runner, TrialOutcome, TrialSpec};
use anyhow::Context as _;
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.run/1";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// An arm NAME=SPEC (repeatable), SPEC = comma-separated key=value: thp, defrag, mthp.<size>,
    /// hugetlb.<size>, process.thp=off, malloc=thp|hugetlb|hugetlb-1G, jvm=off|thp|hugetlbfs,
    /// jvm.pretouch, jvm.pagesize, collapse=after:<duration>, env.<NAME>
    #[arg(long = "arm", value_name = "NAME=SPEC")]
    pub arms: Vec<String>,
    /// Arms from a preset: thp (never/madvise/always), malloc (process.thp=off/malloc=thp/malloc=hugetlb), jvm (off/thp/hugetlbfs)
    #[arg(long)]
    pub preset: Option<String>,
    /// The arm the others are compared with (default: the first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// Unmeasured runs of each arm before the blocks
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Blocks (each runs every arm once, in random order) [default: 10; with --sequential, a
    /// maximum of 1000, usually bounded by --max-time]
    #[arg(long)]
    pub blocks: Option<usize>,
    /// Stop as soon as every contrast is settled (a confidence sequence: valid however often it
    /// looks; α split across contrasts)
    #[arg(long, conflicts_with = "looks")]
    pub sequential: bool,
    /// Group-sequential O'Brien–Fleming design: K equally spaced looks up to --blocks (the
    /// maximum); stops at the first look where every contrast is settled
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..=20))]
    pub looks: Option<u32>,
    /// A/A calibration: run the command as two identical arms for this long and print the
    /// machine's noise floor (the smallest effect it can resolve per minute of running)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with_all = ["preset", "sequential", "looks"])]
    pub calibrate: Option<Duration>,
    /// Smallest effect that matters (0.01 = 1%)
    #[arg(long, default_value_t = 0.01, value_parser = super::parse_effect)]
    pub effect: f64,
    /// Confidence level
    #[arg(long, default_value_t = 0.99, value_parser = super::parse_confidence)]
    pub confidence: f64,
    /// Stop starting new blocks after this long (e.g. 10m)
    #[arg(long, value_parser = parse_duration)]
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
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Extra environment for the command, NAME=VALUE (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = super::parse_env)]
    pub env: Vec<(String, String)>,
    /// Period of the cheap memory reads of the child (/proc/PID/status); the page-table walk of
    /// smaps_rollup backs off from 4× this (at most 10 walks per trial), the same for every arm
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "20ms")]
    pub sample_every: Duration,
    /// Do not sample the child's memory (flags then rest on the kernel's THP counters alone)
    #[arg(long)]
    pub no_sample: bool,
    /// Run the child on this CPU only and hugelab on the others (less cross-talk; see README)
    #[arg(long, value_name = "CPU")]
    pub pin: Option<usize>,
    /// Run the command through /bin/sh -c
    #[arg(long)]
    pub shell: bool,
    /// Run the command as this user (when hugelab runs as root)
    #[arg(long)]
    pub user: Option<String>,
    /// Extract a number from the command's output: NAME=REGEX[,higher|lower] (first capture group)
    #[arg(long = "metric", value_name = "NAME=REGEX[,higher|lower]")]
    pub metrics: Vec<String>,
    /// Keep going when a trial fails (failed trials are kept, counted and excluded)
    #[arg(long)]
    pub keep_going: bool,
    /// Exit with code 3 when any arm is SLOWER on the primary metric (for CI)
    #[arg(long, value_parser = ["slower"])]
    pub fail_on: Option<String>,
    /// Results database (default $XDG_DATA_HOME/hugelab/results.db)
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// A label for this run in the results database
    #[arg(long)]
    pub label: Option<String>,
    /// Seed for the block order (default: from the clock; stored)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print JSON (schema hugelab.run/1)
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments (after --)
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// A custom metric extracted from output.
#[derive(Debug, Clone)]
pub struct OutputMetric {
    pub name: String,
    pub re: Regex,
    pub better: Better,
}

pub fn parse_metric(s: &str) -> Result<OutputMetric, String> {
    let (name, rest) = s
        .split_once('=')
        .ok_or_else(|| format!("--metric {s:?}: expected NAME=REGEX[,higher|lower]"))?;
    let (pat, better) = match rest.rsplit_once(',') {
        Some((p, "higher")) => (p, Better::Higher),
        Some((p, "lower")) => (p, Better::Lower),
        _ => (rest, Better::Lower),
    };
    let re = Regex::new(pat).map_err(|e| format!("--metric {name}: invalid regex: {e}"))?;
    if re.captures_len() < 2 {
        return Err(format!(
            "--metric {name}: the regex needs a capture group around the number, e.g. '([0-9.]+) MiB/sec'"
        ));
    }
    if name.is_empty() || name == "wall_s" {
        return Err(format!("--metric name {name:?} is empty or reserved"));
    }
    Ok(OutputMetric {
        name: name.into(),
        re,
        better,
    })
}

/// The first capture group of the first match in stdout or stderr, as a number.
pub fn extract(m: &OutputMetric, stdout: &str, stderr: &str) -> Option<f64> {
    [stdout, stderr]
        .iter()
        .find_map(|t| m.re.captures(t)?.get(1)?.as_str().trim().parse().ok())
}

pub fn plan(a: &RunArgs) -> Result<(Plan, Vec<OutputMetric>), UsageError> {
    let mut arms = match &a.preset {
        Some(p) => preset(p).map_err(UsageError)?,
        None => Vec::new(),
    };
    for s in &a.arms {
        arms.push(parse_arm(s).map_err(UsageError)?);
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
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
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
    }
    let outputs = a
        .metrics
        .iter()
        .map(|m| parse_metric(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;
    super::check_confidence(a.confidence)?;
    super::parse_effect(&a.effect.to_string()).map_err(|e| UsageError(format!("--effect {e}")))?;
    let open_ended = a.sequential || a.calibrate.is_some();
    let blocks = a.blocks.unwrap_or(if open_ended { 1000 } else { 10 });
    if blocks < 2 {
        return Err(UsageError("--blocks must be at least 2".into()));
    }
    if a.sequential && blocks < ConfidenceSequence::MIN_BLOCKS {
        return Err(UsageError(format!(
            "--sequential needs --blocks of at least {} (the confidence sequence starts there)",
            ConfidenceSequence::MIN_BLOCKS
        )));
    }
    let design = match (a.sequential, a.looks) {
        (true, _) => Design::Sequential {
            n_opt: verdict::SEQUENTIAL_N_OPT,
        },
        (false, Some(k)) => {
            let Some(max) = a.blocks else {
                return Err(UsageError(
                    "--looks needs --blocks N, the planned maximum (plan it from a pilot: `hugelab run --calibrate 2m` prints the blocks δ needs)".into(),
                ));
            };
            if max < 2 * k as usize {
                return Err(UsageError(format!(
                    "--looks {k} needs --blocks of at least {} (two blocks per look)",
                    2 * k
                )));
            }
            Design::GroupSequential {
                looks: k as usize,
                max_blocks: max,
            }
        }
        _ => Design::Fixed,
    };
    if let Some(cpu) = a.pin {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpu >= n {
            return Err(UsageError(format!(
                "--pin {cpu}: this machine has CPUs 0–{} ",
                n - 1
            )));
        }
    }
    let mut metrics = vec![MetricDef {
        name: "wall_s".into(),
        better: Better::Lower,
    }];
    metrics.extend(outputs.iter().map(|m| MetricDef {
        name: m.name.clone(),
        better: m.better,
    }));
    let seed = super::seed_or_clock(a.seed);
    Ok((
        Plan {
            arms,
            baseline,
            blocks,
            warmup: a.warmup,
            sequential: a.sequential,
            design,
            effect: a.effect,
            confidence: a.confidence,
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
            max_time: a.calibrate.or(a.max_time),
            calibrate: a.calibrate.is_some(),
        },
        outputs,
    ))
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

fn user_ids(name: &str) -> anyhow::Result<(u32, u32)> {
    let passwd =
        std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd for --user")?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .ok_or_else(|| UsageError(format!("--user {name:?}: no such user in /etc/passwd")).into())
}

/// A stored trial as the analysis sees it.
pub fn trial_data(t: &TrialRow) -> TrialData {
    experiment::trial_data(
        t.block,
        t.arm_idx,
        t.ok,
        t.flagged.clone(),
        t.metrics.clone(),
        &t.evidence,
    )
}

/// The side effects `execute` works through: injected so that planning, block order, arm
/// switching and storage are testable against a fake runner and a fake sysfs.
pub struct Context<'a> {
    pub runner: &'a mut dyn Runner,
    pub store: &'a mut Store,
    pub run_id: i64,
    /// Where kernel counters and noise are read (the live `/` in production).
    pub root: Root,
    pub cpu: Cpu,
    /// Makes the settings guard the first time an arm changes a system setting.
    pub guard: Box<dyn FnMut() -> anyhow::Result<Guard> + 'a>,
    /// True once the user asked to stop (first Ctrl-C): finish the trial in flight, then stop.
    pub stop: &'a dyn Fn() -> bool,
    pub progress: &'a mut dyn Observer,
}

/// What `execute` did.
#[derive(Debug, Default)]
pub struct Executed {
    pub trials: Vec<TrialRow>,
    pub blocks_done: usize,
    pub stop_reason: String,
    pub notes: Vec<String>,
    /// Stopped by the user (Ctrl-C) rather than by the plan.
    pub interrupted: bool,
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
    ctx: &mut Context,
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

/// The evidence stored with a trial: the outcome, what was gathered around it, and why it failed.
fn evidence_json(
    o: &TrialOutcome,
    ev: &TrialEvidence,
    missing: &[String],
) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(o)?;
    let e = serde_json::to_value(ev)?;
    if let (Some(v), Some(e)) = (v.as_object_mut(), e.as_object()) {
        v.extend(e.iter().map(|(k, x)| (k.clone(), x.clone())));
    }
    if !missing.is_empty() {
        v["missing_metrics"] = serde_json::to_value(missing)?;
    }
    if !o.succeeded() {
        let tail: Vec<&str> = o.stderr.lines().rev().take(5).collect();
        v["stderr_tail"] = serde_json::to_value(tail.into_iter().rev().collect::<Vec<_>>())?;
    }
    Ok(v)
}

/// What every trial of one run shares.
struct Job<'a> {
    a: &'a RunArgs,
    plan: &'a Plan,
    outputs: &'a [OutputMetric],
    base_spec: TrialSpec,
}

/// One trial of arm `arm_idx` in `block` (−1: warm-up), not yet stored.
fn trial(
    job: &Job,
    arm_idx: usize,
    block: i64,
    ctx: &mut Context,
    guard: &mut Option<Guard>,
    notes: &mut Vec<String>,
) -> anyhow::Result<TrialRow> {
    let (a, plan, outputs, base_spec) = (job.a, job.plan, job.outputs, &job.base_spec);
    let arm = &plan.arms[arm_idx];
    for s in apply_system(arm, &plan.arms, ctx, guard)? {
        if !notes.contains(&s) {
            notes.push(s);
        }
    }
    if let Some(p) = &a.prepare {
        let st = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(p)
            .status()
            .with_context(|| format!("--prepare {p:?}"))?;
        if !st.success() {
            anyhow::bail!("--prepare {p:?} failed ({st})");
        }
    }
    if a.drop_caches {
        control::drop_caches()?;
    }
    if a.compact {
        control::compact_memory()?;
    }
    let spec = TrialSpec {
        config: arm.process.clone(),
        ..base_spec.clone()
    };
    let schedule = if arm.process.no_sample {
        Schedule::off()
    } else {
        plan.sampling
    };
    let mut gatherer = Gatherer::new(&ctx.root, &ctx.cpu, schedule);
    let o = ctx.runner.run(&spec, &mut gatherer)?;
    let ev = gatherer.finish(o.user_ns + o.sys_ns);
    let mut metrics = BTreeMap::from([("wall_s".to_string(), o.wall_ns as f64 / 1e9)]);
    let mut missing = Vec::new();
    for m in outputs {
        match extract(m, &o.stdout, &o.stderr) {
            Some(v) => {
                metrics.insert(m.name.clone(), v);
            }
            None => missing.push(m.name.clone()),
        }
    }
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
    let flagged = experiment::flag(
        arm.expects_huge(),
        &ev.memory,
        &ev.kernel_counters,
        &o.stdout,
        &o.stderr,
    );
    Ok(TrialRow {
        block,
        arm_idx: arm_idx as i64,
        seq: 0,
        ok: o.succeeded() && missing.is_empty(),
        flagged,
        metrics,
        evidence: evidence_json(&o, &ev, &missing)?,
    })
}

/// Whether every contrast of the primary metric is settled by the plan's design.
fn settled(plan: &Plan, trials: &[TrialRow]) -> bool {
    let primary = &plan.metrics[plan.metrics.len().min(2) - 1];
    let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
    let d: Vec<Vec<f64>> = (0..plan.arms.len())
        .filter(|i| *i != plan.baseline)
        .map(|i| experiment::log_ratios(&data, i, plan.baseline, &primary.name))
        .collect();
    verdict::contrasts(
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

/// Run the experiment through `ctx`, storing each trial as it finishes.
pub fn execute(
    a: &RunArgs,
    plan: &Plan,
    outputs: &[OutputMetric],
    ctx: &mut Context,
) -> anyhow::Result<Executed> {
    let started = Instant::now();
    let user = a.user.as_deref().map(user_ids).transpose()?;
    let base_spec = TrialSpec {
        argv: a.command.clone(),
        shell: a.shell,
        cwd: a.cwd.clone(),
        env: a.env.clone(),
        config: Default::default(),
        timeout: a.timeout,
        user,
        pin_cpu: plan.pin,
    };
    let job = Job {
        a,
        plan,
        outputs,
        base_spec,
    };
    let mut guard: Option<Guard> = None;
    let mut x = Executed {
        stop_reason: format!("{} blocks done", plan.blocks),
        ..Default::default()
    };
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    let mut flagged_arms: Vec<usize> = Vec::new();
    let mut seq = 0i64;
    let stopped = |ctx: &Context, x: &mut Executed, what: String| {
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
    for w in 0..plan.warmup {
        for arm in 0..plan.arms.len() {
            ctx.progress.message(&format!(
                "warm-up {}/{} · {}",
                w + 1,
                plan.warmup,
                plan.arms[arm].name
            ));
            trial(&job, arm, -1, ctx, &mut guard, &mut x.notes)?;
            ctx.progress.step("");
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
            let mut t = trial(&job, arm, block as i64, ctx, &mut guard, &mut x.notes)?;
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
                if !a.keep_going {
                    let last = x.trials.last().expect("just pushed");
                    x.stop_reason = format!(
                        "trial of arm {} failed (exit {:?}{}{}); use --keep-going to continue past failures",
                        plan.arms[arm].name,
                        last.evidence["exit_code"],
                        if last.evidence["timed_out"] == true {
                            ", killed by --timeout"
                        } else {
                            ""
                        },
                        last.evidence
                            .get("missing_metrics")
                            .map(|m| format!(", metric not found in output: {m}"))
                            .unwrap_or_default()
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
        if block_ok && is_look(&plan.design, x.blocks_done) && settled(plan, &x.trials) {
            x.stop_reason = format!(
                "every contrast settled after {} blocks ({})",
                x.blocks_done,
                plan.design.describe(plan.arms.len() - 1, plan.confidence)
            );
            break;
        }
    }
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
        let d = experiment::log_ratios(&data, i, plan.baseline, "wall_s");
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
        format!(" · {} (unadjusted, for orientation)", parts.join(", "))
    }
}

/// Keep hugelab's own threads off the child's CPU (`--pin`).
fn pin_self_away_from(cpu: usize) -> anyhow::Result<()> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        return Ok(());
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in (0..n).filter(|c| *c != cpu) {
        // SAFETY: c < n ≤ CPU_SETSIZE.
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
    let (plan, outputs) = plan(&a)?;
    let db = a.db.clone().unwrap_or_else(crate::store::default_path);
    let mut store = Store::open(&db)?;
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
    control::defer_first_signal();
    if let Some(cpu) = plan.pin {
        pin_self_away_from(cpu)?;
    }
    let mut progress = Progress::stderr("hugelab run", false);
    let cpu = crate::probe::cpu::read(&Root::system()).unwrap_or_default();
    let mut runner = ProcessRunner;
    let stop = control::stop_requested;
    let mut ctx = Context {
        runner: &mut runner,
        store: &mut store,
        run_id,
        root: Root::system(),
        cpu,
        guard: Box::new(|| Ok(Guard::system()?)),
        stop: &stop,
        progress: &mut progress,
    };
    let result = execute(&a, &plan, &outputs, &mut ctx);
    drop(ctx);
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
    let primary = &plan.metrics[plan.metrics.len().min(2) - 1].name;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let noise = experiment::noise_attribution(&names, &data, primary, cpus);
    let calibration = plan.calibrate.then(|| {
        let d = experiment::log_ratios(&data, 1, 0, primary);
        let secs = started.elapsed().as_secs_f64() / x.blocks_done.max(1) as f64;
        crate::analyze::calibrate::calibrate(&d, secs, plan.effect, plan.confidence)
    });
    let interrupted = x.interrupted;
    let status = if interrupted {
        "interrupted"
    } else {
        "complete"
    };
    store.finish_run(run_id, status, Some(&serde_json::to_value(&report)?))?;
    let res = RunResult {
        schema: SCHEMA,
        run_id,
        db: db.display().to_string(),
        command: a.command.clone(),
        plan,
        blocks_done: x.blocks_done,
        stop_reason: x.stop_reason,
        report,
        noise,
        calibration,
        notes: x.notes,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    if a.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::run::render(&res));
    }
    let primary = &res.report.metrics[res.report.metrics.len().min(2) - 1];
    let slower = primary
        .contrasts
        .iter()
        .any(|(_, c)| c.as_ref().is_some_and(|c| c.verdict == Verdict::Slower));
    Ok(if interrupted {
        130
    } else if a.fail_on.is_some() && slower {
        3
    } else {
        0
    })
}
