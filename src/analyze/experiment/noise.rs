//! How much of each arm's spread the machine's noise sources explain.

use crate::analyze::trial_data::TrialData;
use std::collections::BTreeMap;

/// Steal above this share of the trial's CPU capacity marks a trial as taken during heavy steal.
pub const HEAVY_STEAL: f64 = 0.05;

/// How much of one arm's spread the machine's noise sources explain.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoiseAttribution {
    pub arm: String,
    /// Trials with noise readings.
    pub trials: usize,
    /// Share of the variance of log(primary metric) explained by each source alone (R² of a
    /// one-variable least-squares fit), for sources that varied.
    pub r2: BTreeMap<String, f64>,
    /// Mean seconds per trial of each source.
    pub mean_s: BTreeMap<String, f64>,
    /// Trials during which more than [`HEAVY_STEAL`] of the CPU time was stolen.
    pub heavy_steal_trials: usize,
}

fn r_squared(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    if x.len() < 3 {
        return None;
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    (sxx > 0.0 && syy > 0.0).then(|| sxy * sxy / (sxx * syy))
}

/// Per arm: how much of the spread of `metric` steal, other processes' CPU and CPU pressure
/// explain; `cpus` is the machine's CPU count (for the steal share).
pub fn noise_attribution(
    arms: &[String],
    trials: &[TrialData],
    metric: &str,
    cpus: usize,
) -> Vec<NoiseAttribution> {
    (0..arms.len())
        .map(|a| {
            let ts: Vec<&TrialData> = trials
                .iter()
                .filter(|t| t.arm == a && t.ok && !t.noise.is_empty())
                .collect();
            let y: Vec<f64> = ts
                .iter()
                .filter_map(|t| t.metrics.get(metric).filter(|v| **v > 0.0).map(|v| v.ln()))
                .collect();
            let mut out = NoiseAttribution {
                arm: arms[a].clone(),
                trials: ts.len(),
                ..Default::default()
            };
            for src in ["steal_s", "other_cpu_s", "psi_cpu_some_s"] {
                let x: Vec<f64> = ts
                    .iter()
                    .filter_map(|t| t.noise.get(src).copied())
                    .collect();
                if x.is_empty() {
                    continue;
                }
                out.mean_s
                    .insert(src.into(), x.iter().sum::<f64>() / x.len() as f64);
                if x.len() == y.len()
                    && let Some(r2) = r_squared(&x, &y)
                {
                    out.r2.insert(src.into(), r2);
                }
            }
            out.heavy_steal_trials = ts
                .iter()
                .filter(|t| {
                    let wall = t.metrics.get("wall_s").copied().unwrap_or(0.0);
                    let steal = t.noise.get("steal_s").copied().unwrap_or(0.0);
                    wall > 0.0 && steal / (wall * cpus.max(1) as f64) > HEAVY_STEAL
                })
                .count();
            out
        })
        .collect()
}
