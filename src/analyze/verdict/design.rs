//! How a run's blocks were collected — fixed paired blocks, a confidence sequence, an
//! O'Brien–Fleming group-sequential design, or unpaired imported runs — and so how they are
//! analysed: the interval each design gives, and the words printed for it.

pub use crate::model::verdict::Design;
use crate::stats::{Estimate, hodges_lehmann};
use statrs::distribution::{ContinuousCDF, Normal};

/// n_opt of the confidence sequence `run --sequential` uses (tightest near 30 blocks).
pub const SEQUENTIAL_N_OPT: f64 = 30.0;

/// The interval a paired design gives for one contrast at `level`, on the log scale.
pub fn paired_interval(x: &[f64], level: f64, design: &Design) -> Option<Estimate> {
    match design {
        Design::Sequential { n_opt } => {
            let mut cs = crate::analyze::sequential::ConfidenceSequence::new(
                crate::stats::Level(level).alpha(),
                *n_opt,
            );
            for v in x {
                cs.push(*v);
            }
            let point = x.iter().sum::<f64>() / x.len().max(1) as f64;
            let iv = cs.interval();
            (!x.is_empty()).then_some(Estimate {
                point,
                lo: iv.map(|i| i.0),
                hi: iv.map(|i| i.1),
                confidence: level,
            })
        }
        _ => hodges_lehmann(x, level),
    }
}

/// The repeated-confidence-interval level of an O'Brien–Fleming design after `n` blocks: the
/// boundary of the last look reached (the first look's, before it), at α per contrast.
pub fn group_sequential_level(looks: usize, max_blocks: usize, alpha: f64, n: usize) -> f64 {
    let g = crate::analyze::sequential::GroupSequential::new(looks, max_blocks, alpha);
    let k = g.look_blocks.iter().rposition(|&b| b <= n).unwrap_or(0);
    2.0 * Normal::standard().cdf(g.bounds[k]) - 1.0
}
