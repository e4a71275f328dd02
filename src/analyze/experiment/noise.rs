//! How much of each arm's spread the machine's noise sources explain.

use crate::analyze::trial_data::TrialData;
pub use crate::model::analysis::{HEAVY_STEAL, NoiseAttribution};

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
