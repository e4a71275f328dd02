//! bench: the engine of `hugelab bench`, beside the run engine (`experiment`). Plan (sizes,
//! backings, pools and knobs checked against the probed machine: `plan.rs`), own and prepare
//! the settings (`settings.rs`), set up verified regions and run interleaved randomized rounds
//! (`execute.rs`), save each round as it ends (`saver.rs`), analyse into one [`BenchResult`].

mod args;
mod execute;
mod plan;
mod saver;
mod settings;

pub use args::BenchArgs;
pub use execute::{Instruments, Measured, execute};
pub use plan::plan;
pub use saver::StoredBench;
pub use settings::BenchSettings;

use crate::analyze::bench::Observation;
pub use crate::model::bench::{BenchResult, CellEvidence, Plan, Skipped};
use crate::model::tlb::TlbReach;
use crate::probe::Root;
use crate::probe::status;
use crate::render::progress::{Observer, Progress};
use crate::units::Bytes;
use anyhow::Context;
use std::time::Instant;

pub use crate::model::bench::SCHEMA;

/// Plan, measure and analyse a bench; the caller renders. Saved round by round unless
/// `--no-save`; every setting changed is restored before this returns.
pub fn conduct(a: &BenchArgs) -> anyhow::Result<BenchResult> {
    let started = Instant::now();
    let st = status::probe(&Root::system()).context("probing the machine")?;
    let (plan, mut notes) = plan(a, &st)?;
    // A bench that may grow pools or switch mTHP sizes owns the settings from here (refused,
    // exit 2, while another hugelab does) and reads the machine again under that lock.
    // One that changes none holds them as they are (no other hugelab changes them under it).
    let (owner, _reading) = if BenchSettings::may_change(&plan, &st, !a.no_grow) {
        let o = crate::control::own_settings(a.settings.wait_for_settings)?;
        (Some(o), None)
    } else {
        let reading = crate::control::read_settings()?;
        notes.extend(crate::control::applied());
        (None, reading)
    };
    let st = status::probe(&Root::system()).context("probing the machine")?;
    let mut obs = Progress::stderr("hugelab bench", a.progress.quiet);
    start_progress(&mut obs, &plan);
    let mut sys = BenchSettings::live(owner);
    let mut skipped = sys.prepare(&plan, &st, !a.no_grow)?;
    let mut saver = start_saver(a, &plan, &st, &mut notes);
    let mut save_error: Option<String> = None;
    let mut sink = |o: &[Observation], e: &[CellEvidence]| {
        if let Some(s) = saver.as_mut()
            && let Err(err) = s.add(o, e)
        {
            save_error = Some(format!("{err:#}"));
            saver = None;
        }
    };
    let env = Instruments {
        root: Root::system(),
        counters: Instruments::counters(&st, &plan),
        obs: &mut obs,
        sink: &mut sink,
    };
    let result = execute(&plan, &st, &mut skipped, &mut sys, env);
    obs.done();
    if let Some(e) = save_error {
        notes.push(format!("saving stopped: {e}"));
    }
    let analysed = result.as_ref().ok().map(|m| {
        let tlb = (plan.workloads == [crate::workload::Workload::Tlb])
            .then(|| (crate::probe::tlb::read(), st.cpu.hypervisor));
        crate::analyze::bench::decide(&m.observations, &plan, tlb, plan.confidence)
    });
    for r in sys.restore() {
        if !r.ok() {
            notes.push(format!("restore: {}", r.describe()));
        }
    }
    let Measured {
        observations,
        evidence,
        notes: run_notes,
    } = match result {
        Ok(m) => m,
        Err(e) => {
            if let Some(s) = saver.take() {
                // What it stored round by round stays; the run is closed as failed.
                let _ = s.finish("failed", None);
            }
            return Err(e);
        }
    };
    notes.extend(run_notes);
    let (cells, tlb) = analysed.unwrap_or_default();
    let stored = crate::store::Store::open_existing(
        &a.store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path),
    )
    .ok();
    // Other benches say why in terms of the reach `bench tlb` measured here before; `bench tlb`
    // sets its range against the ranges it measured here before.
    let measured_tlb = match tlb {
        Some(_) => None,
        None => stored.as_ref().and_then(|s| s.measured_tlb()),
    };
    let tlb = tlb.map(|t| {
        let earlier = (stored.as_ref())
            .and_then(|s| s.measured_tlbs().ok())
            .unwrap_or_default();
        TlbReach {
            across: crate::analyze::tlb::across(&earlier, &t),
            ..t
        }
    });
    let why = bench_why(&plan, &cells, measured_tlb.as_ref());
    let mut res = BenchResult {
        schema: SCHEMA.into(),
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
        measured_tlb,
        tlb,
        why,
    };
    // The whole result, as it is printed, is what the run keeps (`results show` prints it).
    if let Some(s) = saver.take() {
        res.notes.push(s.saved_as());
        if let Err(e) = s.finish("complete", Some(&res)) {
            res.notes.pop();
            res.notes
                .push(format!("not saved to the results database: {e:#}"));
        }
    }
    Ok(res)
}

/// Against the reach `bench tlb` measured here: the TLB entries the largest region of the first
/// random-access workload needs on each backing's pages (every page of it touched).
fn bench_why(
    plan: &Plan,
    cells: &[crate::model::bench::CellStats],
    measured: Option<&crate::model::tlb::Measured>,
) -> Option<crate::model::bench::BenchWhy> {
    let size = cells.iter().map(|c| c.size).max()?;
    let workload = [
        crate::workload::Workload::Touch,
        crate::workload::Workload::Chase,
    ]
    .into_iter()
    .find(|w| plan.workloads.contains(w))?;
    let named: Vec<(String, u64)> = plan
        .backings
        .iter()
        .map(|b| (b.to_string(), size.div_ceil(b.page_size().max(4096))))
        .collect();
    let needs = crate::analyze::tlb::needs(&named, measured?);
    (!needs.is_empty()).then_some(crate::model::bench::BenchWhy {
        workload,
        size,
        needs,
    })
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
) -> Option<StoredBench> {
    if a.no_save {
        return None;
    }
    match StoredBench::start(plan, Some(st), st.kernel.as_deref(), a.store.db.as_deref()) {
        Ok(s) => Some(s),
        Err(e) => {
            notes.push(format!("not saved to the results database: {e:#}"));
            None
        }
    }
}
