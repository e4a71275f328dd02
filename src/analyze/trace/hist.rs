//! Latency histograms with bounded memory: log-linear buckets, quantiles within 9%.

use super::HistSummary;
use std::collections::BTreeMap;

/// Log-linear buckets: 8 per power of two (quantiles within 9%), at most 64 × 8 of them.
#[derive(Debug, Clone, Default)]
pub struct Hist {
    buckets: BTreeMap<u32, u64>,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

const SUB: u32 = 8;

pub(super) fn bucket(v: u64) -> u32 {
    if v < SUB as u64 {
        return v as u32;
    }
    let octave = 63 - v.leading_zeros();
    let sub = ((v >> (octave - 3)) & (SUB as u64 - 1)) as u32;
    octave * SUB + sub
}

/// The largest value in bucket `b`.
pub(super) fn upper(b: u32) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let (octave, sub) = (b / SUB, b % SUB);
    ((SUB as u64 + sub as u64 + 1) << (octave - 3)) - 1
}

impl Hist {
    pub fn add(&mut self, ns: u64) {
        *self.buckets.entry(bucket(ns)).or_insert(0) += 1;
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    /// The upper edge of the bucket holding quantile `q` (capped at the maximum seen).
    pub fn quantile(&self, q: f64) -> u64 {
        let rank = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return upper(*b).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> HistSummary {
        let mut log2: BTreeMap<u64, u64> = BTreeMap::new();
        for (b, n) in &self.buckets {
            let lo = if *b < SUB {
                *b as u64
            } else {
                1u64 << (b / SUB)
            };
            let lo = if lo == 0 {
                0
            } else {
                1u64 << (63 - lo.leading_zeros())
            };
            *log2.entry(lo).or_insert(0) += n;
        }
        HistSummary {
            count: self.count,
            total_ns: self.total_ns,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            max_ns: self.max_ns,
            log2: log2.into_iter().collect(),
        }
    }
}
