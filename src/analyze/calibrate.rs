//! The machine's noise floor for one command, from an A/A run (`run --calibrate`): two
//! identical arms interleaved in blocks. The spread of their per-block log-ratios is pure
//! noise, so it says how small an effect this machine can resolve for this command per minute
//! of running, before anyone spends an hour on an experiment.

use super::verdict::{Better, Design, blocks_to_resolve, contrasts};
pub use crate::model::run::{Calibration, FloorRow};
use statrs::distribution::{ContinuousCDF, Normal};

/// Detectable effect (percent) after `n` blocks at noise `sd`, two-sided `confidence`, 80% power.
pub fn detectable_percent(sd: f64, n: usize, confidence: f64) -> f64 {
    let nd = Normal::standard();
    let z = nd.inverse_cdf(crate::stats::Level(confidence).upper()) + nd.inverse_cdf(0.8);
    let log = z * sd / (n as f64 * 3.0 / std::f64::consts::PI).sqrt();
    (log.exp() - 1.0) * 100.0
}

/// Calibrate from A/A log-ratios `d` whose blocks took `seconds_per_block` each.
pub fn calibrate(d: &[f64], seconds_per_block: f64, effect: f64, confidence: f64) -> Calibration {
    let n = d.len();
    let sd = crate::stats::sd(d);
    let s = crate::stats::sorted(d);
    let med = if n > 0 {
        crate::stats::quantile_sorted(&s, 0.5)
    } else {
        0.0
    };
    let dev: Vec<f64> =
        crate::stats::sorted(&d.iter().map(|x| (x - med).abs()).collect::<Vec<_>>());
    let mad = if n > 0 {
        crate::stats::quantile_sorted(&dev, 0.5)
    } else {
        0.0
    };
    let per_min = 60.0 / seconds_per_block.max(1e-9);
    let rows = [1.0, 5.0, 15.0, 60.0]
        .into_iter()
        .map(|minutes| {
            let blocks = ((minutes * per_min).floor() as usize).max(2);
            FloorRow {
                minutes,
                blocks,
                detectable_percent: detectable_percent(sd, blocks, confidence),
            }
        })
        .collect();
    let need = blocks_to_resolve(sd, effect, confidence, 0.8);
    let aa = contrasts(
        &[d.to_vec()],
        effect,
        confidence,
        Better::Lower,
        &Design::Fixed,
    );
    Calibration {
        blocks: n,
        seconds_per_block,
        sd_log_ratio: sd,
        robust_sd_log_ratio: 1.4826 * mad,
        rows,
        blocks_for_effect: need,
        minutes_for_effect: need as f64 / per_min,
        aa_verdict: aa.first().cloned().flatten().map(|c| c.verdict),
        confidence,
        effect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::verdict::Verdict;

    #[test]
    fn floor_shrinks_with_time_and_matches_the_formula() {
        // 5% per-block noise, 2 s blocks: 30 blocks a minute.
        let mut r = crate::analyze::simulate::Rng::new(4);
        let d: Vec<f64> = (0..200).map(|_| 0.05 * r.gauss()).collect();
        let c = calibrate(&d, 2.0, 0.01, 0.99);
        assert_eq!(c.rows[0].blocks, 30);
        assert!(
            c.rows
                .windows(2)
                .all(|w| w[1].detectable_percent < w[0].detectable_percent)
        );
        assert!((c.sd_log_ratio - 0.05).abs() < 0.01, "{}", c.sd_log_ratio);
        // (2.576 + 0.842) · 0.05 / √(30 · 3/π) = 0.0319 → 3.25%
        assert!(
            (c.rows[0].detectable_percent - 3.25).abs() < 0.7,
            "{:?}",
            c.rows[0]
        );
        assert!(matches!(
            c.aa_verdict,
            Some(Verdict::Inconclusive | Verdict::Equivalent)
        ));
        assert!(c.blocks_for_effect > 200);
    }
}
