//! What a trial records beside its metrics: an operator event's costs, CPU per operation, the
//! pools at its start, its evidence record, a VM's failure in its own words, and the metrics read
//! from its output.

use super::*;

/// The event's costs as metrics (the memory it added while its processes lived; the server's
/// fork time from its own report), and its evidence.
pub(super) fn event_costs(
    view: &EventView,
    report: Option<&str>,
) -> (Vec<(String, f64)>, EventEvidence) {
    use crate::analyze::costs::{EVENT_FORK, EVENT_MEM};
    let mut metrics = Vec::new();
    let (mut fork_s, mut cow) = (None, None);
    if view.ran && view.children > 0 {
        metrics.push((EVENT_MEM.to_string(), view.added_bytes() as f64));
        let info = report
            .and_then(|r| {
                std::process::Command::new("/bin/sh")
                    .arg("-c")
                    .arg(r)
                    .output()
                    .ok()
            })
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        fork_s = crate::collect::event::redis_fork_s(&info);
        cow = crate::collect::event::redis_cow_bytes(&info);
        if let Some(f) = fork_s {
            metrics.push((EVENT_FORK.to_string(), f));
        }
    }
    let ev = EventEvidence {
        view: view.clone(),
        fork_s,
        server_cow_bytes: cow,
    };
    (metrics, ev)
}

/// A server's CPU per unit of work: its CPU over the load's work (the primary rate times the
/// load's wall time), µs — where the plan records it.
pub(super) fn cpu_per_op(plan: &Plan, metrics: &BTreeMap<String, f64>) -> Option<f64> {
    use crate::analyze::costs::{CPU_PER_OP, SERVER_CPU};
    if !plan.metrics.iter().any(|m| m.name == CPU_PER_OP) {
        return None;
    }
    let work = metrics.get(&plan.primary().name)? * metrics.get("wall_s")?;
    (work > 0.0).then(|| metrics.get(SERVER_CPU).copied().unwrap_or(0.0) * 1e6 / work)
}

/// The pools an arm sets, as its trial starts: (page size, pages in the pool).
pub(super) fn pools_at_start(arm: &Arm, root: &crate::probe::Root) -> Vec<(u64, u64)> {
    let sizes: Vec<u64> = arm
        .system
        .iter()
        .filter_map(|(k, _)| match k {
            crate::control::knob::Knob::HugetlbPages { size, .. } => Some(*size),
            _ => None,
        })
        .collect();
    if sizes.is_empty() {
        return Vec::new();
    }
    crate::probe::hugetlb::read(root)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| sizes.contains(&p.page_size))
        .map(|p| (p.page_size, p.total))
        .collect()
}

/// Why a QEMU arm's trial failed, when QEMU says it could not map its guest RAM: the pool it
/// needed as the kernel reports it now (the arm's settings are still applied).
pub(super) fn qemu_failure(arm: &Arm, stderr: &str, root: &Root) -> Option<String> {
    let q = arm.process.qemu?;
    let line = stderr
        .lines()
        .find(|l| l.contains("backing store for guest RAM") || l.contains("memory-backend"))?;
    let what = match q.backing.hugetlb_page() {
        Some(ps) => {
            let pool = crate::probe::hugetlb::read(root)
                .ok()?
                .into_iter()
                .find(|p| p.page_size == ps)?;
            let why = if arm
                .spec
                .split(',')
                .any(|kv| kv.trim().starts_with("hugetlb."))
            {
                "the arm's own hugetlb.<size> setting leaves it short (without it, run grows the pool)"
            } else {
                "the kernel could not grow the pool as far as asked (memory too fragmented or too full: reserve the pages at boot, or compact first)"
            };
            format!(
                "on {} hugetlb pages: the pool has {} pages, {} available (HugePages_Free − Rsvd); {why}",
                Bytes(ps),
                pool.total,
                pool.available(),
            )
        }
        None => format!("on {}", q.backing.name()),
    };
    Some(format!(
        "arm {}: QEMU could not get its guest RAM {what} — QEMU said: {}",
        arm.name,
        line.trim()
    ))
}

/// A trial's metrics from its outcome and output: wall time, the `--metric` regexes and the
/// load format's parser; the metrics not found, and why the load's output could not be read.
pub(super) fn read_metrics(
    plan: &Plan,
    o: &TrialOutcome,
    trial_dir: Option<&crate::collect::load::TrialDir>,
) -> (BTreeMap<String, f64>, Vec<String>, Option<String>) {
    let mut metrics = BTreeMap::from([("wall_s".to_string(), o.wall_ns as f64 / 1e9)]);
    let mut missing = Vec::new();
    for m in &plan.outputs {
        match m.extract(&o.stdout, &o.stderr) {
            Some(v) => {
                metrics.insert(m.name.clone(), v);
            }
            None => missing.push(m.name.clone()),
        }
    }
    let mut load_error = None;
    if let (Some(f), Some(d)) = (plan.load_format, trial_dir)
        && o.succeeded()
    {
        match crate::collect::load::read(f, &o.stdout, &o.stderr, d.path()) {
            Ok(m) => metrics.extend(m),
            Err(e) => load_error = Some(e),
        }
        for m in &plan.metrics {
            if m.name != "wall_s"
                && !m.cost
                && m.name != crate::experiment::SERVER_READY
                && !plan.outputs.iter().any(|x| x.name == m.name)
                && !metrics.contains_key(&m.name)
            {
                missing.push(m.name.clone());
            }
        }
    }
    (metrics, missing, load_error)
}
