//! A cost's interval when a run's blocks are too few for an exact signed-rank one. With n
//! blocks no sign-symmetric (distribution-free) interval can exclude zero beyond the level
//! 1 − 2^(1−n): 8 blocks reach 99.2%, short of the 99.67% a Holm step over three arms asks.
//! A cost identical in every block (1.00 GiB against 65.6 MiB in 16 of 16 trials) would then
//! read INCONCLUSIVE. For cost metrics only (memory, CPU: quantities the kernel counts, whose
//! per-block log-ratios are near-constant), such a contrast is computed instead as the mean
//! log-ratio with a Student-t interval at the same level, and says so in its method. The
//! primary metric's verdict never takes this path.

use super::{Better, Contrast, Design, blocks_to_resolve, contrast_from};
pub use crate::model::verdict::METHOD;
use crate::stats::{Estimate, sd as sample_sd, t_half_width};

/// Replace each contrast that has no interval at its level (too few blocks) by the Student-t
/// interval of its mean log-ratio `d[i]` at that level. Sequential designs keep theirs.
pub fn fill(
    contrasts: &mut [Option<Contrast>],
    d: &[Vec<f64>],
    effect: f64,
    better: Better,
    design: &Design,
) {
    if !matches!(design, Design::Fixed | Design::Unpaired) {
        return;
    }
    for (c, x) in contrasts.iter_mut().zip(d) {
        let Some(old) = c.as_ref() else { continue };
        if old.percent.lo.is_some() || x.len() < 2 {
            continue;
        }
        let n = x.len();
        let mean = x.iter().sum::<f64>() / n as f64;
        let sd = sample_sd(x);
        let Some(half) = t_half_width(sd, n, old.level) else {
            continue;
        };
        let e = Estimate {
            point: mean,
            lo: Some(mean - half),
            hi: Some(mean + half),
            confidence: old.level,
        };
        *c = Some(contrast_from(
            n,
            e,
            None,
            old.p_value,
            old.level,
            METHOD,
            effect,
            better,
            // As the signed-rank contrasts say it: the blocks δ needs at this spread.
            |n| {
                blocks_to_resolve(sd, effect, old.level, 0.8)
                    .saturating_sub(n)
                    .max(1)
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::verdict::{Verdict, contrasts};

    #[test]
    fn a_cost_identical_in_every_block_is_resolved_where_signed_rank_cannot_be() {
        // Three arms at 99%: Holm's first step asks 99.67%, beyond 8 blocks' 99.2%.
        let more = (1.0e9f64 / 65.6e6).ln();
        let d = vec![vec![more; 8], vec![0.0; 8], vec![-0.01; 8]];
        let mut c = contrasts(&d, 0.01, 0.99, Better::Lower, &Design::Fixed);
        assert!(
            c[0].as_ref().unwrap().percent.lo.is_none(),
            "signed-rank has none"
        );
        fill(&mut c, &d, 0.01, Better::Lower, &Design::Fixed);
        let c0 = c[0].as_ref().unwrap();
        assert_eq!(c0.verdict, Verdict::Slower, "{c0:?}");
        assert_eq!(c0.method, METHOD);
        assert!((c0.percent.point - (1.0e9 / 65.6e6 - 1.0) * 100.0).abs() < 0.1);
        assert!(
            c0.level > 0.996,
            "at the level the Holm step asked: {}",
            c0.level
        );
        assert!(c0.warnings.is_empty(), "{:?}", c0.warnings);
    }

    #[test]
    fn a_noisy_cost_over_few_blocks_stays_unresolved() {
        let d = vec![vec![0.3, -0.2, 0.25, -0.3, 0.1, -0.15, 0.2, -0.1]];
        let mut c = contrasts(&d, 0.01, 0.999, Better::Lower, &Design::Fixed);
        fill(&mut c, &d, 0.01, Better::Lower, &Design::Fixed);
        let c0 = c[0].as_ref().unwrap();
        assert_eq!(c0.verdict, Verdict::Inconclusive);
        assert!(c0.percent.lo.unwrap() < 0.0 && c0.percent.hi.unwrap() > 0.0);
        // The blocks it would need come from its spread, not a placeholder.
        let sd = crate::stats::sd(&d[0]);
        assert_eq!(
            c0.more_blocks,
            Some(blocks_to_resolve(sd, 0.01, c0.level, 0.8) - 8)
        );
        assert!(c0.more_blocks.unwrap() > 100);
    }

    #[test]
    fn an_interval_the_signed_rank_reached_is_kept() {
        let d = vec![vec![0.5; 12]];
        let mut c = contrasts(&d, 0.01, 0.99, Better::Lower, &Design::Fixed);
        let before = c.clone();
        fill(&mut c, &d, 0.01, Better::Lower, &Design::Fixed);
        assert_eq!(c, before);
    }
}
