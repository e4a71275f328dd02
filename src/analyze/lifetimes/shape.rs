//! The shape of the run's noise as the lifetime sizing reads it: the variance components and
//! how the interval the analysis gives (signed ranks over lifetime means) compares with the
//! normal-theory one the forecast's model assumes, so that a forecast is of the interval the
//! answer will have.

use super::{Components, Placed, components, lifetime_means, pooled};

/// What the lifetime sizing reads of the run so far: the primary contrasts' variance
/// components and, from [`RANK_RATIO_MIN`] lifetimes on, their [`rank_ratio`] (None before),
/// and each contrast's lifetime means so far, from which [`resampled_range`] draws the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub components: Components,
    pub rank_ratio: Option<f64>,
    pub means: Vec<Vec<f64>>,
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
    let means: Vec<Vec<f64>> = placed.iter().map(|p| lifetime_means(p)).collect();
    let ratios: Vec<f64> = means
        .iter()
        .filter_map(|m| rank_ratio(m, confidence))
        .collect();
    Some(Spread {
        components: pooled(&cs)?,
        rank_ratio: (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64),
        means,
    })
}

/// Rests [`resampled_range`] draws (the run's record says this many).
pub use crate::model::run::RESAMPLES;

/// The half-widths (log scale) the answer may reach once the run holds `units` lifetime means
/// per contrast, if the lifetimes still to come are like those so far: each contrast's means
/// (`means`) kept, the rest drawn with replacement from a resample of them (a two-stage
/// bootstrap: the spread the first half shows is an estimate too), the interval `design` prints at
/// `confidence` (the analysis's own: signed ranks, or the confidence sequence) over all of
/// them, the contrasts' half-widths averaged as the forecast pools them; the central `level`
/// of [`RESAMPLES`] such rests, from a fixed seed. The run's end shares the lifetimes so far,
/// so only the rest is uncertain, and drawing it from the measured means keeps their far
/// lifetimes at their measured rate, where a chi-square range assumes a normal spread. None
/// below [`RANK_RATIO_MIN`] means in a contrast, or without an interval.
pub fn resampled_range(
    means: &[Vec<f64>],
    units: usize,
    (confidence, design): (f64, &crate::model::verdict::Design),
    level: f64,
) -> Option<(f64, f64)> {
    use crate::analyze::verdict::design::paired_interval;
    if means.is_empty() || means.iter().any(|m| m.len() < RANK_RATIO_MIN) {
        return None;
    }
    let mut rng = crate::rng::XorShift::new(0x5eed_a4ea ^ units as u64);
    let mut widths = Vec::with_capacity(RESAMPLES);
    let (mut all, mut like) = (Vec::new(), Vec::new());
    for _ in 0..RESAMPLES {
        let mut sum = 0.0;
        for m in means {
            // The lifetimes to come are drawn from a resample of those so far, not from them
            // as they are: what the first half says of the spread is itself uncertain.
            like.clear();
            like.extend((0..m.len()).map(|_| m[rng.below(m.len())]));
            all.clear();
            all.extend_from_slice(m);
            all.extend((m.len()..units).map(|_| like[rng.below(like.len())]));
            let e = paired_interval(&all, confidence, design)?;
            sum += (e.hi? - e.lo?) / 2.0;
        }
        widths.push(sum / means.len() as f64);
    }
    widths.sort_by(f64::total_cmp);
    let level = crate::stats::Level(level);
    Some((
        crate::stats::quantile_sorted(&widths, level.tail()),
        crate::stats::quantile_sorted(&widths, level.upper()),
    ))
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
    fn the_half_way_range_keeps_the_lifetimes_so_far_and_draws_the_rest_from_them() {
        use crate::model::verdict::Design;
        use statrs::distribution::{ContinuousCDF, Normal};
        let fixed = (0.99, &Design::Fixed);
        // Thirty lifetime means at the normal's quantiles, SD 2%, in a shuffled order.
        let q = Normal::standard();
        let normal: Vec<f64> = (0..30)
            .map(|i| 0.02 * q.inverse_cdf(((i * 7 % 30) as f64 + 0.5) / 30.0))
            .collect();
        assert_eq!(
            resampled_range(&[normal[..9].to_vec()], 18, fixed, 0.9),
            None
        );
        // At the end already: nothing left to draw, the range is the interval now.
        let e = crate::stats::hodges_lehmann(&normal, 0.99).unwrap();
        let now = (e.hi.unwrap() - e.lo.unwrap()) / 2.0;
        let (lo, hi) = resampled_range(std::slice::from_ref(&normal), 30, fixed, 0.9).unwrap();
        assert!(
            (lo - now).abs() < 1e-12 && (hi - now).abs() < 1e-12,
            "{lo} {hi} {now}"
        );
        // Twice the lifetimes: about 1/√2 of today's width, within a range either side.
        let (lo, hi) = resampled_range(std::slice::from_ref(&normal), 60, fixed, 0.9).unwrap();
        let expect = now / 2f64.sqrt();
        assert!(
            lo < expect && expect < hi && hi / lo < 1.8,
            "{lo} {expect} {hi}"
        );
        // Three far lifetimes of thirty: the rest may hold more of them or fewer, so the
        // range is wider (relative to its middle) than the normal means'.
        let mut far = normal.clone();
        far[3..6].copy_from_slice(&[0.15, -0.12, 0.18]);
        let (flo, fhi) = resampled_range(&[far], 60, fixed, 0.9).unwrap();
        assert!(fhi / flo > hi / lo, "{flo}–{fhi} against {lo}–{hi}");
        // A confidence sequence's range is of its own, wider interval.
        let seq = Design::Sequential { n_opt: 30.0 };
        let (slo, _) =
            resampled_range(std::slice::from_ref(&normal), 60, (0.99, &seq), 0.9).unwrap();
        assert!(slo > hi, "{slo} against the fixed design's {hi}");
        // Two contrasts: their half-widths averaged.
        let wide: Vec<f64> = normal.iter().map(|x| 2.0 * x).collect();
        let (two_lo, two_hi) = resampled_range(&[normal.clone(), wide], 30, fixed, 0.9).unwrap();
        assert!(
            (two_lo - 1.5 * now).abs() < 1e-9 && two_lo == two_hi,
            "{two_lo}"
        );
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
