//! hugelab's integration tests: one test binary, each file of `tests/` a module of it.
//!
//! One binary is compiled and linked once (the shared helpers in `tests/common/` too), and
//! libtest runs every file's tests side by side, where 38 binaries ran one after another. Tests
//! that change a global knob, read a kernel-wide counter exactly, or fault huge pages such a
//! count would see take `common::knob_lock()`, a file lock, so they never overlap whichever file
//! they are in. One file's tests:
//! `cargo test --release --test suite services::`; one test: its path after `--exact`.

#[macro_use]
mod common;

mod advise;
mod answer;
mod apply;
mod bad_input;
mod bench_live;
mod bench_plan;
mod cgroups;
mod cli_usage;
mod conditions;
mod conventions;
mod costs;
mod deploy;
mod exporter;
mod golden;
mod guard;
mod inspect;
mod judge;
mod jvm;
mod max_time;
mod node_pool;
mod owner;
mod printed;
mod report;
mod results;
mod run_live;
mod run_plan;
mod schedules;
mod services;
mod stats_simulation;
mod status_fixtures;
mod status_live;
mod study;
mod thp_levers;
mod tlb;
mod trace;
mod views;
mod vm;
mod width;
