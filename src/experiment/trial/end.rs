//! A trial's end, in two steps: everything read once its load ended ([`end`]: the server read
//! and released, the gathered evidence finished, the metrics and costs read, the failure said),
//! then its row built whole ([`Ended::row`]) with what the block it ran in adds — a duet's
//! other arms taken out of its noise, the condition brought back before it. No part of the
//! evidence is set after it is built.

use super::*;
use crate::collect::noise::TrialNoise;
use crate::model::evidence::{ConditionStamp, Judgment, MachineAtStart, ServerEvidence, Watched};

/// What the block a trial ran in adds to its evidence.
#[derive(Default)]
pub(in crate::experiment) struct Beside {
    /// Every arm's burst of the block ran at once.
    pub duet: bool,
    /// The `--condition` brought back before the trial.
    pub condition: Option<ConditionStamp>,
    /// CPU the block's other trials (loads and servers) used beside this one, ns: not noise.
    pub others_cpu_ns: u64,
}

/// A trial whose load ended, every part of its evidence read, the evidence not yet built.
pub(in crate::experiment) struct Ended {
    arm_idx: usize,
    block: i64,
    ok: bool,
    flagged: Option<String>,
    pub(in crate::experiment) metrics: BTreeMap<String, f64>,
    pub(in crate::experiment) outcome: TrialOutcome,
    gathered: TrialEvidence,
    missing: Vec<String>,
    backing: Option<Judgment>,
    load_error: Option<String>,
    at_start: Option<MachineAtStart>,
    pools: Vec<(u64, u64)>,
    event: Option<EventEvidence>,
    discovered: Vec<crate::collect::load::LoadMetric>,
    lifetime: Option<usize>,
    replica: Option<usize>,
    burst_s: Option<u64>,
    server: Option<ServerEvidence>,
    failure_reason: Option<String>,
    watch: Option<Watched>,
    trace: Option<(crate::analyze::trace::TraceWindow, u64)>,
}

/// Everything of a trial after its load `o` ended: the server read and released, the evidence
/// gathered around it finished, the metrics and costs read, why it failed.
pub(in crate::experiment) fn end(
    job: &Job,
    b: Begun,
    o: std::io::Result<TrialOutcome>,
    ctx: &mut Effects,
    notes: &mut Vec<String>,
    mut servers: Option<ServerSlot>,
) -> anyhow::Result<Ended> {
    let plan = job.plan;
    let Begun {
        arm_idx,
        block,
        spec,
        trial_dir,
        pools,
        at_start,
        gatherer,
        during,
        event,
    } = b;
    let arm = &plan.arms[arm_idx];
    let memory = during.map(DuringLoad::finish);
    let event = event.map(|(e, report)| (e.finish(), report));
    let served = match (servers.as_mut(), memory) {
        (Some(s), Some(m)) => {
            let seat = s.seat(arm_idx);
            Some(s.schedule.release(seat, m))
        }
        _ => None,
    };
    let o = o?;
    let server_cpu = served.as_ref().map_or(0, |s| s.cpu_ns);
    let gathered = gatherer.finish(o.user_ns + o.sys_ns + server_cpu);
    let trace = finish_trace(ctx, &spec, &o);
    let (mut metrics, mut missing, load_error) = read_metrics(plan, &o, trial_dir.as_ref());
    let discovered = discovered_rows(plan, &o, trial_dir.as_ref(), &mut missing);
    let event = add_costs(
        plan,
        &mut metrics,
        (&o, &gathered, &pools),
        served.as_ref(),
        &event,
    );
    note_uncounted(&gathered, notes);
    let backing = match &served {
        Some(s) => s.backing.as_deref().cloned(),
        None => experiment::judge_trial(arm.expectation(), &gathered.memory, &o.stdout, &o.stderr),
    };
    let mut flagged = match &served {
        Some(s) => s.flag.clone(),
        None => backing
            .as_ref()
            .filter(|j| j.state == State::FellBack)
            .map(|j| j.why.clone()),
    };
    let watch = job.watched.get(&arm_idx).map(|(w, pid)| {
        let (seen, flag) = watch_arm(job, arm_idx, w, *pid);
        flagged = flagged.clone().or(flag);
        seen
    });
    let qemu = qemu_failure(arm, &o.stderr, &ctx.root).filter(|_| !o.succeeded());
    if let Some(why) = qemu.as_ref().filter(|w| !notes.contains(w)) {
        notes.push(why.clone());
    }
    let server_failure = served.as_ref().and_then(|s| s.failure.clone());
    let (replica, burst_s) = servers.as_ref().map_or((None, None), |s| {
        let replica = (s.schedule.replicas() > 1).then_some(s.replica);
        (replica, s.schedule.arm(s.seat(arm_idx)).burst())
    });
    Ok(Ended {
        arm_idx,
        block,
        ok: o.succeeded() && missing.is_empty() && server_failure.is_none(),
        flagged,
        metrics,
        gathered,
        missing,
        backing,
        load_error,
        at_start,
        pools,
        event,
        discovered,
        lifetime: servers.as_ref().and_then(|s| s.lifetime),
        replica,
        burst_s,
        server: served.map(|s| *s.evidence),
        failure_reason: qemu.or(server_failure),
        watch,
        trace,
        outcome: o,
    })
}

impl Ended {
    /// The trial's own CPU time: its load's and its server's, ns.
    pub(in crate::experiment) fn own_cpu_ns(&self) -> u64 {
        own_cpu_ns(&self.outcome, &self.metrics)
    }

    /// The trial's row, its evidence built whole with what its block adds.
    pub(in crate::experiment) fn row(self, beside: Beside) -> TrialRow {
        let served = self.server.is_some();
        let load_output_tail = match served {
            true => output_tail(&self.outcome, 20)
                .into_iter()
                .map(String::from)
                .collect(),
            false => Vec::new(),
        };
        let gathered = TrialEvidence {
            noise: without(self.gathered.noise, beside.others_cpu_ns),
            ..self.gathered
        };
        let evidence = Evidence {
            stderr_tail: stderr_tail(&self.outcome),
            load_output_tail,
            outcome: self.outcome,
            gathered,
            missing_metrics: self.missing,
            backing: self.backing,
            load_error: self.load_error,
            machine_at_start: self.at_start,
            pools: (!self.pools.is_empty()).then_some(self.pools),
            event: self.event,
            load_metrics: (!self.discovered.is_empty()).then_some(self.discovered),
            lifetime: self.lifetime,
            replica: self.replica,
            server: self.server,
            failure_reason: self.failure_reason,
            watch: self.watch,
            trace_lost: self.trace.as_ref().map(|(_, lost)| *lost),
            trace: self.trace.map(|(w, _)| w),
            burst_s: self.burst_s,
            duet: beside.duet,
            condition: beside.condition,
            coverage: None,
            imported: false,
            unread: Vec::new(),
        };
        TrialRow {
            block: self.block,
            arm_idx: self.arm_idx as i64,
            seq: 0,
            ok: self.ok,
            flagged: self.flagged,
            metrics: self.metrics,
            evidence,
        }
    }
}

/// A trial's own CPU time from its outcome and metrics: its load's and its server's, ns.
pub(in crate::experiment) fn own_cpu_ns(o: &TrialOutcome, metrics: &BTreeMap<String, f64>) -> u64 {
    let server = metrics
        .get(crate::analyze::costs::SERVER_CPU)
        .map_or(0.0, |s| s * 1e9) as u64;
    o.user_ns + o.sys_ns + server
}

/// The machine's noise during a trial without the CPU its block's other trials used beside it.
fn without(noise: Option<TrialNoise>, others_cpu_ns: u64) -> Option<TrialNoise> {
    noise.map(|n| TrialNoise {
        other_cpu_ns: n.other_cpu_ns.saturating_sub(others_cpu_ns),
        ..n
    })
}

/// A failed trial's last lines of standard error (none for one that succeeded).
fn stderr_tail(o: &TrialOutcome) -> Vec<String> {
    if o.succeeded() {
        return Vec::new();
    }
    let tail: Vec<String> = o.stderr.lines().rev().take(5).map(String::from).collect();
    tail.into_iter().rev().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_trials_cpu_leaves_the_noise_and_never_below_zero() {
        let n = TrialNoise {
            other_cpu_ns: 900,
            steal_ns: 7,
            ..Default::default()
        };
        let left = without(Some(n), 800).unwrap();
        assert_eq!((left.other_cpu_ns, left.steal_ns), (100, 7));
        assert_eq!(without(Some(n), 1_000).unwrap().other_cpu_ns, 0);
        assert_eq!(without(None, 5), None);
    }

    #[test]
    fn only_a_failed_trial_keeps_its_last_five_lines_of_stderr() {
        let failed = TrialOutcome {
            exit_code: Some(1),
            stderr: (1..=7).map(|i| format!("line {i}\n")).collect(),
            ..Default::default()
        };
        assert_eq!(
            stderr_tail(&failed),
            ["line 3", "line 4", "line 5", "line 6", "line 7"]
        );
        let fine = TrialOutcome {
            exit_code: Some(0),
            ..failed
        };
        assert!(stderr_tail(&fine).is_empty());
    }
}
