//! A bench saved in the results database as it runs.

use super::{BenchResult, CellEvidence, Plan};
use crate::analyze::bench::Observation;
use crate::backing::Backing;
use crate::model::stored::{StoredBenchPlan, StoredRunPlan};
use crate::probe::status::Status;

/// A bench stored as a run while it runs: the run row at the start, each round's observations as
/// the round ends, so an interrupted bench keeps what it measured. Arms are the backings, one
/// trial per observation, metrics named `<metric>@<size>` (so `results show/export`, `compare`
/// and `report` work on benches too).
pub struct StoredBench {
    store: crate::store::Store,
    path: std::path::PathBuf,
    id: i64,
    backings: Vec<Backing>,
    seq: i64,
}

impl StoredBench {
    pub fn start(
        plan: &Plan,
        system: Option<&Status>,
        kernel: Option<&str>,
        db: Option<&std::path::Path>,
    ) -> anyhow::Result<StoredBench> {
        use crate::analyze::experiment::MetricDef;
        use crate::analyze::verdict::Better;
        let path = db
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(crate::store::default_path);
        let mut store = crate::store::Store::open(&path)?;
        let mut metrics: Vec<MetricDef> = Vec::new();
        for w in &plan.workloads {
            for &m in w.metrics() {
                for &size in &plan.sizes {
                    let better = Better::of(m.higher_is_better());
                    metrics.push(MetricDef::contrasted(
                        crate::model::bench::cell_metric(m, size),
                        better,
                    ));
                }
            }
        }
        let arms: Vec<crate::store::ArmRow> = plan
            .backings
            .iter()
            .enumerate()
            .map(|(i, b)| crate::store::ArmRow {
                idx: i as i64,
                name: b.to_string(),
                spec: format!("bench backing {b}"),
            })
            .collect();
        let stored = StoredRunPlan::Bench(Box::new(StoredBenchPlan {
            bench: plan.clone(),
            metrics,
            system: system.cloned(),
            hugelab_version: None,
        }));
        // What was run, in the words of the command line (`results list` names it).
        let mut command = vec!["hugelab".to_string(), "bench".to_string()];
        if plan.workloads == [crate::workload::Workload::Tlb] {
            command.push("tlb".into());
        }
        let id = store.create_run(Some("bench"), &command, kernel, "running", &stored, &arms)?;
        Ok(StoredBench {
            store,
            path,
            id,
            backings: plan.backings.clone(),
            seq: 0,
        })
    }

    /// Store observations, each with its cell's coverage evidence where it is known.
    pub fn add(&mut self, obs: &[Observation], evidence: &[CellEvidence]) -> anyhow::Result<()> {
        for o in obs {
            let arm = self
                .backings
                .iter()
                .position(|b| *b == o.backing)
                .unwrap_or(0);
            let ev = evidence
                .iter()
                .find(|e| {
                    e.backing == o.backing
                        && e.size == o.size
                        && e.workload.metrics().contains(&o.metric)
                })
                .map(|e| crate::store::Evidence {
                    gathered: crate::collect::trial::TrialEvidence {
                        memory: crate::collect::sampler::MemorySamples {
                            coverage_at_peak: e.coverage.fraction,
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    coverage: Some(e.coverage.clone()),
                    ..Default::default()
                })
                .unwrap_or_default();
            self.store.add_trial(
                self.id,
                &crate::store::TrialRow {
                    block: o.round as i64,
                    arm_idx: arm as i64,
                    seq: self.seq,
                    ok: true,
                    flagged: None,
                    metrics: [(crate::model::bench::cell_metric(o.metric, o.size), o.value)].into(),
                    evidence: ev,
                },
            )?;
            self.seq += 1;
        }
        Ok(())
    }

    /// The note that says where the run is kept.
    pub fn saved_as(&self) -> String {
        format!(
            "saved as run {} in {} (`hugelab results show {}`)",
            self.id,
            self.path.display(),
            self.id
        )
    }

    /// Close the run with its status and its whole result (None for a failed run).
    pub fn finish(mut self, status: &str, result: Option<&BenchResult>) -> anyhow::Result<()> {
        self.store.finish_run(self.id, status, result)
    }
}
