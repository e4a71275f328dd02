//! Stage 6, analyze: pure computations over probed and collected records — no I/O, no printing.

pub mod bench;
pub mod coverage;
pub mod findings;
pub mod stats;
