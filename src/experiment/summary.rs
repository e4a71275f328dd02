//! experiment: what a run's stored trials say beyond the metric contrasts — the trace per arm,
//! stall contrasts, the servers' summaries (instance spread, first bursts), a VM's guest-RAM
//! advice, and a fixed design too short for any interval — assembled after the last trial.

use crate::analyze::experiment::{ExperimentAnalysis, MetricAnalysis, TrialData};
use crate::analyze::server::ServerSummary;
use crate::model::run::Plan;
use crate::probe::Root;
use crate::store::TrialRow;

/// `--trace`: per latency and count kind that saw anything, the mean per trial of each arm.
pub fn trace_summary(plan: &Plan, trials: &[TrialRow]) -> Vec<String> {
    use std::collections::BTreeMap;
    // kind → arm → (trials, total ns or count, stalls)
    let mut lat: BTreeMap<String, BTreeMap<usize, (u64, f64, f64)>> = BTreeMap::new();
    let mut cnt: BTreeMap<String, BTreeMap<usize, (u64, f64)>> = BTreeMap::new();
    let mut lost = 0u64;
    for t in trials.iter().filter(|t| t.block >= 0) {
        lost += t.evidence.trace_lost.unwrap_or(0);
        let Some(w) = t.evidence.trace.clone() else {
            continue;
        };
        let arm = t.arm_idx as usize;
        for l in w.latencies {
            let e = lat.entry(l.kind).or_default().entry(arm).or_default();
            e.0 += 1;
            e.1 += l.hist.total_ns as f64;
            e.2 += l.hist.count as f64;
        }
        for c in w.counts {
            let e = cnt.entry(c.kind).or_default().entry(arm).or_default();
            e.0 += 1;
            e.1 += c.total as f64;
        }
    }
    let name = |i: &usize| plan.arms[*i].name.clone();
    let mut out = Vec::new();
    for (kind, arms) in &lat {
        if arms.values().all(|v| v.2 == 0.0) {
            continue;
        }
        let parts: Vec<String> = arms
            .iter()
            .map(|(i, (n, ns, k))| {
                let n = (*n).max(1) as f64;
                let what = if kind.ends_with("compaction") {
                    "zone compactions"
                } else {
                    "stalls"
                };
                format!("{} {:.1} ms ({:.1} {what})", name(i), ns / n / 1e6, k / n)
            })
            .collect();
        out.push(format!(
            "trace, mean per trial: {kind}: {}",
            parts.join(" · ")
        ));
    }
    for (kind, arms) in &cnt {
        if arms.values().all(|v| v.1 == 0.0) {
            continue;
        }
        let parts: Vec<String> = arms
            .iter()
            .map(|(i, (n, c))| format!("{} {:.1}", name(i), c / (*n).max(1) as f64))
            .collect();
        out.push(format!(
            "trace, mean per trial: {kind}: {}",
            parts.join(" · ")
        ));
    }
    if out.is_empty() {
        out.push(format!(
            "trace ({}): no events in any trial's process tree",
            crate::analyze::trace::catalogue::names(&plan.trace)
        ));
    }
    if lost > 0 {
        out.push(format!(
            "trace: the kernel dropped {lost} records during trials (ring buffers full): the means above are lower bounds"
        ));
    }
    out
}

/// `--trace`: each arm's stall time per trial against the baseline's, by paired blocks.
pub fn stall_contrasts_of(
    plan: &Plan,
    trials: &[TrialRow],
) -> Vec<crate::analyze::trace::StallContrast> {
    let names: Vec<String> = plan.arms.iter().map(|a| a.name.clone()).collect();
    crate::analyze::stored::stall_contrasts(trials, &names, plan.baseline, plan.confidence)
}

/// A fixed design whose blocks cannot give any signed-rank interval at the level of the first
/// (strictest) Holm step: said before the first trial, with the blocks it needs.
pub fn too_few_blocks(plan: &Plan) -> Option<String> {
    if !matches!(plan.design, crate::analyze::verdict::Design::Fixed) {
        return None;
    }
    let (m, level) = (plan.contrasts(), plan.first_step_level());
    let need = crate::stats::min_pairs_for_interval(level);
    (plan.blocks < need).then(|| {
        format!(
            "the {} blocks planned are too few for a signed-rank interval at {} (the first Holm step of {m} contrasts at {}): every verdict will be INCONCLUSIVE; give --blocks {need} or more, or --sequential",
            plan.blocks,
            crate::model::verdict::fmt_level(level),
            crate::model::verdict::fmt_level(plan.confidence)
        )
    })
}

/// Per arm, the servers' evidence, instance spread and first-burst effects (empty without
/// `--server`).
pub fn servers(plan: &Plan, trials: &[TrialRow], data: &[TrialData]) -> Vec<ServerSummary> {
    if plan.server.is_none() {
        return Vec::new();
    }
    let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
    let primary = &plan.primary().name;
    crate::analyze::server::summaries(&names, primary, plan.confidence, trials, data)
}

/// A QEMU run's guest-RAM advice, when an arm set a backing and two blocks completed.
pub fn vm_advice(
    plan: &Plan,
    command: &[String],
    shell: bool,
    report: &ExperimentAnalysis,
    blocks_done: usize,
) -> Option<crate::analyze::vm::VmAdvice> {
    let backings: Vec<_> = plan
        .arms
        .iter()
        .map(|x| x.process.qemu.map(|q| q.backing))
        .collect();
    match crate::backing::qemu::guest_size(command, shell) {
        Ok(guest) if backings.iter().any(Option::is_some) && blocks_done >= 2 => {
            let nodes = crate::probe::hugetlb::read(&Root::system())
                .ok()
                .and_then(|p| p.first().map(|p| p.nodes.len()))
                .unwrap_or(1);
            crate::analyze::vm::advise(report, &backings, guest, nodes)
        }
        _ => None,
    }
}

/// How many blocks of the primary metric completed with every arm's trial ok.
pub fn complete_blocks(metrics: &[MetricAnalysis], primary: &str) -> usize {
    metrics
        .iter()
        .find(|m| m.metric.name == primary)
        .map_or(0, |m| m.complete_blocks)
}

/// Per arm that sets a hugetlb pool: pages asked, obtained, used by the workload at its peak
/// (a command's tree from the sampler, a server's committed pages), and MemTotal.
pub fn pool_uses(plan: &Plan, trials: &[TrialRow]) -> Vec<crate::model::run::PoolUse> {
    use crate::control::knob::Knob;
    let mem_total = crate::probe::meminfo::read(&Root::system())
        .ok()
        .flatten()
        .and_then(|m| m.mem_total);
    let mut out = Vec::new();
    for (i, arm) in plan.arms.iter().enumerate() {
        for (k, v) in &arm.system {
            let Knob::HugetlbPages { size, node: None } = *k else {
                continue;
            };
            let ts: Vec<&TrialRow> = trials
                .iter()
                .filter(|t| t.block >= 0 && t.arm_idx == i as i64)
                .collect();
            let obtained = ts
                .iter()
                .filter_map(|t| {
                    let pools = t.evidence.pools.as_ref()?;
                    pools.iter().find(|p| p.0 == size).map(|p| p.1)
                })
                .min();
            let used: Vec<f64> = ts
                .iter()
                // A server that did not come up was not read.
                .filter(|t| t.evidence.server.as_ref().is_none_or(|s| s.pid.is_some()))
                .map(|t| t.evidence.hugetlb_bytes() as f64 / size as f64)
                .collect();
            let share_of_mem_total = obtained
                .zip(mem_total.filter(|t| *t > 0))
                .map(|(n, t)| (n * size) as f64 / t as f64);
            out.push(crate::model::run::PoolUse {
                arm: arm.name.clone(),
                page_size: size,
                asked: v.parse().unwrap_or(0),
                obtained,
                in_use: (!used.is_empty()).then(|| used.iter().sum::<f64>() / used.len() as f64),
                mem_total,
                share_of_mem_total,
            });
        }
    }
    out
}
