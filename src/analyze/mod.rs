//! Stage 6, analyze: pure computations over probed and collected records — no I/O, no printing.
//!
//! The statistics engine used by `bench` (and by `run`/`compare` as they land):
//! * [`stats`] — summaries (quantiles with order-statistic intervals, robust outlier counts,
//!   histograms), Hodges–Lehmann with signed-rank intervals for paired blocks, BCa bootstrap of
//!   the mean ratio, Mann–Whitney shift for unpaired samples;
//! * [`verdict`] — FASTER / SLOWER / EQUIVALENT / INCONCLUSIVE against δ, Holm correction,
//!   sample-size planning;
//! * [`sequential`] — valid early stopping (O'Brien–Fleming group-sequential, confidence sequences);
//! * [`diagnostics`] — drift, autocorrelation, bimodality;
//! * [`simulate`] — the simulation study that checks all of the above.

pub mod advice;
pub mod bench;
pub mod calibrate;
pub mod coverage;
pub mod diagnostics;
pub mod experiment;
pub mod findings;
pub mod inspect;
pub mod sequential;
pub mod server;
pub mod simulate;
pub mod stats;
pub mod trace;
pub mod verdict;
pub mod vm;
