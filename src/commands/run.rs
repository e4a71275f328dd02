//! `hugelab run`: A/B/n experiments of any command under page configurations ("arms"),
//! interleaved in randomized complete blocks, each trial stored as it finishes, with the
//! backing evidence checked and a verdict from the statistics engine.

use super::{UsageError, print_json};
use crate::analyze::experiment::{self, ExperimentReport, MetricDef, TrialData};
use crate::analyze::sequential::ConfidenceSequence;
use crate::analyze::verdict::{Better, Verdict};
use crate::backing::arm::{Arm, parse_arm, preset};
use crate::collect::{deltas, huge_counters};
use crate::control::{self, Guard, Knob};
use crate::probe::Root;
use crate::store::{ArmRow, Store, TrialRow};
use crate::units::parse_duration;
use crate::workload::child::{ProcessRunner, Runner, TrialOutcome, TrialSpec};
use anyhow::Context;
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Stop as soon as every contrast is settled (a confidence sequence: valid however often it looks)
    #[arg(long)]
    pub sequential: bool,
    /// Smallest effect that matters (0.01 = 1%)
    #[arg(long, default_value_t = 0.01)]
    pub effect: f64,
    /// Confidence level
    #[arg(long, default_value_t = 0.99)]
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
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
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

#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub arms: Vec<Arm>,
    pub baseline: usize,
    pub blocks: usize,
    pub warmup: usize,
    pub sequential: bool,
    pub effect: f64,
    pub confidence: f64,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
}

pub fn plan(a: &RunArgs) -> Result<(Plan, Vec<OutputMetric>), UsageError> {
    let mut arms = match &a.preset {
        Some(p) => preset(p).map_err(UsageError)?,
        None => Vec::new(),
    };
    for s in &a.arms {
        arms.push(parse_arm(s).map_err(UsageError)?);
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
    if !(0.0001..=0.5).contains(&a.effect) {
        return Err(UsageError(format!(
            "--effect {} must be between 0.0001 and 0.5 (a fraction: 0.01 = 1%)",
            a.effect
        )));
    }
    let blocks = a.blocks.unwrap_or(if a.sequential { 1000 } else { 10 });
    if blocks < 2 {
        return Err(UsageError("--blocks must be at least 2".into()));
    }
    if a.sequential && blocks < ConfidenceSequence::MIN_BLOCKS {
        return Err(UsageError(format!(
            "--sequential needs --blocks of at least {} (the confidence sequence starts there)",
            ConfidenceSequence::MIN_BLOCKS
        )));
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
            effect: a.effect,
            confidence: a.confidence,
            seed,
            metrics,
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

/// Apply one arm's system-wide settings; knobs other arms set go back to their originals.
fn apply_system(arm: &Arm, all: &[Arm], guard: &mut Option<Guard>) -> anyhow::Result<Vec<String>> {
    let touched: Vec<Knob> = all
        .iter()
        .flat_map(|a| a.system.iter().map(|(k, _)| *k))
        .fold(Vec::new(), |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    if touched.is_empty() {
        return Ok(Vec::new());
    }
    if guard.is_none() {
        *guard = Some(Guard::system()?);
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

/// Why an arm's configuration visibly did not take effect in this trial, if it did not: it
/// asked for huge pages, yet sampling saw (almost) none and the kernel allocated no THP for
/// anyone during the trial (sampling can miss a short-lived peak; the counters cannot).
pub fn flag(arm: &Arm, o: &TrialOutcome, kernel: &BTreeMap<String, u64>) -> Option<String> {
    if !arm.expects_huge() || o.memory.peak_rss < (8 << 20) {
        return None;
    }
    let cov = o.memory.coverage_at_peak.unwrap_or(0.0);
    let thp_allocated = ["thp_fault_alloc", "thp_collapse_alloc"]
        .iter()
        .any(|k| kernel.get(*k).copied().unwrap_or(0) > 0);
    if cov >= 0.1 || o.memory.peak_hugetlb > 0 || thp_allocated {
        return None;
    }
    // The program's own words about it, warnings first (e.g. the JVM's "UseLargePages disabled").
    let lines: Vec<&str> = o
        .stderr
        .lines()
        .chain(o.stdout.lines())
        .filter(|l| !l.starts_with("Picked up JAVA_TOOL_OPTIONS"))
        .collect();
    let about = |l: &&&str| {
        let l = l.to_ascii_lowercase();
        l.contains("large page")
            || l.contains("hugetlb")
            || l.contains("huge page")
            || l.contains("uselargepages")
    };
    let hint = lines
        .iter()
        .filter(about)
        .find(|l| l.to_ascii_lowercase().contains("warn"))
        .or_else(|| lines.iter().find(about))
        .map(|l| format!("; the program said: {}", l.trim()))
        .unwrap_or_default();
    Some(format!(
        "asked for huge pages but got none: at peak, {:.1}% of {} MiB resident was huge (AnonHugePages {} MiB, hugetlb 0) and the kernel allocated no THP during the trial{hint}",
        cov * 100.0,
        o.memory.peak_rss >> 20,
        o.memory.peak_anon_huge >> 20
    ))
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
    TrialData {
        block: t.block.max(0) as usize,
        arm: t.arm_idx as usize,
        ok: t.ok,
        flagged: t.flagged.clone(),
        metrics: t.metrics.clone(),
        coverage_at_peak: t.evidence["memory"]["coverage_at_peak"].as_f64(),
        counters: t.evidence["perf"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RunResult {
    pub schema: &'static str,
    pub run_id: i64,
    pub db: String,
    pub command: Vec<String>,
    pub plan: Plan,
    pub blocks_done: usize,
    pub stop_reason: String,
    pub report: ExperimentReport,
    pub notes: Vec<String>,
    pub elapsed_s: f64,
}

/// Run the experiment with `runner` (a real process runner in production).
#[allow(clippy::too_many_arguments)]
pub fn execute(
    a: &RunArgs,
    plan: &Plan,
    outputs: &[OutputMetric],
    runner: &mut dyn Runner,
    store: &mut Store,
    run_id: i64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(Vec<TrialRow>, usize, String, Vec<String>)> {
    let started = Instant::now();
    let user = a.user.as_deref().map(user_ids).transpose()?;
    let base_spec = TrialSpec {
        argv: a.command.clone(),
        shell: a.shell,
        cwd: a.cwd.clone(),
        env: a
            .env
            .iter()
            .filter_map(|e| {
                e.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect(),
        config: Default::default(),
        timeout: a.timeout,
        user,
    };
    let mut guard: Option<Guard> = None;
    let mut notes = Vec::new();
    let mut trials = Vec::new();
    let mut seq = 0i64;
    let root = Root::system();
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    let mut stop_reason = format!("{} blocks done", plan.blocks);
    let mut blocks_done = 0;
    let mut flagged_arms: Vec<usize> = Vec::new();
    let mut one = |arm_idx: usize,
                   block: i64,
                   guard: &mut Option<Guard>,
                   notes: &mut Vec<String>|
     -> anyhow::Result<Option<TrialRow>> {
        let arm = &plan.arms[arm_idx];
        for s in apply_system(arm, &plan.arms, guard)? {
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
        let before = huge_counters(&root);
        let o = runner.run(&spec, stop)?;
        let kernel = deltas(&before, &huge_counters(&root));
        if o.interrupted {
            return Ok(None);
        }
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
        let ok = o.succeeded() && missing.is_empty();
        if let Some(first) = o.perf_unavailable.first()
            && !notes.iter().any(|n| n.starts_with("not counted"))
        {
            notes.push(format!(
                "not counted for the child: {first}{}",
                if o.perf_unavailable.len() > 1 {
                    " (and more; see the trial evidence)"
                } else {
                    ""
                }
            ));
        }
        let flagged = flag(arm, &o, &kernel);
        let mut evidence = serde_json::to_value(&o)?;
        evidence["kernel_counters"] = serde_json::to_value(&kernel)?;
        if !missing.is_empty() {
            evidence["missing_metrics"] = serde_json::to_value(&missing)?;
        }
        if !o.succeeded() {
            let tail: Vec<&str> = o.stderr.lines().rev().take(5).collect();
            evidence["stderr_tail"] =
                serde_json::to_value(tail.into_iter().rev().collect::<Vec<_>>())?;
        }
        Ok(Some(TrialRow {
            block,
            arm_idx: arm_idx as i64,
            seq: 0,
            ok,
            flagged,
            metrics,
            evidence,
        }))
    };
    for w in 0..plan.warmup {
        for arm in 0..plan.arms.len() {
            progress(&format!(
                "warm-up {}/{} · {}",
                w + 1,
                plan.warmup,
                plan.arms[arm].name
            ));
            if one(arm, -1, &mut guard, &mut notes)?.is_none() || stop.load(Ordering::Relaxed) {
                return Ok((trials, 0, "interrupted during warm-up".into(), notes));
            }
        }
    }
    let mut cs: Vec<ConfidenceSequence> = plan
        .arms
        .iter()
        .map(|_| ConfidenceSequence::new(1.0 - plan.confidence, 30.0))
        .collect();
    'blocks: for block in 0..plan.blocks {
        if let Some(max) = a.max_time
            && started.elapsed() >= max
        {
            stop_reason = format!(
                "--max-time {} s reached after {block} blocks",
                max.as_secs()
            );
            break;
        }
        let order = block_order(plan.arms.len(), block, plan.seed);
        let mut block_ok = true;
        for arm in order {
            let est = estimate_line(&names, plan, &trials);
            progress(&format!(
                "block {}/{} · {} · {:.0} s{est}",
                block + 1,
                plan.blocks,
                plan.arms[arm].name,
                started.elapsed().as_secs_f64()
            ));
            let Some(mut t) = one(arm, block as i64, &mut guard, &mut notes)? else {
                stop_reason = format!(
                    "interrupted during block {}; {} complete blocks analysed",
                    block + 1,
                    blocks_done
                );
                break 'blocks;
            };
            t.seq = seq;
            seq += 1;
            store.add_trial(run_id, &t)?;
            let failed = !t.ok;
            if let Some(f) = &t.flagged
                && !flagged_arms.contains(&arm)
            {
                // Live, once per arm; the final report counts every flagged trial.
                flagged_arms.push(arm);
                progress(&format!("FLAGGED {}: {f}", plan.arms[arm].name));
            }
            trials.push(t);
            if failed {
                block_ok = false;
                if !a.keep_going {
                    let last = trials.last().expect("just pushed");
                    stop_reason = format!(
                        "trial of arm {} failed (exit {:?}{}); use --keep-going to continue past failures",
                        plan.arms[arm].name,
                        last.evidence["exit_code"],
                        last.evidence
                            .get("missing_metrics")
                            .map(|m| format!(", metric not found in output: {m}"))
                            .unwrap_or_default()
                    );
                    break 'blocks;
                }
            }
            if stop.load(Ordering::Relaxed) {
                stop_reason = format!(
                    "interrupted during block {}; {} complete blocks analysed",
                    block + 1,
                    blocks_done
                );
                break 'blocks;
            }
        }
        blocks_done += 1;
        if plan.sequential && block_ok {
            let primary = &plan.metrics[plan.metrics.len().min(2) - 1].name;
            let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
            let band = (1.0 + plan.effect).ln();
            let mut settled = true;
            for (i, c) in cs.iter_mut().enumerate() {
                if i == plan.baseline {
                    continue;
                }
                if let Some(d) = experiment::log_ratios(&data, i, plan.baseline, primary).last() {
                    c.push(*d);
                }
                settled &= match c.interval() {
                    Some((lo, hi)) => lo > 0.0 || hi < 0.0 || (lo > -band && hi < band),
                    None => false,
                };
            }
            if settled {
                stop_reason = format!(
                    "sequential: every contrast settled after {blocks_done} blocks (confidence sequence at {:.2}%)",
                    plan.confidence * 100.0
                );
                break;
            }
        }
    }
    drop(guard); // restores every system setting the arms changed
    Ok((trials, blocks_done, stop_reason, notes))
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
        format!(" · {}", parts.join(", "))
    }
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
    let run_id = store.create_run(
        a.label.as_deref(),
        &a.command,
        kernel.as_deref(),
        "running",
        &serde_json::to_value(&plan)?,
        &arm_rows,
    )?;
    let stop: Arc<AtomicBool> = crate::workload::child::stop_flag();
    control::defer_first_signal();
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone()).context("installing the Ctrl-C handler")?;
    }
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = |m: &str| {
        if !tty {
            eprintln!("{m}");
        } else if m.starts_with("FLAGGED") {
            eprintln!("\r\x1b[K{m}"); // stays on screen
        } else {
            eprint!("\r\x1b[K{m}");
        }
    };
    let cpu = crate::probe::cpu::read(&Root::system()).unwrap_or_default();
    let result = execute(
        &a,
        &plan,
        &outputs,
        &mut ProcessRunner { cpu },
        &mut store,
        run_id,
        &stop,
        &mut progress,
    );
    if tty {
        eprint!("\r\x1b[K");
    }
    let (trials, blocks_done, stop_reason, notes) = match result {
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
    let data: Vec<TrialData> = trials.iter().map(trial_data).collect();
    let report = experiment::analyse(
        &names,
        plan.baseline,
        &data,
        &plan.metrics,
        plan.effect,
        plan.confidence,
    );
    let interrupted = stop.load(Ordering::Relaxed);
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
        blocks_done,
        stop_reason,
        report,
        notes,
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
