//! Analyze: pure computations over probed and collected records — no I/O, no printing.
//!
//! * the estimators, intervals and tests themselves are the statistics kernel below every stage
//!   (`crate::stats`);
//! * [`verdict`] — FASTER / SLOWER / EQUIVALENT / INCONCLUSIVE against δ, Holm correction,
//!   sample-size planning;
//! * [`sequential`] — valid early stopping (O'Brien–Fleming group-sequential, confidence sequences);
//! * [`diagnostics`] — drift, autocorrelation, bimodality;
//! * [`experiment`] — a run's trials analysed per metric and arm (the primary metric's rule);
//! * [`lifetimes`] — blocks nested in server lifetimes: the lifetime as the unit, variance
//!   components and each arm's instance SD;
//! * [`calibrate`] — the A/A noise floor;
//! * [`bench`] — bench cells and their paired ratios; [`tlb`] — the TLB reach and miss cost
//!   from `bench tlb`'s spans;
//! * [`coverage`], [`findings`], [`inspect`] — huge coverage, the FLAGGED evidence, and a
//!   process's report from its snapshot (why a mapping is not huge, TLB reach);
//! * [`flagged`] — whether the memory that matters is on the pages an arm asked for (FLAGGED,
//!   PARTIAL), one rule for commands, servers and watched processes;
//! * [`server`] — a service's fallback signatures and per-arm summary;
//! * [`trace`] — tracepoint pairing, histograms, the vmstat check, stall contrasts;
//! * [`vm`] — guest-RAM recognition and VM host configuration;
//! * [`judge`] — a change judged on live hosts from their time series (canary vs baseline by
//!   interval, autocorrelation, the coverage evidence);
//! * [`advice`] — from stored evidence to settings (`hugelab advise`);
//! * `simulate` — the simulation study that checks the statistics; a validation harness, compiled
//!   only for tests and with the `simulation` feature (the tests and the judge bench turn it on).

pub mod advice;
pub mod bench;
pub mod calibrate;
pub mod conditions;
pub mod costs;
pub mod coverage;
pub mod diagnostics;
pub mod experiment;
pub mod findings;
pub mod flagged;
pub mod hot;
pub mod inspect;
pub mod judge;
pub mod lifetimes;
pub mod sequential;
pub mod server;
/// The simulation study (a validation harness the product never calls; see its module).
#[doc(hidden)]
pub mod simulate;
pub mod stalls;
pub mod stored;
pub mod tail;
pub mod tlb;
pub mod trace;
pub mod trial_data;
pub mod verdict;
pub mod vm;
pub mod warmup;
