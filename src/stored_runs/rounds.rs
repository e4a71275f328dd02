//! A bench that kept its rounds but not its result (an earlier version's, or one interrupted
//! before it ended) rebuilt from them: each stored trial is one round of one cell
//! (`<metric>@<size>` on a backing), decided again by the bench's own analysis.

use crate::backing::Backing;
use crate::model::bench::{BenchResult, Observation, cell_metric};
use crate::store::{ArmRow, RunMeta, TrialRow};

/// The bench's result from its stored rounds at `confidence`.
pub fn rebuild(
    meta: &RunMeta,
    arms: &[ArmRow],
    trials: &[TrialRow],
    confidence: f64,
) -> anyhow::Result<BenchResult> {
    let Some(stored) = meta.plan.bench() else {
        anyhow::bail!(
            "run {} is a bench stored by an earlier version in a shape this version cannot read; its rounds are in `hugelab results export {} --format csv`",
            meta.id,
            meta.id
        );
    };
    let plan = stored.bench.clone();
    // Every cell the plan could have measured, by its stored name.
    let mut cells: Vec<(String, crate::metric::Metric, u64)> = Vec::new();
    for w in &plan.workloads {
        for &m in w.metrics() {
            for &size in &plan.sizes {
                cells.push((cell_metric(m, size), m, size));
            }
        }
    }
    let mut observations = Vec::new();
    for t in trials.iter().filter(|t| t.ok && t.block >= 0) {
        let Some(backing) = arms
            .iter()
            .find(|a| a.idx == t.arm_idx)
            .and_then(|a| a.name.parse::<Backing>().ok())
        else {
            continue;
        };
        for (name, value) in &t.metrics {
            if let Some((_, metric, size)) = cells.iter().find(|c| c.0 == *name) {
                observations.push(Observation {
                    metric: *metric,
                    size: *size,
                    backing,
                    round: t.block as usize,
                    value: *value,
                });
            }
        }
    }
    let tlb = (plan.workloads == [crate::workload::Workload::Tlb]).then(|| {
        let geometry = crate::probe::tlb::TlbGeometry {
            levels: Vec::new(),
            source: "not kept by this stored bench".into(),
        };
        let hypervisor = meta.plan.system().is_some_and(|s| s.cpu.hypervisor);
        (geometry, hypervisor)
    });
    let (cells, tlb) = crate::analyze::bench::decide(&observations, &plan, tlb, confidence);
    let mut plan = plan;
    plan.confidence = confidence;
    Ok(BenchResult {
        schema: crate::model::bench::SCHEMA.into(),
        kernel: meta.kernel.clone(),
        cpu: meta.plan.system().and_then(|s| s.cpu.model_name.clone()),
        plan,
        observations,
        cells,
        evidence: Vec::new(),
        skipped: Vec::new(),
        settings_changed: Vec::new(),
        notes: Vec::new(),
        elapsed_s: 0.0,
        tlb,
        measured_tlb: None,
        why: None,
    })
}
