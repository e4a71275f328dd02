//! The statistics a record holds — a sample's summary, an estimate with its interval, a
//! histogram — as records read them. The types belong to the statistics kernel (`crate::stats`,
//! which computes them); renderers read them from here and never import the kernel.

pub use crate::stats::{Estimate, Histogram, Summary};
