//! `hugelab bench`: plan (validate sizes, backings, pools and knobs against the probed
//! machine), prepare the system, set up verified regions and run interleaved randomized rounds
//! (execute, saving each round), analyse, render.

mod execute;
mod plan;
mod save;
mod system;

pub use execute::{Env, Measured, execute};
pub use plan::plan;
pub use save::Saver;
pub use system::System;

use super::print_json;
use crate::analyze::bench::{Observation, analyse};
use crate::backing::Backing;
pub use crate::model::bench::{BenchResult, CellEvidence, Plan, Skipped};
use crate::probe::Root;
use crate::probe::status;
use crate::render::progress::{Observer, Progress};
use crate::units::{Bytes, parse_positive_duration};
use anyhow::Context;
use clap::Args;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.bench/1";

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Workloads: touch, chase, pretouch, stream, fault [default: touch chase pretouch]; or tlb
    /// alone: the TLB's reach and miss cost, from spans of 64K to 256M one line a page
    pub workloads: Vec<String>,
    /// Region sizes, comma-separated (K/M/G suffixes) [default: 4K,64K,1M,16M,256M,1G, capped by MemAvailable]
    #[arg(short = 's', long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Page backings, comma-separated: 4k, thp, thp-collapse, hugetlb-2m, hugetlb-1g, mthp-<size>
    /// [default: 4k,thp,hugetlb-2m, plus hugetlb-1g when a 1 GiB page can be had]
    #[arg(short = 'b', long, value_delimiter = ',')]
    pub backings: Vec<String>,
    /// Measured rounds; each round runs every backing once, in random order (≥ 11 for a 99.9% ratio interval)
    #[arg(short = 'r', long, default_value_t = 12, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub rounds: usize,
    /// Target duration of one touch/chase iteration
    #[arg(long, default_value = "20ms", value_parser = parse_positive_duration)]
    pub iteration_time: Duration,
    /// Threads for touch and stream
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub threads: usize,
    /// Confidence level of intervals
    #[arg(long, default_value_t = 0.999, allow_negative_numbers = true, value_parser = crate::options::parse_confidence)]
    pub confidence: f64,
    #[command(flatten)]
    pub order: crate::options::Seed,
    /// Do not grow hugetlb pools, even as root (skip hugetlb backings the pool cannot serve)
    #[arg(long)]
    pub no_grow: bool,
    #[command(flatten)]
    pub settings: crate::options::SettingsWait,
    #[command(flatten)]
    pub out: crate::options::Json,
    #[command(flatten)]
    pub progress: crate::options::Quiet,
    #[command(flatten)]
    pub store: crate::options::Database,
    /// Do not save the run in the results database
    #[arg(long, conflicts_with = "db")]
    pub no_save: bool,
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let st = status::probe(&Root::system()).context("probing the machine")?;
    let (plan, mut notes) = plan(&a, &st)?;
    // A bench that may grow pools or switch mTHP sizes owns the settings from here (refused,
    // exit 2, while another hugelab does) and reads the machine again under that lock.
    let owner = System::may_change(&plan, &st, !a.no_grow)
        .then(|| crate::control::own_settings(a.settings.wait_for_settings))
        .transpose()?;
    let st = match owner {
        Some(_) => status::probe(&Root::system()).context("probing the machine")?,
        None => st,
    };
    let mut obs = Progress::stderr("hugelab bench", a.progress.quiet);
    start_progress(&mut obs, &plan);
    let mut sys = System::live(owner);
    let mut skipped = sys.prepare(&plan, &st, !a.no_grow)?;
    let mut saver = start_saver(&a, &plan, &st, &mut notes);
    let mut save_error: Option<String> = None;
    let mut sink = |o: &[Observation], e: &[CellEvidence]| {
        if let Some(s) = saver.as_mut()
            && let Err(err) = s.add(o, e)
        {
            save_error = Some(format!("{err:#}"));
            saver = None;
        }
    };
    let env = Env {
        root: Root::system(),
        counters: Env::counters(&st, &plan),
        obs: &mut obs,
        sink: &mut sink,
    };
    let result = execute(&plan, &st, &mut skipped, &mut sys, env);
    obs.done();
    if let Some(e) = save_error {
        notes.push(format!("saving stopped: {e}"));
    }
    // The cells (and the TLB's reach) are known before the run is closed, so the stored run
    // carries what `bench tlb` found.
    let analysed = result.as_ref().ok().map(|m| {
        let cells = analyse(&m.observations, Backing::Base, plan.confidence);
        let tlb = (plan.workloads == [crate::workload::Workload::Tlb]).then(|| {
            crate::analyze::tlb::reach(&cells, crate::probe::tlb::read(), st.cpu.hypervisor)
        });
        (cells, tlb)
    });
    if let Some(s) = saver.take() {
        let summary = analysed
            .as_ref()
            .and_then(|(_, t)| t.as_ref())
            .map(|t| serde_json::json!({ "tlb": t }));
        match s.finish(
            if result.is_ok() { "complete" } else { "failed" },
            summary.as_ref(),
        ) {
            Ok(n) => notes.push(n),
            Err(e) => notes.push(format!("not saved to the results database: {e:#}")),
        }
    }
    for r in sys.restore() {
        if !r.ok() {
            notes.push(format!("restore: {}", r.describe()));
        }
    }
    let Measured {
        observations,
        evidence,
        notes: run_notes,
    } = result?;
    notes.extend(run_notes);
    let (mut cells, tlb) = analysed.unwrap_or_default();
    let rank = |b: &Backing| {
        plan.backings
            .iter()
            .position(|x| x == b)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by_key(|c| (c.metric, c.size, rank(&c.backing)));
    let res = BenchResult {
        schema: SCHEMA,
        kernel: st.kernel.clone(),
        cpu: st.cpu.model_name.clone(),
        plan,
        observations,
        cells,
        evidence,
        skipped,
        settings_changed: std::mem::take(&mut sys.changed),
        notes,
        elapsed_s: started.elapsed().as_secs_f64(),
        measured_tlb: if tlb.is_none() {
            crate::commands::stored::measured_tlb(&a.store.db)
        } else {
            None
        },
        tlb,
    };
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::bench::render(&res));
    }
    Ok(0)
}

/// The progress bar's phase: one step per measured round of each size.
fn start_progress(obs: &mut Progress, plan: &Plan) {
    // One step per measured round of each size: the resident workloads share a round, each
    // fresh-memory workload has its own.
    let resident = plan.workloads.iter().any(|w| w.uses_resident_region()) as usize;
    let fresh = plan
        .workloads
        .iter()
        .filter(|w| !w.uses_resident_region())
        .count();
    let steps = plan.sizes.len() * plan.rounds * (resident + fresh);
    obs.phase("rounds", Some(steps as u64));
    obs.message(&format!(
        "{} × sizes {} × backings {}, {} rounds, seed {}",
        plan.workloads
            .iter()
            .map(|w| w.name())
            .collect::<Vec<_>>()
            .join(","),
        plan.sizes
            .iter()
            .map(|s| Bytes(*s).to_string())
            .collect::<Vec<_>>()
            .join(","),
        plan.backings
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(","),
        plan.rounds,
        plan.seed
    ));
}

/// The results database's saver, or why the bench is not saved.
fn start_saver(
    a: &BenchArgs,
    plan: &Plan,
    st: &crate::probe::status::Status,
    notes: &mut Vec<String>,
) -> Option<Saver> {
    if a.no_save {
        return None;
    }
    match Saver::start(plan, Some(st), st.kernel.as_deref(), a.store.db.as_deref()) {
        Ok(s) => Some(s),
        Err(e) => {
            notes.push(format!("not saved to the results database: {e:#}"));
            None
        }
    }
}
