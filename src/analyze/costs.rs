//! analyze: what an arm costs, as metrics of every run. A huge page's benefit comes with
//! costs — memory (a sparse region faulted in 2 MiB at a time, a hugetlb pool reserved for a
//! server), CPU time (zeroing and compacting huge pages is system time) — so every run records
//! them per trial and contrasts them like any metric: paired per block, Hodges–Lehmann with its
//! signed-rank interval, Holm across arms. They are never the primary metric and never stop a
//! sequential run; the answer shows them on a cost line and `advise` weighs them.

use super::experiment::MetricDef;
use super::verdict::Better;
pub use crate::model::costs::{
    CPU_PER_OP, Cost, EVENT_FORK, EVENT_MEM, PEAK_MEM, SERVER_CPU, SERVER_HELD, SERVER_MEM,
    SYS_CPU, USER_CPU, arm_median, label, of_arm,
};

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
/// when the primary metric is a rate of work, `per_op`). A server's memory as held (pages
/// touched) is recorded beside them as context: summarised per arm, never contrasted or weighed.
pub fn defs(server: bool, per_op: bool) -> Vec<MetricDef> {
    let names: &[&str] = if server && per_op {
        &[SERVER_MEM, SERVER_CPU, CPU_PER_OP]
    } else if server {
        &[SERVER_MEM, SERVER_CPU]
    } else {
        &[PEAK_MEM, USER_CPU, SYS_CPU]
    };
    let mut defs = of_names(names);
    if server {
        defs.push(MetricDef {
            context: true,
            ..of_names(&[SERVER_HELD]).remove(0)
        });
    }
    defs
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
        assert_eq!(defs(true, false).len(), 3);
        assert_eq!(defs(true, true).len(), 4);
        let held = defs(true, true).pop().unwrap();
        assert!(held.name == SERVER_HELD && held.cost && held.context);
        assert!(is_rate_of_work("tps") && is_rate_of_work("set_rps") && !is_rate_of_work("wall_s"));
        assert_eq!(label(SYS_CPU), "system CPU");
    }
}
