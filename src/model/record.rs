//! The record of a run: everything its answer is printed from, built once when the run ends,
//! stored whole and typed (the results database's `summary` of the run), and read back as it
//! was by `results show`, `advise`, `report` and the exports, which print it and compute
//! nothing. Re-analysis happens only when a reader asks for another decision, and says so.

use crate::model::advice::Advice;
use crate::model::analysis::ExperimentAnalysis;
use crate::model::run::{PoolUse, RunResult, ServerSummary};

/// The record's schema; a summary without it is an earlier version's (its analysis alone).
pub const RECORD_SCHEMA: &str = "hugelab.record/1";

/// What is known about how a run went, beyond its analysis.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunFacts {
    /// Blocks completed (rounds × replicas where replicas ran at once).
    pub blocks: usize,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Trials during which the host stole more than the heavy-steal share of the CPU.
    #[serde(default)]
    pub heavy_steal_trials: usize,
    /// Warm-up trials (not measured) that failed: said beside the measured failures.
    #[serde(default)]
    pub warmup_failed: usize,
}

/// A run's answer as it printed it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub run_id: i64,
    /// Stored in a results database (false: `--no-save`).
    pub stored: bool,
    /// A service run (`--server`): its default answer is the brief one.
    pub service: bool,
    /// Servers of an arm that ran at once (1 without replicas).
    pub replicas: usize,
    /// The decision the analysis is at, and whose it is: the run's own (its command line), or
    /// the defaults an import of another tool's file was analysed at (None: a record stored
    /// before records said so, at its own decision).
    #[serde(default)]
    pub decision: Option<crate::model::decision::Decision>,
    /// The analysis at the record's decision (its effect and confidence), every condition.
    pub report: ExperimentAnalysis,
    pub facts: RunFacts,
    /// Per arm that set a hugetlb pool: asked, obtained, used.
    #[serde(default)]
    pub pools: Vec<PoolUse>,
    /// What `advise` said from this run alone.
    #[serde(default)]
    pub advice: Option<Advice>,
    /// Per arm, what its servers did (the kernel's own counts among them).
    #[serde(default)]
    pub servers: Vec<ServerSummary>,
    /// The notes and warnings the run printed.
    #[serde(default)]
    pub notes: Vec<String>,
    /// With `--trace`: each arm's stall time per trial against the baseline's.
    #[serde(default)]
    pub trace_stalls: Vec<crate::model::trace::StallContrast>,
    /// Per arm: how much of the primary metric's spread the machine's noise explains.
    #[serde(default)]
    pub noise: Vec<crate::model::analysis::NoiseAttribution>,
    /// `--calibrate`: the machine's noise floor for this command, and the A/A verdict.
    #[serde(default)]
    pub calibration: Option<crate::model::run::Calibration>,
    /// The "why" against the TLB reach measured here, with the reach it was read against.
    #[serde(default)]
    pub tlb: Option<crate::model::tlb::RunWhy>,
    /// `qemu.backing` arms: the host configuration for the backing measured best.
    #[serde(default)]
    pub vm_advice: Option<crate::model::vm::VmAdvice>,
}

impl RunRecord {
    /// The record the answer is printed from, as it is stored.
    pub fn of(run: &RunResult) -> RunRecord {
        RunRecord {
            schema: RECORD_SCHEMA.into(),
            run_id: run.run_id,
            stored: !run.db.is_empty(),
            service: run.plan.server.is_some(),
            replicas: run.plan.replicas(),
            decision: Some(crate::model::decision::Decision::own(
                run.plan.effect,
                run.plan.confidence,
                run.plan.design.clone(),
            )),
            report: {
                let mut r = run.report.clone();
                r.at_pace(run.elapsed_s);
                r
            },
            facts: RunFacts {
                blocks: run.blocks_done * run.plan.replicas(),
                elapsed_s: Some(run.elapsed_s),
                stop_reason: Some(run.stop_reason.clone()),
                heavy_steal_trials: run.noise.iter().map(|n| n.heavy_steal_trials).sum(),
                warmup_failed: run.warmup_failed,
            },
            pools: run.pools.clone(),
            advice: run.advice.clone(),
            servers: run.servers.clone(),
            notes: run.notes.clone(),
            trace_stalls: run.trace_stalls.clone(),
            noise: run.noise.clone(),
            calibration: run.calibration.clone(),
            tlb: run.tlb.clone(),
            vm_advice: run.vm_advice.clone(),
        }
    }
}
