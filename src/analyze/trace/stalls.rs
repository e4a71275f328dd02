//! Stall time per trial of each arm against the baseline, from paired blocks.
pub use crate::model::trace::{StallContrast, TrialStall};

/// Per latency kind that stalled in any trial, each arm against the baseline. `traced` lists
/// (block, arm) of every traced trial (a traced trial without a kind stalled 0 ms in it).
pub fn stall_contrasts(
    stalls: &[TrialStall],
    traced: &[(i64, usize)],
    names: &[String],
    baseline: usize,
    confidence: f64,
) -> Vec<StallContrast> {
    let mut kinds: Vec<&str> = stalls
        .iter()
        .filter(|s| s.ms > 0.0)
        .map(|s| s.kind.as_str())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let ms = |block: i64, arm: usize, kind: &str| -> Option<f64> {
        traced.contains(&(block, arm)).then(|| {
            stalls
                .iter()
                .filter(|s| s.block == block && s.arm == arm && s.kind == kind)
                .map(|s| s.ms)
                .sum()
        })
    };
    let mut out = Vec::new();
    for kind in kinds {
        for arm in (0..names.len()).filter(|a| *a != baseline) {
            let mut blocks: Vec<i64> = traced.iter().map(|t| t.0).collect();
            blocks.sort_unstable();
            blocks.dedup();
            let pairs: Vec<(f64, f64)> = blocks
                .iter()
                .filter_map(|b| Some((ms(*b, arm, kind)?, ms(*b, baseline, kind)?)))
                .collect();
            let d: Vec<f64> = pairs.iter().map(|(a, b)| a - b).collect();
            let Some(e) = crate::stats::hodges_lehmann(&d, confidence) else {
                continue;
            };
            let mean =
                |f: fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / pairs.len() as f64;
            out.push(StallContrast {
                kind: kind.to_string(),
                arm: names[arm].clone(),
                baseline: names[baseline].clone(),
                arm_mean_ms: mean(|p| p.0),
                baseline_mean_ms: mean(|p| p.1),
                blocks: pairs.len(),
                difference_ms: e,
            });
        }
    }
    out
}
