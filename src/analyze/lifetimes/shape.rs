//! The shape of the run's noise as the lifetime sizing reads it: the variance components and
//! how the interval the analysis gives (signed ranks over lifetime means) compares with the
//! normal-theory one the forecast's model assumes, so that a forecast is of the interval the
//! answer will have.

use super::{Components, Placed, components, lifetime_means, pooled};

/// What the lifetime sizing reads of the run so far: the primary contrasts' variance
/// components and, from [`RANK_RATIO_MIN`] lifetimes on, their [`rank_ratio`] (None before).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub components: Components,
    pub rank_ratio: Option<f64>,
}

/// The fewest lifetimes whose means [`rank_ratio`] compares.
pub const RANK_RATIO_MIN: usize = 10;

/// How the interval the analysis gives (Hodges–Lehmann with its signed-rank interval over the
/// lifetime means `means`) compares with the normal-theory interval the forecast's model
/// assumes (z·SD/√n over the same means, at the same `confidence`): about 1 for normal noise
/// (the simulation study's sized runs reach the model's half-width), below 1 where a few
/// lifetimes lie far off (the ranks discount them, the SD does not), so the ratio is about the
/// noise's shape and carries to the run's end. None below [`RANK_RATIO_MIN`] lifetimes, or
/// without a spread or an interval.
pub fn rank_ratio(means: &[f64], confidence: f64) -> Option<f64> {
    let n = means.len();
    if n < RANK_RATIO_MIN {
        return None;
    }
    let e = crate::stats::hodges_lehmann(means, confidence)?;
    let (lo, hi) = (e.lo?, e.hi?);
    let mean = means.iter().sum::<f64>() / n as f64;
    let sd = (means.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let normal = super::z_for(confidence) * sd / (n as f64).sqrt();
    (normal > 0.0).then(|| (hi - lo) / 2.0 / normal)
}

/// `c` with every SD multiplied by `by`: the blocks per lifetime it sizes are the same (they
/// depend on the SDs' ratios), the half-width it predicts `by` times.
pub fn scaled(c: &Components, by: f64) -> Components {
    Components {
        within_sd: c.within_sd * by,
        between_sd: c.between_sd * by,
        shared_sd: c.shared_sd.map(|s| s * by),
        ..*c
    }
}

/// The primary contrasts' spread so far (`placed`: each contrast's per-block log-ratios in
/// their lifetimes): their components pooled and their rank ratios averaged.
pub fn spread(placed: &[Vec<Placed>], confidence: f64) -> Option<Spread> {
    let cs: Vec<Components> = placed.iter().filter_map(|p| components(p)).collect();
    let ratios: Vec<f64> = placed
        .iter()
        .filter_map(|p| rank_ratio(&lifetime_means(p), confidence))
        .collect();
    Some(Spread {
        components: pooled(&cs)?,
        rank_ratio: (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_ratio_is_about_one_for_normal_means_and_below_it_with_far_ones() {
        use statrs::distribution::{ContinuousCDF, Normal};
        // Sixty lifetime means at the normal's quantiles, SD 2%.
        let q = Normal::standard();
        let normal: Vec<f64> = (0..60)
            .map(|i| 0.02 * q.inverse_cdf((i as f64 + 0.5) / 60.0))
            .collect();
        let r = rank_ratio(&normal, 0.99).unwrap();
        assert!((0.85..1.15).contains(&r), "{r}");
        // Three of sixty lifetimes far off: the SD triples, the ranks barely move.
        let mut far = normal.clone();
        far[29..32].copy_from_slice(&[0.3, -0.25, 0.35]);
        let f = rank_ratio(&far, 0.99).unwrap();
        assert!(f < 0.6 * r, "{f} against {r}");
        assert_eq!(rank_ratio(&normal[..9], 0.99), None);
        let c = Components {
            lifetimes: 10,
            blocks: 40,
            within_sd: 0.05,
            between_sd: 0.01,
            replicas: 1,
            shared_sd: None,
        };
        let k = scaled(&c, 0.5);
        assert_eq!((k.within_sd, k.between_sd, k.blocks), (0.025, 0.005, 40));
    }

    #[test]
    fn the_spread_pools_the_contrasts_and_averages_their_rank_ratios() {
        // Two contrasts over twelve lifetimes of two blocks.
        let placed = |shift: f64| -> Vec<Placed> {
            (0..24)
                .map(|i| Placed {
                    lifetime: i / 2,
                    replica: 0,
                    block: i,
                    value: shift + 0.01 * ((i * 7 % 11) as f64 - 5.0),
                })
                .collect()
        };
        let s = spread(&[placed(0.0), placed(0.02)], 0.99).unwrap();
        assert_eq!(s.components.lifetimes, 12);
        let one = rank_ratio(&lifetime_means(&placed(0.0)), 0.99).unwrap();
        assert!((s.rank_ratio.unwrap() - one).abs() < 1e-9, "{s:?}");
        assert_eq!(spread(&[], 0.99), None);
    }
}
