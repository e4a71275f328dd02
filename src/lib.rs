//! hugelab: measure what huge pages do for a workload, and what they cost.
//!
//! The modules are the stages of the data flow (docs/architecture.md), in dependency order:
//! probe → control → backing → workload → collect → analyze → store → model → render, then the
//! engines side by side (`experiment`: the run engine — plan, schedule, trial, servers; `bench`;
//! `fleet`: judge; `exporter`; `stored_runs`; `trace`), each producing `model` records, and the
//! advice wing above them (`advice`, which reads stored runs); `commands` runs each CLI command
//! on top of them. Utilities (`error`, `units`, `metric`,
//! `rng`, `sys`, `options`) and the statistics kernel (`stats`: estimators, intervals, tests,
//! importing nothing but the utilities) sit below every stage.

#![deny(clippy::undocumented_unsafe_blocks)]

/// `0.1.0 (commit 1a2b3c4d5e6f)`: the version, and the commit when built from git (build.rs).
pub const VERSION: &str = env!("HUGELAB_VERSION");

pub mod advice;
pub mod analyze;
pub mod backing;
pub mod bench;
pub mod cli;
pub mod collect;
pub mod commands;
pub mod control;
pub mod error;
pub mod experiment;
pub mod exporter;
pub mod fleet;
pub mod metric;
pub mod model;
pub mod options;
pub mod probe;
pub mod render;
pub mod rng;
pub mod stats;
pub mod store;
pub mod stored_runs;
pub mod sys;
pub mod trace;
pub mod units;
pub mod workload;

/// `eprintln!` that cannot panic: when stderr is a closed pipe (its reader has gone), the line
/// is lost, not the process — a panic would skip restoring settings or stopping a server.
#[macro_export]
macro_rules! eprintln_safe {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}
