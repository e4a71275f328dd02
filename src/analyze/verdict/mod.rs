//! Verdicts for contrasts: FASTER / SLOWER / EQUIVALENT / INCONCLUSIVE against a smallest
//! effect that matters δ. Fixed paired designs use Hodges–Lehmann with signed-rank intervals
//! and Holm's step-down procedure across arms (each interval printed at the level it was
//! computed at); sequential designs use the rule that stopped them; imported unpaired runs use
//! Mann–Whitney. The primary (Hodges–Lehmann) and secondary (BCa mean ratio) estimates side by
//! side.
//!
//! * this module — verdicts, Holm, and contrasts of arms against the baseline;
//! * [`design`] — how the blocks were collected, and the interval each design gives;
//! * [`planning`] — how many blocks (or unpaired runs) a question needs.

pub mod design;
pub mod few_blocks;
pub mod planning;

use crate::stats::sd as sample_sd;
pub use design::{Design, SEQUENTIAL_N_OPT, group_sequential_level, paired_interval};
pub use planning::{
    blocks_needed, blocks_to_resolve, cs_blocks_to_resolve, planning_sd, unpaired_runs_needed,
};

pub use crate::model::verdict::{BOOTSTRAP_MIN_N, Better, Contrast, Verdict, fmt_level};
use crate::stats::{Estimate, Level, bootstrap_bca_mean, mann_whitney_shift, signed_rank_p};

pub fn to_percent(e: Estimate) -> Estimate {
    e.map(|x| (x.exp() - 1.0) * 100.0)
}

/// The verdict from an interval on the log-ratio scale.
pub fn decide(lo: f64, hi: f64, effect: f64, better: Better) -> (Verdict, bool) {
    let band = (1.0 + effect).ln();
    if hi < 0.0 || lo > 0.0 {
        let lower = hi < 0.0;
        let v = if lower == (better == Better::Lower) {
            Verdict::Faster
        } else {
            Verdict::Slower
        };
        let clears = if lower { hi <= -band } else { lo >= band };
        (v, clears)
    } else if lo > -band && hi < band {
        (Verdict::Equivalent, false)
    } else {
        (Verdict::Inconclusive, false)
    }
}

/// Holm's step-down adjustment (Holm 1979): adjusted p-values, same order as the input.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Holm's step-down procedure (Holm 1979) carried out on intervals: contrasts in order of
/// their raw p-values; the j-th (from 0) gets its interval at 1 − α/(m − j) (`Level::holm_steps`
/// of the family-wise `confidence`); while intervals exclude 0 a direction is declared and the
/// next contrast is tested; at the first interval that does not, that contrast and every later
/// one keep that step's level and no direction. Returns the level each contrast's interval was
/// computed at — the level it really has.
pub fn holm_levels(
    p: &[f64],
    confidence: f64,
    mut excludes_zero: impl FnMut(usize, f64) -> bool,
) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let steps = Level(confidence).holm_steps(m);
    let mut levels = vec![confidence; m];
    let mut stopped: Option<f64> = None;
    for (j, &i) in order.iter().enumerate() {
        let level = stopped.unwrap_or(steps[j].get());
        levels[i] = level;
        if stopped.is_none() && !excludes_zero(i, level) {
            stopped = Some(level);
        }
    }
    levels
}

/// Contrasts of several arms vs the baseline from per-block log-ratios `d[arm]`, analysed as
/// `design` says, at family-wise `confidence`.
pub fn contrasts(
    d: &[Vec<f64>],
    effect: f64,
    confidence: f64,
    better: Better,
    design: &Design,
) -> Vec<Option<Contrast>> {
    contrasts_with(d, effect, confidence, better, design, true)
}

/// The same contrasts without the mean ratio's bootstrap interval: what a sequential look
/// needs to decide whether to stop (the verdicts rest on the paired interval alone), without
/// 2,000 resamples per contrast between two trials.
pub fn verdicts_only(
    d: &[Vec<f64>],
    effect: f64,
    confidence: f64,
    better: Better,
    design: &Design,
) -> Vec<Option<Contrast>> {
    contrasts_with(d, effect, confidence, better, design, false)
}

fn contrasts_with(
    d: &[Vec<f64>],
    effect: f64,
    confidence: f64,
    better: Better,
    design: &Design,
    bootstrap: bool,
) -> Vec<Option<Contrast>> {
    let m = d.len().max(1);
    let split = Level(confidence).split(m);
    let raw: Vec<f64> = d.iter().map(|x| signed_rank_p(x)).collect();
    let adjusted = if m > 1 { holm(&raw) } else { raw.clone() };
    let levels: Vec<f64> = match design {
        Design::Fixed | Design::Unpaired => holm_levels(&raw, confidence, |i, level| {
            paired_interval(&d[i], level, design).is_some_and(|e| e.excludes(0.0))
        }),
        Design::Sequential { .. } => vec![split.get(); d.len()],
        Design::GroupSequential { looks, max_blocks } => d
            .iter()
            .map(|x| group_sequential_level(*looks, *max_blocks, split.alpha(), x.len()))
            .collect(),
    };
    let method = match design {
        Design::Sequential { .. } => "confidence sequence (mean log-ratio)",
        Design::GroupSequential { .. } => "O'Brien–Fleming repeated CI (Hodges–Lehmann)",
        _ => "Hodges–Lehmann, signed-rank",
    };
    d.iter()
        .zip(adjusted)
        .zip(levels)
        .map(|((x, p), level)| {
            let e = paired_interval(x, level, design)?;
            let ratios: Vec<f64> = x.iter().map(|v| v.exp()).collect();
            let boot = bootstrap
                .then(|| bootstrap_bca_mean(&ratios, level, 2000, 0x5eed))
                .flatten()
                .map(|b| b.map(|r| (r - 1.0) * 100.0));
            let sd = sample_sd(x);
            let more = |n: usize| {
                match design {
                    Design::Sequential { n_opt } => {
                        cs_blocks_to_resolve(sd, effect, level, 0.8, *n_opt)
                    }
                    _ => blocks_to_resolve(sd, effect, level, 0.8),
                }
                .saturating_sub(n)
                .max(1)
            };
            Some(contrast_from(
                x.len(),
                e,
                boot,
                p,
                level,
                method,
                effect,
                better,
                more,
            ))
        })
        .collect()
}

/// Unpaired contrasts: `arms[i]` and `baseline` are log values of independent runs.
pub fn unpaired_contrasts(
    arms: &[Vec<f64>],
    baseline: &[f64],
    effect: f64,
    confidence: f64,
    better: Better,
) -> Vec<Option<Contrast>> {
    let m = arms.len().max(1);
    let raw: Vec<f64> = arms
        .iter()
        .map(|x| mann_whitney_shift(x, baseline, 0.5).map_or(1.0, |s| s.p_value))
        .collect();
    let adjusted = if m > 1 { holm(&raw) } else { raw.clone() };
    let levels = holm_levels(&raw, confidence, |i, level| {
        mann_whitney_shift(&arms[i], baseline, level).is_some_and(|s| s.estimate.excludes(0.0))
    });
    arms.iter()
        .zip(adjusted)
        .zip(levels)
        .map(|((x, p), level)| {
            let s = mann_whitney_shift(x, baseline, level)?;
            // Unpaired runs need about twice the runs of a paired design per arm, at the
            // pooled SD of log values.
            let sd = ((sample_sd(x).powi(2) + sample_sd(baseline).powi(2)) / 2.0).sqrt();
            let need = 2 * blocks_to_resolve(sd * 2f64.sqrt(), effect, level, 0.8);
            let have = x.len().min(baseline.len());
            let more = |_: usize| need.saturating_sub(have).max(1);
            Some(contrast_from(
                have,
                s.estimate,
                None,
                p,
                level,
                "Mann–Whitney (unpaired)",
                effect,
                better,
                more,
            ))
        })
        .collect()
}

/// One contrast from its interval `e` on the log scale (at `level`), the optional mean-ratio
/// interval, its p-value and how many more blocks would settle it (`more(n)`): the verdict
/// against δ, the percent interval at the level it achieved, and the warnings.
#[allow(clippy::too_many_arguments)]
pub fn contrast_from(
    n: usize,
    e: Estimate,
    boot: Option<Estimate>,
    p: f64,
    level: f64,
    method: &str,
    effect: f64,
    better: Better,
    more: impl Fn(usize) -> usize,
) -> Contrast {
    let mut warnings = Vec::new();
    let (verdict, clears, half) = match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => {
            let (v, c) = decide(lo, hi, effect, better);
            (v, c, Some((hi - lo) / 2.0))
        }
        _ => {
            warnings.push(format!(
                "{n} {} too few for a {} interval",
                if n == 1 { "block is" } else { "blocks are" },
                fmt_level(level)
            ));
            (Verdict::Inconclusive, false, None)
        }
    };
    // No secondary interval where the primary was refused, or where too few units leave the
    // bootstrap's tail quantile at the sample's extreme (3 blocks have 10 distinct resamples).
    let boot = boot.filter(|_| e.lo.is_some() && n >= BOOTSTRAP_MIN_N);
    let pct = to_percent(e);
    if let (Some(b), Some(lo), Some(hi)) = (&boot, pct.lo, pct.hi)
        && let (Some(blo), Some(bhi)) = (b.lo, b.hi)
        && ((lo > 0.0) != (blo > 0.0) || (hi < 0.0) != (bhi < 0.0))
    {
        warnings.push(format!(
            "the median-based estimate ({:+.2}% {}) and the mean ratio ({:+.2}% {}) disagree: the distribution is skewed or has outliers; trust the median-based verdict, and look at the histogram",
            pct.point,
            crate::units::fmt_interval(lo, hi, 2),
            b.point,
            crate::units::fmt_interval(blo, bhi, 2)
        ));
    }
    let (mde, more_blocks) = match (verdict, half) {
        (Verdict::Inconclusive, Some(h)) => (Some((h.exp() - 1.0) * 100.0), Some(more(n))),
        _ => (None, None),
    };
    Contrast {
        blocks: n,
        // The level the interval achieved: an exact signed-rank interval's discrete ranks give
        // at least the level asked for (10 blocks at 99.5%: 99.61%).
        percent: Estimate {
            confidence: if pct.lo.is_some() {
                pct.confidence.max(level)
            } else {
                level
            },
            ..pct
        },
        mean_ratio_percent: boot,
        p_value: p,
        verdict,
        clears_effect: clears,
        min_detectable_percent: mde,
        half_width_percent: half.map(|h| h.exp_m1() * 100.0),
        more_blocks,
        more_s: None,
        level,
        method: method.into(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::hodges_lehmann;

    #[test]
    fn verdict_regions() {
        let d = 0.01;
        assert_eq!(
            decide(-0.05, -0.02, d, Better::Lower),
            (Verdict::Faster, true)
        );
        assert_eq!(
            decide(-0.05, -0.002, d, Better::Lower),
            (Verdict::Faster, false)
        );
        assert_eq!(decide(0.002, 0.05, d, Better::Lower).0, Verdict::Slower);
        assert_eq!(decide(0.002, 0.05, d, Better::Higher).0, Verdict::Faster);
        assert_eq!(
            decide(-0.005, 0.005, d, Better::Lower).0,
            Verdict::Equivalent
        );
        assert_eq!(
            decide(-0.05, 0.05, d, Better::Lower).0,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn holm_known_values() {
        // Holm (1979) style example: p = (0.01, 0.04, 0.03) → (0.03, 0.06, 0.06).
        let a = holm(&[0.01, 0.04, 0.03]);
        assert!(
            (a[0] - 0.03).abs() < 1e-12
                && (a[1] - 0.06).abs() < 1e-12
                && (a[2] - 0.06).abs() < 1e-12,
            "{a:?}"
        );
    }

    #[test]
    fn holm_step_down_by_hand() {
        // α = 0.05, m = 3, raw p = (0.004, 0.03, 0.012). By hand: step 1 tests p = 0.004 at
        // α/3 = 0.0167 (reject), step 2 p = 0.012 at α/2 = 0.025 (reject), step 3 p = 0.03 at
        // α = 0.05 (reject). Bonferroni (all at 0.0167) would reject only the first.
        let p = [0.004, 0.03, 0.012];
        let l = holm_levels(&p, 0.95, |i, level| Level(level).rejects(p[i]));
        let want = [1.0 - 0.05 / 3.0, 0.95, 0.975];
        for (a, b) in l.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{l:?}");
        }
        // p = (0.02, 0.04, 0.03): step 1 fails (0.02 ≥ 0.0167): nothing is rejected, and every
        // interval stays at the first step's level, 98.33%.
        let p = [0.02, 0.04, 0.03];
        let mut tested = Vec::new();
        let l = holm_levels(&p, 0.95, |i, level| {
            tested.push(i);
            Level(level).rejects(p[i])
        });
        assert_eq!(
            tested,
            vec![0],
            "the step-down stops at the first acceptance"
        );
        assert!(
            l.iter().all(|x| (x - (1.0 - 0.05 / 3.0)).abs() < 1e-12),
            "{l:?}"
        );
    }

    #[test]
    fn a_sequential_look_decides_as_the_full_analysis_without_the_bootstrap() {
        let d: Vec<Vec<f64>> = vec![
            (0..20).map(|i| -0.05 + 0.001 * (i % 5) as f64).collect(),
            (0..20).map(|i| 0.002 * ((i % 7) as f64 - 3.0)).collect(),
        ];
        let design = Design::Sequential {
            n_opt: SEQUENTIAL_N_OPT,
        };
        let full = contrasts(&d, 0.01, 0.99, Better::Lower, &design);
        let quick = verdicts_only(&d, 0.01, 0.99, Better::Lower, &design);
        for (f, q) in full.iter().zip(&quick) {
            let (f, q) = (f.as_ref().unwrap(), q.as_ref().unwrap());
            assert_eq!(
                (f.verdict, f.percent, f.level),
                (q.verdict, q.percent, q.level)
            );
            assert!(f.mean_ratio_percent.is_some() && q.mean_ratio_percent.is_none());
        }
    }

    #[test]
    fn no_bootstrap_interval_from_too_few_blocks_or_beside_a_refused_primary() {
        let d = |n: usize| -> Vec<Vec<f64>> {
            vec![(0..n).map(|i| -0.2 + 0.01 * (i % 3) as f64).collect()]
        };
        // 3 blocks at 99.5%: the primary interval is refused, and so is the bootstrap's.
        let three = contrasts(&d(3), 0.01, 0.99, Better::Lower, &Design::Fixed);
        let c = three[0].as_ref().unwrap();
        assert!(
            c.percent.lo.is_none() && c.mean_ratio_percent.is_none(),
            "{c:?}"
        );
        // Enough for the signed-rank interval at 99%, too few for the bootstrap.
        let eight = contrasts(&d(8), 0.01, 0.99, Better::Lower, &Design::Fixed);
        let c = eight[0].as_ref().unwrap();
        assert!(
            c.percent.lo.is_some() && c.mean_ratio_percent.is_none(),
            "{c:?}"
        );
        let ten = contrasts(
            &d(BOOTSTRAP_MIN_N),
            0.01,
            0.99,
            Better::Lower,
            &Design::Fixed,
        );
        assert!(ten[0].as_ref().unwrap().mean_ratio_percent.is_some());
    }

    #[test]
    fn holm_declares_what_bonferroni_would_miss_and_prints_the_level_it_used() {
        let mut r = crate::rng::XorShift::new(11);
        let mut noise = || ((r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.02;
        let strong: Vec<f64> = (0..30).map(|_| -0.08 + noise()).collect();
        let base: Vec<f64> = (0..30).map(|_| noise()).collect();
        // The smallest shift whose 99% interval excludes 0 while its 99.5% (Bonferroni for two
        // contrasts) interval does not.
        let shift = (1..2000)
            .map(|k| -(k as f64) * 1e-5)
            .find(|s| {
                let x: Vec<f64> = base.iter().map(|v| v + s).collect();
                hodges_lehmann(&x, 0.99).unwrap().excludes(0.0)
                    && !hodges_lehmann(&x, 0.995).unwrap().excludes(0.0)
            })
            .expect("a borderline shift exists");
        let borderline: Vec<f64> = base.iter().map(|v| v + shift).collect();
        let c = contrasts(
            &[strong, borderline],
            0.001,
            0.99,
            Better::Lower,
            &Design::Fixed,
        );
        let (a, b) = (c[0].as_ref().unwrap(), c[1].as_ref().unwrap());
        assert_eq!((a.verdict, b.verdict), (Verdict::Faster, Verdict::Faster));
        assert!((a.level - 0.995).abs() < 1e-12 && (b.level - 0.99).abs() < 1e-12);
        // The level asked at that step, and the (higher) level the exact interval achieved.
        assert!(a.percent.confidence >= a.level && a.percent.confidence < 1.0);
    }

    #[test]
    fn sequential_reports_the_confidence_sequence_at_alpha_over_m() {
        let d: Vec<f64> = (0..40).map(|i| -0.05 + 0.001 * (i % 7) as f64).collect();
        let design = Design::Sequential {
            n_opt: SEQUENTIAL_N_OPT,
        };
        let c = contrasts(&[d.clone(), d.clone()], 0.01, 0.99, Better::Lower, &design);
        let c0 = c[0].as_ref().unwrap();
        assert!((c0.level - 0.995).abs() < 1e-12);
        let mut cs = crate::analyze::sequential::ConfidenceSequence::new(0.005, SEQUENTIAL_N_OPT);
        d.iter().for_each(|v| cs.push(*v));
        let (lo, hi) = cs.interval().unwrap();
        assert!((c0.percent.lo.unwrap() - (lo.exp() - 1.0) * 100.0).abs() < 1e-9);
        assert!((c0.percent.hi.unwrap() - (hi.exp() - 1.0) * 100.0).abs() < 1e-9);
        assert!(c0.method.contains("confidence sequence"));
    }

    #[test]
    fn unpaired_uses_mann_whitney() {
        let x: Vec<f64> = (0..20).map(|i| (1.1f64).ln() + 0.001 * i as f64).collect();
        let y: Vec<f64> = (0..25).map(|i| 0.001 * i as f64).collect();
        let c = unpaired_contrasts(&[x], &y, 0.01, 0.99, Better::Lower);
        let c = c[0].as_ref().unwrap();
        assert_eq!(c.verdict, Verdict::Slower);
        assert!(c.method.contains("Mann–Whitney"));
        assert!((c.percent.point - 10.0).abs() < 1.0, "{:?}", c.percent);
    }

    #[test]
    fn contrasts_with_holm_and_warnings() {
        let mut r = crate::rng::XorShift::new(3);
        let mut noise = || ((r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01;
        let faster: Vec<f64> = (0..40).map(|_| -0.05 + noise()).collect();
        let same: Vec<f64> = (0..40).map(|_| noise()).collect();
        let c = contrasts(&[faster, same], 0.01, 0.99, Better::Lower, &Design::Fixed);
        let (a, b) = (c[0].as_ref().unwrap(), c[1].as_ref().unwrap());
        assert_eq!(a.verdict, Verdict::Faster);
        assert!(a.clears_effect && a.percent.point < -4.0);
        assert_eq!(b.verdict, Verdict::Equivalent);
        let few = contrasts(
            &[vec![0.1, 0.2, 0.3]],
            0.01,
            0.99,
            Better::Lower,
            &Design::Fixed,
        );
        let f = few[0].as_ref().unwrap();
        assert_eq!(f.verdict, Verdict::Inconclusive);
        assert!(f.warnings[0].contains("too few"));
    }
}
