//! The duet schedule (warm design): every arm's burst of a block at the same moment. Each
//! trial is made ready (its server acquired) in the block's random order, then every trial's
//! evidence starts, then every load is released at once ([`Runner::run_together`]: each spawned
//! after one barrier, timed and reaped on its own thread), then each trial is finished and
//! stored in that order. The machine's changing noise (the host, its other guests, a scheme
//! paging idle memory out) then falls on every arm's burst alike (Bulej et al., "Duet
//! Benchmarking", ICPE 2020).
//!
//! What the arms share is said with each trial (`duet: true`): machine-wide counters (vmstat,
//! the mTHP stats) of a trial hold every arm's burst of its block; its `noise.other_cpu_ns`
//! has the other arms' loads and servers taken out, so only the rest of the machine is noise.
//!
//! [`Runner::run_together`]: crate::workload::child::Runner::run_together

use super::{BlockEnd, Course, block_order};
use crate::experiment::Effects;
use crate::experiment::trial::{Beside, ServerSlot, begin, end, own_cpu_ns, ready};
use crate::store::TrialRow;
use crate::workload::child::{TrialHooks, TrialSpec};

impl Course<'_> {
    /// Servers per arm at once (1 without a warm design's replicas).
    pub(super) fn replicas(&self) -> usize {
        self.servers.as_ref().map_or(1, |s| s.replicas())
    }

    /// Every arm's trial of `block` at once.
    pub(super) fn duet_block(
        &mut self,
        block: usize,
        ctx: &mut Effects,
    ) -> anyhow::Result<BlockEnd> {
        let plan = self.plan;
        let condition = self.restore(ctx)?;
        let mut rows = Vec::new(); // arms whose server was not up
        // With replicas, block `block` is `replicas` blocks at once, numbered apart, each in
        // its replica's own lifetime.
        let replicas = self.replicas();
        let lifetime = self.lifetime;
        // Said before any trial's evidence starts: the live estimate is analysis, not measuring.
        let names: Vec<String> = plan.arms.iter().map(|x| x.name.clone()).collect();
        ctx.progress.message(&format!(
            "{} · every arm's burst at once{}{}",
            super::progress::block_label(plan, block),
            match replicas {
                1 => String::new(),
                n => format!(" in {n} replicas"),
            },
            super::progress::with_forecast(
                super::progress::estimate_line(&names, plan, &self.x.trials),
                self.servers.as_ref().and_then(|s| s.forecast()),
            ),
        ));
        let mut readied = Vec::new();
        for replica in 0..replicas {
            let stored = block * replicas + replica;
            for arm in block_order(plan.arms.len(), stored, plan.seed) {
                let mut slot = self
                    .servers
                    .as_deref_mut()
                    .map(|s| ServerSlot::of_replica(s, lifetime, (replica, replicas)));
                let (job, guard, notes) = (&self.job, &mut self.guard, &mut self.x.notes);
                match ready(job, arm, stored as i64, ctx, guard, notes, slot.as_mut())? {
                    Ok(r) => readied.push((replica, r)),
                    Err(failed) => rows.push(failed),
                }
            }
        }
        let mut begun = Vec::new();
        for (replica, r) in readied {
            let slot = self
                .servers
                .as_deref_mut()
                .map(|s| ServerSlot::of_replica(s, lifetime, (replica, replicas)));
            begun.push((replica, begin(&self.job, r, ctx, slot.as_ref())?));
        }
        let outcomes = {
            let trials: Vec<(&TrialSpec, &mut (dyn TrialHooks + Send))> = begun
                .iter_mut()
                .map(|(_, b)| (&b.spec, &mut b.gatherer as &mut (dyn TrialHooks + Send)))
                .collect();
            ctx.runner.run_together(trials)
        };
        let mut ended = Vec::new();
        for ((replica, b), o) in begun.into_iter().zip(outcomes) {
            let slot = self
                .servers
                .as_deref_mut()
                .map(|s| ServerSlot::of_replica(s, lifetime, (replica, replicas)));
            ended.push((replica, end(&self.job, b, o, ctx, &mut self.x.notes, slot)?));
        }
        let own: Vec<u64> = ended.iter().map(|(_, e)| e.own_cpu_ns()).collect();
        for ((replica, e), others_cpu_ns) in ended.into_iter().zip(beside_each(&own)) {
            rows.push(e.row(Beside {
                duet: true,
                condition: condition.clone(),
                others_cpu_ns,
            }));
            if replica == 0 {
                ctx.progress.step("");
            }
        }
        self.note_headroom(&rows, ctx);
        let mut end = BlockEnd::Done;
        for t in rows {
            if let Some(stop) = self.record(t, &mut end, ctx)? {
                return Ok(stop);
            }
        }
        if self.interrupted_in(block, ctx) {
            return Ok(BlockEnd::Stop);
        }
        Ok(end)
    }

    /// Once, after the first duet block: the CPUs the arms' bursts used together against the
    /// machine's. A saturated machine is said, with what it means for the answer: saturated when
    /// the bursts, the rest of the machine and the hypervisor's steal kept 90% of the CPUs busy,
    /// or when the kernel's pressure accounting saw runnable tasks waiting for a CPU half the
    /// block (on a busy host a vCPU's stolen time shows there and not as CPU used).
    fn note_headroom(&mut self, rows: &[TrialRow], ctx: &mut Effects) {
        if self.x.notes.iter().any(|n| n.starts_with("duet:")) {
            return;
        }
        let Some(used) = cpus_used(rows) else { return };
        let others = others_used(rows).unwrap_or(0.0);
        let cpus = crate::probe::cpu::allowed_cpus().len().max(1) as f64;
        let stolen = per_wall(rows, |n| Some(n.steal_ns)).unwrap_or(0.0);
        let waiting = per_wall(rows, |n| n.psi_cpu_some_ns);
        let mut seen = format!(
            "duet: the arms' bursts used {used:.1} of {cpus:.0} CPUs together while the rest of the machine used {others:.1}"
        );
        if stolen >= 0.05 {
            seen += &format!(" and the hypervisor took {stolen:.1}");
        }
        if let Some(w) = waiting {
            seen += &format!(
                "; some task waited for a CPU {:.0}% of the time",
                100.0 * w.min(1.0)
            );
        }
        let note = if saturated(used + others + stolen, cpus, waiting) {
            format!(
                "{seen}: the machine is saturated, so each arm's throughput is its share of the CPUs, which pulls the arms' throughputs together (a difference shows in the CPU per operation costs more than in throughput); --schedule alternating gives each burst the machine alone"
            )
        } else {
            seen
        };
        ctx.progress.note(&note);
        self.x.notes.push(note);
    }
}

/// Whether a duet block saturated the machine: its CPUs 90% busy (stolen time counted), or a
/// runnable task waiting for a CPU half the block by the kernel's pressure accounting.
fn saturated(busy: f64, cpus: f64, waiting: Option<f64>) -> bool {
    busy >= 0.9 * cpus || waiting.is_some_and(|w| w >= 0.5)
}

/// A trial's own CPU time in a block: its load's and its server's, ns.
fn own_cpu(t: &TrialRow) -> u64 {
    own_cpu_ns(&t.evidence.outcome, &t.metrics)
}

/// For each of a block's trials, the CPU the others used beside it (their loads and servers,
/// which ran beside it on purpose, so not its noise), from each one's own.
fn beside_each(own: &[u64]) -> Vec<u64> {
    let all: u64 = own.iter().sum();
    own.iter().map(|mine| all - mine).collect()
}

/// The CPUs a block's trials used together: their CPU time over the longest load's wall time.
fn cpus_used(rows: &[TrialRow]) -> Option<f64> {
    let wall = rows
        .iter()
        .map(|t| t.evidence.outcome.wall_ns)
        .max()
        .filter(|w| *w > 0)?;
    Some(rows.iter().map(own_cpu).sum::<u64>() as f64 / wall as f64)
}

/// A noise reading over its trial's wall time, the largest among the block's trials.
fn per_wall(
    rows: &[TrialRow],
    read: impl Fn(&crate::collect::noise::TrialNoise) -> Option<u64>,
) -> Option<f64> {
    rows.iter()
        .filter_map(|t| {
            let ns = read(&t.evidence.gathered.noise?)?;
            let wall = Some(t.evidence.outcome.wall_ns).filter(|w| *w > 0)?;
            Some(ns as f64 / wall as f64)
        })
        .reduce(f64::max)
}

/// The CPUs the rest of the machine kept busy during a block: a trial's `other_cpu_ns` (the
/// other arms' loads and servers already taken out) over its wall time, the largest of them.
fn others_used(rows: &[TrialRow]) -> Option<f64> {
    per_wall(rows, |n| Some(n.other_cpu_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::costs::SERVER_CPU;

    fn row(user_ns: u64, server_s: f64, other_ns: u64, wall_ns: u64) -> TrialRow {
        TrialRow {
            block: 0,
            arm_idx: 0,
            seq: 0,
            ok: true,
            flagged: None,
            metrics: [(SERVER_CPU.to_string(), server_s)].into(),
            evidence: crate::store::Evidence {
                outcome: crate::workload::child::TrialOutcome {
                    user_ns,
                    wall_ns,
                    ..Default::default()
                },
                gathered: crate::collect::trial::TrialEvidence {
                    noise: Some(crate::collect::noise::TrialNoise {
                        other_cpu_ns: other_ns,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
        }
    }

    #[test]
    fn each_trial_is_given_the_other_arms_cpu_and_their_cpus_are_summed() {
        // Two arms, each 0.2 s of load and 0.6 s of server CPU in a 1 s burst; each saw the
        // other's 0.8 s plus 0.1 s of something else.
        let rows = vec![row(200_000_000, 0.6, 100_000_000, 1_000_000_000); 2];
        let own: Vec<u64> = rows.iter().map(own_cpu).collect();
        assert_eq!(beside_each(&own), [800_000_000, 800_000_000]);
        assert_eq!(beside_each(&[1, 2, 4]), [6, 5, 3]);
        assert!((cpus_used(&rows).unwrap() - 1.6).abs() < 1e-9);
        assert_eq!(cpus_used(&[row(1, 0.0, 0, 0)]), None);
    }

    #[test]
    fn a_machine_is_saturated_by_busy_cpus_or_by_tasks_waiting_for_one() {
        assert!(saturated(1.8, 2.0, None));
        assert!(!saturated(1.6, 2.0, None));
        // 1.5 CPUs used on a host that stole the rest: the tasks waited for a CPU.
        assert!(saturated(1.5, 2.0, Some(0.9)));
        assert!(!saturated(1.5, 2.0, Some(0.2)));
    }
}
