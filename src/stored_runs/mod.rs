//! stored_runs: what the commands on stored results (`results`, `report`, `compare`, `advise`,
//! and `run`/`bench`/`status`/`inspect` for the TLB reach last measured) share — opening the
//! results database for reading, the unpaired comparison of two stored or exported runs
//! (`compare`, `report --compare`), and a stored run with what its charts need (`view.rs`).

pub mod export;
mod recall;
mod rounds;
mod view;

pub use recall::{Answer, Recalled, recall};
pub use view::view;

use crate::analyze::verdict::{Better, decide, to_percent};
use crate::error::UsageError;
use crate::model::record::RunRecord;
use crate::model::report::{CompareResult, CompareRow};
use crate::stats::{mann_whitney_shift, summarize};
use crate::store::Store;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A stored run's trials: given by a reader that has them, or read from the store the first
/// time an analysis asks (a view of a run whose record holds its answer reads none).
pub enum Trials<'s> {
    Given(&'s [crate::store::TrialRow]),
    Stored {
        store: &'s Store,
        run: i64,
        rows: std::cell::OnceCell<Vec<crate::store::TrialRow>>,
    },
}

impl<'s> Trials<'s> {
    /// Run `run`'s trials, read from `store` when first asked for.
    pub fn stored(store: &'s Store, run: i64) -> Self {
        Trials::Stored {
            store,
            run,
            rows: std::cell::OnceCell::new(),
        }
    }

    pub fn get(&self) -> anyhow::Result<&[crate::store::TrialRow]> {
        match self {
            Trials::Given(t) => Ok(t),
            Trials::Stored { store, run, rows } => {
                if rows.get().is_none() {
                    let read = store.trials(*run)?;
                    let _ = rows.set(read);
                }
                Ok(rows.get().map_or(&[], Vec::as_slice))
            }
        }
    }
}

/// A stored run's status as it is now: `running` whose process is gone reads `interrupted`.
pub fn status_now(meta: &crate::store::RunMeta) -> String {
    let gone =
        |o: crate::model::stored::RunOwner| !crate::control::journal::process_alive(o.pid, o.start);
    if meta.status == "running" && meta.plan.owner().is_some_and(gone) {
        "interrupted".into()
    } else {
        meta.status.clone()
    }
}

/// The results database for reading: it must exist (a read-only command creates nothing).
pub fn open(db: &Option<PathBuf>) -> anyhow::Result<Store> {
    Store::open_existing(&db.clone().unwrap_or_else(crate::store::default_path))
}

/// The TLB reach `bench tlb` last measured on this host, from the results database; `None`
/// when nothing was measured (or there is no database).
pub fn measured_tlb(db: &Option<PathBuf>) -> Option<crate::analyze::tlb::Measured> {
    open(db).ok()?.measured_tlb()
}

/// Arm name → successful values of `metric`, from a run id or a file (read by the one reader
/// of the files `import` takes, so a file compares as its import would).
fn values_of(
    src: &str,
    metric: &str,
    db: &Option<PathBuf>,
) -> anyhow::Result<(String, BTreeMap<String, Vec<f64>>)> {
    let (label, arms, trials) = match src.parse::<i64>() {
        Ok(id) => {
            let (meta, arms, trials) = open(db)?.load(id)?;
            (format!("run {} ({})", meta.id, meta.host), arms, trials)
        }
        Err(_) => {
            let text = std::fs::read_to_string(src).map_err(|e| {
                UsageError(format!(
                    "{src:?} is neither a run id nor a readable file: {e}"
                ))
            })?;
            let imp = crate::store::import::read(&text, std::path::Path::new(src))
                .map_err(|e| UsageError(e.0))?;
            (src.to_string(), imp.arms, imp.trials)
        }
    };
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok && t.block >= 0) {
        if let (Some(a), Some(v)) = (
            arms.iter().find(|a| a.idx == t.arm_idx),
            t.metrics.get(metric),
        ) {
            out.entry(a.name.clone()).or_default().push(*v);
        }
    }
    Ok((label, out))
}

/// The arms two runs share, compared unpaired on `metric` (B vs A).
pub fn compare_runs(
    a: &str,
    b: &str,
    metric: &str,
    higher: bool,
    effect: f64,
    confidence: f64,
    db: &Option<PathBuf>,
) -> anyhow::Result<CompareResult> {
    let (la, va) = values_of(a, metric, db)?;
    let (lb, vb) = values_of(b, metric, db)?;
    // A run against itself (the same id or file, or the same values) compares nothing.
    if a == b || va == vb {
        return Err(UsageError(format!(
            "{a} and {b} are {}: a comparison with itself says nothing; give two different runs (hugelab results list)",
            if a == b { "the same run" } else { "the same data" }
        ))
        .into());
    }
    let better = Better::of(higher);
    let mut rows = Vec::new();
    for (arm, xa) in &va {
        let Some(xb) = vb.get(arm) else { continue };
        let lb_: Vec<f64> = xb.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
        let la_: Vec<f64> = xa.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
        let shift = mann_whitney_shift(&lb_, &la_, confidence);
        rows.push(CompareRow {
            arm: arm.clone(),
            n_a: xa.len(),
            n_b: xb.len(),
            median_a: summarize(xa).map(|s| s.median),
            median_b: summarize(xb).map(|s| s.median),
            b_vs_a_percent: shift.map(|s| to_percent(s.estimate)),
            p_value: shift.map(|s| s.p_value),
            verdict: shift
                .and_then(|s| Some(decide(s.estimate.lo?, s.estimate.hi?, effect, better).0)),
            values_a: xa.clone(),
            values_b: xb.clone(),
        });
    }
    if rows.is_empty() {
        return Err(UsageError(format!(
            "{a} and {b} share no arm names with values of {metric:?}"
        ))
        .into());
    }
    Ok(CompareResult {
        schema: "hugelab.compare/1",
        a: la,
        b: lb,
        metric: metric.to_string(),
        better,
        effect,
        confidence,
        rows,
    })
}

/// What a stored run said beside its tables: the service's plan as it ran, its servers'
/// evidence (from its trials; the instance spread and first burst on `report`'s primary
/// metric at its confidence) and the notes the run printed (`said`, kept since runs stored
/// their notes; none before).
pub fn said(
    meta: &crate::store::RunMeta,
    arms: &[crate::store::ArmRow],
    trials: &Trials,
    record: &RunRecord,
) -> anyhow::Result<crate::model::report::Said> {
    let report = &record.report;
    let server = meta.plan.server().cloned();
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let servers = match (&server, report.primary()) {
        // What the run printed, as it kept it.
        _ if !record.servers.is_empty() => record.servers.clone(),
        (Some(_), Some(m)) => {
            let trials = trials.get()?;
            let data: Vec<_> = trials
                .iter()
                .map(crate::analyze::stored::trial_data)
                .collect();
            let (primary, level) = (&m.metric.name, report.confidence);
            crate::analyze::server::summaries(&names, primary, level, trials, &data)
        }
        _ => Vec::new(),
    };
    Ok(crate::model::report::Said {
        server,
        arms: names,
        notes: record.notes.clone(),
        servers,
    })
}
