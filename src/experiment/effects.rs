//! experiment: the side effects the engine works through — the child runner, the results
//! database, the settings guard, the probe root, Ctrl-C and progress — injected so that block
//! order, arm switching and storage are testable against a fake runner and a fake sysfs.

use crate::control::Guard;
use crate::probe::Root;
use crate::probe::cpu::Cpu;
use crate::render::progress::Observer;
use crate::store::Store;
use crate::workload::child::Runner;

/// The side effects `execute` works through: injected so that planning, block order, arm
/// switching and storage are testable against a fake runner and a fake sysfs.
pub struct Effects<'a> {
    pub runner: &'a mut dyn Runner,
    pub store: &'a mut Store,
    pub run_id: i64,
    /// Where kernel counters and noise are read (the live `/` in production).
    pub root: Root,
    pub cpu: Cpu,
    /// Makes the settings guard the first time an arm changes a system setting.
    pub guard: Box<dyn FnMut() -> anyhow::Result<Guard> + 'a>,
    /// True once the user asked to stop (first Ctrl-C): finish the trial in flight, then stop.
    pub stop: &'a dyn Fn() -> bool,
    pub progress: &'a mut dyn Observer,
    /// `--trace`: the tracepoints read around each trial.
    pub trace: Option<&'a mut super::tracing::TrialTrace>,
}
