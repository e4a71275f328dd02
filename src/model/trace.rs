//! Records of `hugelab trace` (schema `hugelab.trace/1`): latency histograms of the kernel's
//! huge-page costs and counts of related events, per window.

use std::collections::BTreeMap;

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

/// What can be traced.
/// Each value's meaning is its `--help` text, in `src/options.rs`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum TraceKind {
    Compaction,
    Reclaim,
    Migrate,
    Khugepaged,
    Alloc,
    Tlb,
    Faults,
}

/// A bounded latency histogram as printed: log2 rows plus quantiles from finer buckets.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HistSummary {
    pub count: u64,
    pub total_ns: u64,
    /// Upper edge of the bucket holding the median (buckets are 1/8 octave: within 9%).
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// (lower edge in ns, count) per power of two, like SystemTap's @hist_log.
    pub log2: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ProcessRow {
    pub pid: u32,
    pub comm: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// One kind of stall: paired begin → end events of one thread.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Latency {
    pub kind: String,
    /// The events paired and what the time means.
    pub how: String,
    pub hist: HistSummary,
    pub by_process: Vec<ProcessRow>,
    /// Allocation order → (count, total ns), where the begin event says the order.
    pub by_order: BTreeMap<i64, (u64, u64)>,
    /// Outcomes named by the end event (compaction status, pages reclaimed, migration result).
    pub outcomes: BTreeMap<String, u64>,
}

/// Events counted by one key (order, status, reason).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Count {
    pub kind: String,
    pub event: String,
    /// What the keys are (order, status, reason, …).
    pub key: String,
    pub total: u64,
    pub by_key: BTreeMap<String, u64>,
    /// The processes with the most events.
    pub by_process: Vec<ProcessRow>,
}

/// One window of a trace.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TraceWindow {
    pub start_s: f64,
    pub seconds: f64,
    pub latencies: Vec<Latency>,
    pub counts: Vec<Count>,
    /// Ends without a begin in the window's thread (the begin came before the trace), and begins
    /// still open when it ended.
    pub unpaired: u64,
    pub open_at_end: u64,
    /// Direct compaction stalls: try_to_compact_pages calls that compacted a zone or found one
    /// deferred — what /proc/vmstat `compact_stall` counts.
    pub direct_compaction_stalls: u64,
    /// Every event the window saw, by tracepoint.
    pub events_seen: BTreeMap<String, u64>,
    /// Traced counts next to the /proc/vmstat counters that count the same thing (system-wide
    /// traces only; filled by the command, which reads /proc/vmstat at the window's edges).
    pub kernel: Vec<KernelCheck>,
}

/// A traced count and the /proc/vmstat delta over the same window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct KernelCheck {
    pub counter: String,
    pub vmstat_delta: u64,
    pub traced: u64,
    /// Which events were counted.
    pub traced_as: String,
    pub equal: bool,
}

/// Stall time per trial of one arm against the baseline, from paired blocks: the difference
/// in milliseconds (not a ratio: a baseline that never stalls has no ratio).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StallContrast {
    pub kind: String,
    pub arm: String,
    pub baseline: String,
    pub arm_mean_ms: f64,
    pub baseline_mean_ms: f64,
    /// Blocks where both arms' trials were traced.
    pub blocks: usize,
    /// arm − baseline, ms per trial: Hodges–Lehmann of the per-block differences with its
    /// signed-rank interval (unadjusted for the number of contrasts).
    pub difference_ms: crate::stats::Estimate,
}

/// One traced trial's stall time of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialStall {
    pub block: i64,
    pub arm: usize,
    pub kind: String,
    pub ms: f64,
}

impl TraceKind {
    /// The cheap kinds, traced when none are named: their events fire on slow paths only
    /// (`cargo bench --bench trace`).
    pub const DEFAULT: [TraceKind; 4] = [
        TraceKind::Compaction,
        TraceKind::Reclaim,
        TraceKind::Migrate,
        TraceKind::Khugepaged,
    ];

    /// The kind's name on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::Compaction => "compaction",
            TraceKind::Reclaim => "reclaim",
            TraceKind::Migrate => "migrate",
            TraceKind::Khugepaged => "khugepaged",
            TraceKind::Alloc => "alloc",
            TraceKind::Tlb => "tlb",
            TraceKind::Faults => "faults",
        }
    }

    /// The kind's tracepoints, each with an optional kernel-side filter.
    pub fn events(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            TraceKind::Compaction => &[
                ("compaction:mm_compaction_begin", None),
                ("compaction:mm_compaction_end", None),
                ("compaction:mm_compaction_try_to_compact_pages", None),
                ("compaction:mm_compaction_deferred", None),
            ],
            TraceKind::Reclaim => &[
                ("vmscan:mm_vmscan_direct_reclaim_begin", None),
                ("vmscan:mm_vmscan_direct_reclaim_end", None),
                ("vmscan:mm_vmscan_memcg_reclaim_begin", None),
                ("vmscan:mm_vmscan_memcg_reclaim_end", None),
            ],
            TraceKind::Migrate => &[
                ("migrate:mm_migrate_pages_start", None),
                ("migrate:mm_migrate_pages", None),
            ],
            TraceKind::Khugepaged => &[
                ("huge_memory:mm_khugepaged_scan_pmd", None),
                ("huge_memory:mm_collapse_huge_page", None),
                ("huge_memory:mm_collapse_huge_page_isolate", None),
            ],
            TraceKind::Alloc => &[
                ("kmem:mm_page_alloc", Some("order > 0")),
                ("kmem:mm_page_alloc_extfrag", None),
            ],
            TraceKind::Tlb => &[("tlb:tlb_flush", None)],
            TraceKind::Faults => &[("exceptions:page_fault_user", None)],
        }
    }
}
