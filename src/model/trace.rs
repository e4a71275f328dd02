//! Records of `hugelab trace` (schema `hugelab.trace/1`): latency histograms of the kernel's
//! huge-page costs and counts of related events, per window.

pub use crate::analyze::trace::{
    Count, HistSummary, KernelCheck, Latency, ProcessRow, TraceWindow,
};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MissingEvent {
    pub event: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceResult {
    pub schema: &'static str,
    pub kernel: Option<String>,
    /// system-wide, pid N (and its threads), or the command's process tree.
    pub scope: String,
    pub events: Vec<String>,
    pub missing: Vec<MissingEvent>,
    pub windows: Vec<TraceWindow>,
    /// Records the kernel dropped (ring buffer full): counts are exact only when 0.
    pub lost: u64,
    /// hugelab's own CPU time (user + system) while tracing, seconds.
    pub self_cpu_s: f64,
    pub notes: Vec<String>,
    /// The traced command's exit status (`trace -- COMMAND`).
    pub exit_code: Option<i32>,
    /// Why the trace ended: the duration, the traced pid or command exiting, Ctrl-C.
    pub ended: String,
}
