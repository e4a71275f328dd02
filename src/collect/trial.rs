//! Evidence around one trial of `run`, gathered on the same schedule for every arm and never on
//! the thread that waits for the child: the memory sampler on its own thread, the perf group
//! opened just after the spawn, the noise readings just outside the timed span, and the
//! kernel's huge-page counter deltas.

pub use crate::model::trial::gathered::TrialEvidence;

use super::noise::Mark;
use super::perf::Counters;
use super::sampler::{MemorySamples, Schedule};
use crate::probe::Root;
use crate::probe::cpu::Cpu;
use crate::probe::pmu::PerfEvent;
use crate::workload::child::TrialHooks;
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Instant;

/// Counted for every trial where the kernel allows: faults always, TLB and cycles with a PMU.
pub const CHILD_EVENTS: [PerfEvent; 5] = [
    PerfEvent::PageFaults,
    PerfEvent::DtlbLoads,
    PerfEvent::DtlbLoadMisses,
    PerfEvent::Cycles,
    PerfEvent::DtlbWalkCycles,
];

/// Implements the runner's hooks for one trial; [`Gatherer::finish`] returns the evidence.
pub struct Gatherer {
    root: Root,
    cpu: Cpu,
    schedule: Schedule,
    noise: Mark,
    kernel_before: BTreeMap<String, u64>,
    sampler: Option<(Sender<()>, JoinHandle<MemorySamples>)>,
    counters: Option<Counters>,
    /// Read once the child exited: its perf counts, its memory samples.
    counted: Option<Counted>,
    memory: Option<MemorySamples>,
}

/// The child's perf counts, read as it exits.
struct Counted {
    perf: BTreeMap<PerfEvent, u64>,
    running_fraction: Option<f64>,
    unavailable: Vec<String>,
}

impl Gatherer {
    /// Take the "before" readings now: call just before starting the trial.
    pub fn new(root: &Root, cpu: &Cpu, schedule: Schedule) -> Gatherer {
        Gatherer {
            root: root.clone(),
            cpu: cpu.clone(),
            schedule,
            kernel_before: super::huge_counters(root),
            noise: super::noise::mark(root),
            sampler: None,
            counters: None,
            counted: None,
            memory: None,
        }
    }

    /// The evidence, once the child is reaped (`child_cpu_ns` from its rusage).
    pub fn finish(mut self, child_cpu_ns: u64) -> TrialEvidence {
        self.exited();
        let noise = super::noise::since(&self.root, &self.noise, child_cpu_ns);
        let after = super::huge_counters(&self.root);
        let read = |m: &BTreeMap<String, u64>| m.keys().any(|k| k.starts_with("thp_"));
        let counted = self.counted.take();
        TrialEvidence {
            memory: self.memory.take().unwrap_or_default(),
            perf_running_fraction: counted.as_ref().and_then(|c| c.running_fraction),
            perf_unavailable: counted
                .as_ref()
                .map_or_else(Vec::new, |c| c.unavailable.clone()),
            perf: counted.map(|c| c.perf).unwrap_or_default(),
            kernel_read: read(&self.kernel_before) && read(&after),
            kernel_counters: super::deltas(&self.kernel_before, &after),
            noise,
        }
    }
}

impl TrialHooks for Gatherer {
    fn started(&mut self, pid: i32, start: Instant) {
        let (tx, rx) = std::sync::mpsc::channel();
        let schedule = self.schedule;
        let h = std::thread::Builder::new()
            .name("hugelab-sampler".into())
            .spawn(move || super::sampler::sample(pid, start, schedule, rx));
        if let Ok(h) = h {
            self.sampler = Some((tx, h));
        }
        // Opened just after the exec; inherit follows the children it starts from now on.
        let mut c = Counters::open_for(&CHILD_EVENTS, &self.cpu, true, Some(pid));
        c.start();
        self.counters = Some(c);
    }

    fn exited(&mut self) {
        if let Some(mut c) = self.counters.take() {
            self.counted = Some(Counted {
                perf: c.stop(),
                running_fraction: c.running_fraction,
                unavailable: (c.unavailable.iter())
                    .map(|(e, why)| format!("{}: {why}", e.name()))
                    .collect(),
            });
        }
        if let Some((tx, h)) = self.sampler.take() {
            let _ = tx.send(());
            self.memory = Some(h.join().unwrap_or_default());
        }
    }
}
