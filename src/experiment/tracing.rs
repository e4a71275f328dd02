//! `run --trace`: tracepoints open for the whole run, read around each trial. Records before a
//! trial's spawn are discarded; after its exit the records between its two timestamps that
//! belong to its process tree (found through fork events from hugelab's own pid) become the
//! trial's histograms. Reading happens after the exit, off the measuring path, the same for
//! every arm.

use crate::analyze::trace::{Aggregator, TraceWindow, tracepoints};
use crate::collect::tracepoints::{Tracefs, Tracer};
use crate::probe::tracefs::Format;
use std::collections::BTreeSet;

const FORK: &str = "sched:sched_process_fork";

pub struct TrialTrace {
    // Dropped after the tracer: unmounts tracefs if the run mounted it.
    tracer: Tracer,
    _tfs: Tracefs,
    names: Vec<String>,
    formats: Vec<Format>,
    fork: Option<usize>,
    lost_before: u64,
    /// What could not be traced, and tracefs mounted for the run, for the notes.
    pub notes: Vec<String>,
}

impl TrialTrace {
    pub fn open(kinds: &[crate::analyze::trace::TraceKind]) -> anyhow::Result<TrialTrace> {
        let tfs = Tracefs::open()?;
        let mut wanted: Vec<(&str, Option<&str>)> = tracepoints(kinds);
        wanted.push((FORK, None));
        let mut tracer = Tracer::open(&tfs, &wanted);
        let fork = tracer.index(FORK);
        if fork.is_none() {
            anyhow::bail!(
                "--trace: {FORK} cannot be opened, so a trial's processes cannot be told apart ({})",
                tracer
                    .missing
                    .iter()
                    .map(|m| format!("{}: {}", m.event, m.reason))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        let mut notes: Vec<String> = tfs.note.iter().cloned().collect();
        notes.extend(
            tracer
                .missing
                .iter()
                .map(|m| format!("--trace: {} not traced: {}", m.event, m.reason)),
        );
        tracer.enable()?;
        Ok(TrialTrace {
            names: tracer.sources.iter().map(|s| s.name.clone()).collect(),
            formats: tracer.formats(),
            fork,
            lost_before: 0,
            tracer,
            _tfs: tfs,
            notes,
        })
    }

    /// Before a trial: forget what happened between trials.
    pub fn start(&mut self) {
        self.tracer.drain();
        self.lost_before = self.tracer.lost;
    }

    /// After a trial that ran from `start_ns` to `end_ns` (CLOCK_MONOTONIC): its window, and
    /// the records the kernel dropped meanwhile.
    pub fn finish(&mut self, start_ns: u64, end_ns: u64, comm: &str) -> (TraceWindow, u64) {
        let batch = self.tracer.drain();
        let me = std::process::id();
        let mut tree: BTreeSet<u32> = BTreeSet::new();
        let mut agg = Aggregator::new(self.names.clone(), self.formats.clone());
        for e in batch
            .iter()
            .filter(|e| e.time_ns >= start_ns && e.time_ns <= end_ns)
        {
            if Some(e.source) == self.fork {
                if (e.pid == me || tree.contains(&e.pid))
                    && let Some(child) = self.formats[e.source].int(&e.raw, "child_pid")
                {
                    tree.insert(child as u32);
                }
                continue;
            }
            if tree.contains(&e.pid) {
                agg.add(e);
            }
        }
        let seconds = end_ns.saturating_sub(start_ns) as f64 / 1e9;
        let w = agg.take(0.0, seconds, &|_| comm.to_string());
        (w, self.tracer.lost - self.lost_before)
    }
}
