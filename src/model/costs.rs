//! The cost metrics of a run's record, named: which metrics say what an arm costs (memory, CPU
//! time, an event's memory and fork time), how each is named to a person, and each arm's cost
//! contrasts read from the record (`analyze::costs` records and contrasts them).

use crate::model::analysis::{ExperimentAnalysis, MetricAnalysis};
use crate::model::verdict::{Contrast, Verdict};

/// A command's peak memory as the kernel counts it: the process tree's largest resident
/// memory plus its hugetlb pages, plus the pages of a pool the arm reserved (`hugetlb.<size>`)
/// that the workload left unused — memory nothing else could have, bytes.
pub const PEAK_MEM: &str = "peak_mem_bytes";

/// A command's user CPU time (its waited-for tree's rusage), seconds.
pub const USER_CPU: &str = "user_cpu_s";

/// A command's system CPU time (its waited-for tree's rusage), seconds.
pub const SYS_CPU: &str = "sys_cpu_s";

/// A server's memory after its load at its configuration: the tree's resident memory with
/// shared segments once and whole (a segment's declared size, as a 4 KiB server holds it once
/// its buffers fill), plus every hugetlb page committed to its mappings (faulted, or reserved
/// and not yet used: memory nothing else can have), bytes. Like with like between a server on
/// 4 KiB pages and one whose segment the pool reserved whole at start.
pub const SERVER_MEM: &str = "server_mem_bytes";
/// A server's memory after its load as it held it: pages touched (shared segments once) plus
/// hugetlb committed, bytes. Recorded beside [`SERVER_MEM`], not weighed: against a hugetlb
/// segment it compares reserved pages with touched ones.
pub const SERVER_HELD: &str = "server_held_bytes";

/// A server tree's CPU time (user + system) during the load burst, seconds.
pub const SERVER_CPU: &str = "server_cpu_s";

/// A server's CPU time per unit of its load's work: `server_cpu_s` over the primary metric's
/// rate (requests or transactions per second) times the load's wall time, microseconds.
pub const CPU_PER_OP: &str = "server_cpu_per_op_us";

/// `run --during`: the memory the event added to the server tree at its peak (copy-on-write
/// after a fork, and the child's own), bytes.
pub const EVENT_MEM: &str = "event_mem_bytes";

/// `run --during` with `--preset redis`: Redis's own account of its fork (`latest_fork_usec`),
/// seconds.
pub const EVENT_FORK: &str = "event_fork_s";

/// How a cost is named to a person.
pub fn label(name: &str) -> &str {
    match name {
        PEAK_MEM => "peak memory",
        USER_CPU => "user CPU",
        SYS_CPU => "system CPU",
        SERVER_MEM => "server memory (segments whole)",
        SERVER_HELD => "server memory held",
        SERVER_CPU => "server CPU",
        CPU_PER_OP => "server CPU per op",
        EVENT_MEM => "event memory",
        EVENT_FORK => "fork time",
        other => other,
    }
}

/// How a cost is named where space is short (the brief answer): the memory and CPU of the arm,
/// with what a server's memory counts.
pub fn short_label(name: &str) -> &str {
    match name {
        PEAK_MEM => "memory",
        SERVER_MEM => "memory (segments whole)",
        SERVER_CPU => "CPU",
        CPU_PER_OP => "CPU/op",
        other => label(other),
    }
}

/// A measured cost of one arm against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost<'a> {
    pub metric: &'a MetricAnalysis,
    pub contrast: &'a Contrast,
}

/// Every cost metric's contrast for `arm` (cost metrics without an interval are left out).
pub fn of_arm<'a>(r: &'a ExperimentAnalysis, arm: &str) -> Vec<Cost<'a>> {
    r.metrics
        .iter()
        .filter(|m| m.metric.cost)
        .filter_map(|m| {
            let c = m.contrasts.iter().find(|(a, _)| a == arm)?.1.as_ref()?;
            Some(Cost {
                metric: m,
                contrast: c,
            })
        })
        .collect()
}

/// Whether the brief answer names a cost: memory always (the first thing a huge page may
/// cost), every other cost where its interval resolved a change.
pub fn named(c: &Cost) -> bool {
    let name = &c.metric.metric.name;
    name == PEAK_MEM
        || name == SERVER_MEM
        || matches!(c.contrast.verdict, Verdict::Slower | Verdict::Faster)
}

/// An arm's costs and stall counts whose interval resolved no change: the brief answer counts
/// them instead of naming each.
pub fn unchanged(r: &ExperimentAnalysis, arm: &str) -> usize {
    let costs = of_arm(r, arm).iter().filter(|c| !named(c)).count();
    let stalls = r
        .stalls
        .iter()
        .filter(|s| s.arm == arm && !matches!(s.verdict, Verdict::Slower | Verdict::Faster))
        .count();
    costs + stalls
}

/// The median of `metric` for an arm, from its summary.
pub fn arm_median(m: &MetricAnalysis, arm: &str) -> Option<f64> {
    m.arms
        .iter()
        .find(|a| a.arm == arm)?
        .summary
        .as_ref()
        .map(|s| s.median)
}

/// Kernel counters shown per arm under a condition, with the words they are shown with.
pub const SHOWN_COUNTERS: [(&str, &str); 4] = [
    ("compact_stall", "direct compaction stalls"),
    ("compact_daemon_migrate_scanned", "kcompactd scanned"),
    ("compact_daemon_free_scanned", "kcompactd free-scanned"),
    ("allocstall", "direct reclaim stalls"),
];

/// A stall-count contrast's difference: `+5.0 per trial [+4.0, +6.0]` (the interval where the
/// blocks gave one).
pub fn stall_difference(s: &crate::model::analysis::StallCount) -> String {
    let d = &s.difference;
    let interval = match (d.lo, d.hi) {
        (Some(lo), Some(hi)) => format!(" {}", crate::units::fmt_interval(lo, hi, 1)),
        _ => String::new(),
    };
    format!("{:+.1} per trial{interval}", d.point)
}

impl Cost<'_> {
    /// The interval says the arm costs more, by more than `effect` at the point estimate —
    /// a cost that has to be weighed against any benefit.
    pub fn is_more(&self) -> bool {
        self.contrast.verdict == Verdict::Slower
    }
}
