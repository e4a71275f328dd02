//! Records of `hugelab run`: the validated plan and the analysed result that every renderer
//! (terminal, JSON, CSV, Markdown, HTML) reads.

use crate::analyze::experiment::{ExperimentReport, MetricDef, NoiseAttribution};
use crate::analyze::verdict::Design;
use crate::backing::arm::Arm;
use crate::collect::sampler::Schedule;
use std::time::Duration;

/// A validated run plan (stored with the run as JSON).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub arms: Vec<Arm>,
    pub baseline: usize,
    pub blocks: usize,
    pub warmup: usize,
    pub sequential: bool,
    /// How the blocks are analysed and when the run may stop early.
    pub design: Design,
    pub effect: f64,
    pub confidence: f64,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
    pub sampling: Schedule,
    pub pin: Option<usize>,
    pub max_time: Option<Duration>,
    /// An A/A calibration run.
    pub calibrate: bool,
    /// Trace kinds recorded per trial (`--trace`), empty when not tracing.
    pub trace: Vec<&'static str>,
    /// `--user`: the uid and gid the command (and server) run as.
    pub user: Option<crate::probe::user::UserIds>,
}

impl Plan {
    /// The metric the verdicts are about: the first `--metric`, else wall time.
    pub fn primary(&self) -> &MetricDef {
        &self.metrics[self.metrics.len().min(2) - 1]
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
    /// Per arm: how much of the primary metric's spread the machine's noise explains.
    pub noise: Vec<NoiseAttribution>,
    /// For `--calibrate`: the machine's noise floor for this command.
    pub calibration: Option<crate::analyze::calibrate::Calibration>,
    pub notes: Vec<String>,
    /// With `--trace`: stall time per trial of each arm against the baseline.
    pub trace_stalls: Vec<crate::analyze::trace::StallContrast>,
    /// With `qemu.backing` arms: the host configuration for the backing measured best.
    pub vm_advice: Option<crate::analyze::vm::VmAdvice>,
    pub elapsed_s: f64,
}
