//! The statistics a result is made of: a sample's summary and an estimate with its interval
//! (the functions beside this file compute them; records everywhere hold them).

/// Descriptive statistics of one sample.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1); 0 for n = 1.
    pub sd: f64,
    /// Median absolute deviation, unscaled.
    pub mad: f64,
    pub p5: f64,
    pub p95: f64,
    pub p99: f64,
    pub skewness: f64,
    /// Values with robust z = |x − median| / (1.4826 · MAD) above 5: kept, counted.
    pub outliers: usize,
    /// SD / (1.4826 · MAD): near 1 for normal data, large with heavy tails or outliers.
    pub sd_mad_ratio: Option<f64>,
    /// 95% distribution-free intervals for p5, p95 and p99 (`None` when n is too small).
    pub p5_interval: Option<(f64, f64)>,
    pub p95_interval: Option<(f64, f64)>,
    pub p99_interval: Option<(f64, f64)>,
    pub histogram: Option<Histogram>,
}

/// A point estimate with a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    pub point: f64,
    /// `None` bounds: too few observations for an interval at this confidence.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The confidence actually achieved (exact distributions are discrete).
    pub confidence: f64,
}

impl Estimate {
    pub fn excludes(&self, v: f64) -> bool {
        matches!((self.lo, self.hi), (Some(lo), Some(hi)) if v < lo || v > hi)
    }
    pub fn map(self, f: impl Fn(f64) -> f64) -> Estimate {
        Estimate {
            point: f(self.point),
            lo: self.lo.map(&f),
            hi: self.hi.map(&f),
            confidence: self.confidence,
        }
    }
}

/// Histogram with Freedman–Diaconis bin width (at least 1, at most `max_bins` bins).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    pub start: f64,
    pub width: f64,
    pub counts: Vec<u64>,
}
