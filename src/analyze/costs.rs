//! analyze: what an arm costs, as metrics of every run. A huge page's benefit comes with
//! costs — memory (a sparse region faulted in 2 MiB at a time, a hugetlb pool reserved for a
//! server), CPU time (zeroing and compacting huge pages is system time) — so every run records
//! them per trial and contrasts them like any metric: paired per block, Hodges–Lehmann with its
//! signed-rank interval, Holm across arms. They are never the primary metric and never stop a
//! sequential run; the answer shows them on a cost line and `advise` weighs them.

use super::experiment::{ExperimentAnalysis, MetricAnalysis, MetricDef};
use super::verdict::{Better, Contrast, Verdict};

/// A command's peak memory as the kernel counts it: the process tree's largest resident
/// memory plus its hugetlb pages, bytes.
pub const PEAK_MEM: &str = "peak_mem_bytes";
/// A command's user CPU time (its waited-for tree's rusage), seconds.
pub const USER_CPU: &str = "user_cpu_s";
/// A command's system CPU time (its waited-for tree's rusage), seconds.
pub const SYS_CPU: &str = "sys_cpu_s";
/// A server's memory after its load: the tree's resident memory with shared segments once,
/// plus every hugetlb page committed to its mappings (faulted, or reserved and not yet used:
/// memory nothing else can have), bytes.
pub const SERVER_MEM: &str = "server_mem_bytes";
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

/// Cost metrics by name: lower is better, never primary.
fn of_names(names: &[&str]) -> Vec<MetricDef> {
    names
        .iter()
        .map(|n| MetricDef {
            cost: true,
            ..MetricDef::contrasted(*n, Better::Lower)
        })
        .collect()
}

/// The costs of `--during`'s event: its memory, and the fork time where the server reports it.
pub fn event_defs(fork: bool) -> Vec<MetricDef> {
    let names: &[&str] = if fork {
        &[EVENT_MEM, EVENT_FORK]
    } else {
        &[EVENT_MEM]
    };
    of_names(names)
}

/// The cost metrics a run records: a command's, or a server's (with its CPU per unit of work
/// when the primary metric is a rate of work, `per_op`).
pub fn defs(server: bool, per_op: bool) -> Vec<MetricDef> {
    let names: &[&str] = if server && per_op {
        &[SERVER_MEM, SERVER_CPU, CPU_PER_OP]
    } else if server {
        &[SERVER_MEM, SERVER_CPU]
    } else {
        &[PEAK_MEM, USER_CPU, SYS_CPU]
    };
    of_names(names)
}

/// How a cost is named to a person.
pub fn label(name: &str) -> &str {
    match name {
        PEAK_MEM => "peak memory",
        USER_CPU => "user CPU",
        SYS_CPU => "system CPU",
        SERVER_MEM => "server memory",
        SERVER_CPU => "server CPU",
        CPU_PER_OP => "server CPU per op",
        EVENT_MEM => "event memory",
        EVENT_FORK => "fork time",
        other => other,
    }
}

/// A cost's verdict in words: more or less of it than the baseline, the same within δ, or
/// not resolved.
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "MORE",
        Verdict::Faster => "LESS",
        Verdict::Equivalent => "SAME",
        Verdict::Inconclusive => "INCONCLUSIVE",
    }
}

/// A measured cost of one arm against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost<'a> {
    pub metric: &'a MetricAnalysis,
    pub contrast: &'a Contrast,
}

impl Cost<'_> {
    /// The interval says the arm costs more, by more than `effect` at the point estimate —
    /// a cost that has to be weighed against any benefit.
    pub fn is_more(&self) -> bool {
        self.contrast.verdict == Verdict::Slower
    }
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

/// The median of `metric` for an arm, from its summary.
pub fn arm_median(m: &MetricAnalysis, arm: &str) -> Option<f64> {
    m.arms
        .iter()
        .find(|a| a.arm == arm)?
        .summary
        .as_ref()
        .map(|s| s.median)
}

/// Whether a metric is a rate of work a load reports (requests, transactions, operations per
/// second), so CPU per unit of work can be derived from it.
pub fn is_rate_of_work(name: &str) -> bool {
    ["tps", "rps", "ops", "qps"]
        .iter()
        .any(|r| name == *r || name.ends_with(&format!("_{r}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_and_a_server_record_their_own_costs_all_lower_is_better() {
        let c = defs(false, false);
        assert_eq!(
            c.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            [PEAK_MEM, USER_CPU, SYS_CPU]
        );
        assert!(
            c.iter()
                .all(|d| d.cost && !d.context && d.better == Better::Lower)
        );
        assert_eq!(defs(true, false).len(), 2);
        assert_eq!(defs(true, true).len(), 3);
        assert!(is_rate_of_work("tps") && is_rate_of_work("set_rps") && !is_rate_of_work("wall_s"));
        assert_eq!(label(SYS_CPU), "system CPU");
        assert_eq!(verdict_word(Verdict::Slower), "MORE");
    }
}
