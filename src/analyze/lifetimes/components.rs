//! The variance components of a nested design's per-block values: blocks within a server
//! lifetime, lifetimes beyond them, and the effect a restart gives all its replicas alike.

use super::{Components, Placed};

/// One-way random-effects ANOVA (method of moments, unbalanced groups: n0 of Searle et al.,
/// "Variance Components", 1992, §3.6): the SD within groups and the SD between them beyond
/// it (0 when the data show none). Needs two groups and one group of two.
fn one_way<K: Ord>(groups: &std::collections::BTreeMap<K, Vec<f64>>) -> Option<(f64, f64)> {
    let k = groups.len();
    let n: usize = groups.values().map(Vec::len).sum();
    if k < 2 || n <= k {
        return None;
    }
    let grand = groups.values().flatten().sum::<f64>() / n as f64;
    let mut ssw = 0.0;
    let mut ssb = 0.0;
    for g in groups.values() {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        ssw += g.iter().map(|v| (v - m).powi(2)).sum::<f64>();
        ssb += g.len() as f64 * (m - grand).powi(2);
    }
    let msw = ssw / (n - k) as f64;
    let msb = ssb / (k - 1) as f64;
    let sum_sq: f64 = groups.values().map(|g| (g.len() * g.len()) as f64).sum();
    let n0 = (n as f64 - sum_sq / n as f64) / (k - 1) as f64;
    Some((msw.sqrt(), ((msb - msw) / n0).max(0.0).sqrt()))
}

/// The variance components of `x`: blocks within a server lifetime and lifetimes beyond them
/// (one-way ANOVA over the lifetimes) and, with replicas, the effect a restart gives all its
/// replicas alike: the same ANOVA over the replicas' lifetime means grouped by restart, whose
/// spread within a restart, less the blocks' share of it (T²₁ over the harmonic mean of the
/// blocks per lifetime), is a replica's own instance variance. Needs at least two lifetimes
/// and one lifetime with two blocks.
pub fn components(x: &[Placed]) -> Option<Components> {
    let mut groups: std::collections::BTreeMap<(usize, usize), Vec<f64>> = Default::default();
    for p in x {
        groups
            .entry((p.lifetime, p.replica))
            .or_default()
            .push(p.value);
    }
    let (within_sd, between_sd) = one_way(&groups)?;
    let replicas = x.iter().map(|p| p.replica + 1).max().unwrap_or(1);
    let nested = (replicas > 1)
        .then(|| {
            let mut by_restart: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
            for ((restart, _), g) in &groups {
                let mean = g.iter().sum::<f64>() / g.len() as f64;
                by_restart.entry(*restart).or_default().push(mean);
            }
            let (means_sd, shared) = one_way(&by_restart)?;
            let harmonic =
                groups.len() as f64 / groups.values().map(|g| 1.0 / g.len() as f64).sum::<f64>();
            let own = (means_sd.powi(2) - within_sd.powi(2) / harmonic).max(0.0);
            Some((own.sqrt(), shared))
        })
        .flatten();
    Some(Components {
        lifetimes: groups.len(),
        blocks: x.len(),
        within_sd,
        between_sd: nested.map_or(between_sd, |n| n.0),
        replicas,
        shared_sd: nested.map(|n| n.1),
    })
}

/// Several contrasts' components pooled into one: their variances averaged (None without any).
pub fn pooled(cs: &[Components]) -> Option<Components> {
    let n = cs.len() as f64;
    let first = cs.first()?;
    let mean_sq = |f: &dyn Fn(&Components) -> f64| cs.iter().map(|c| f(c).powi(2)).sum::<f64>() / n;
    let shared: Vec<f64> = cs.iter().filter_map(|c| c.shared_sd).collect();
    Some(Components {
        lifetimes: first.lifetimes,
        blocks: first.blocks,
        within_sd: mean_sq(&|c| c.within_sd).sqrt(),
        between_sd: mean_sq(&|c| c.between_sd).sqrt(),
        replicas: first.replicas,
        shared_sd: (!shared.is_empty())
            .then(|| (shared.iter().map(|s| s * s).sum::<f64>() / shared.len() as f64).sqrt()),
    })
}

/// The variance a lifetime adds beyond its blocks, as the sizing counts it: its own instance
/// effect plus, with `replicas` restarted together, their shared effect counted once per
/// restart — a restart's mean over its replicas has variance S² + (T²₂ + T²₁/k)/n, which is
/// (T²₂ + n·S² + T²₁/k)/n.
pub(super) fn between_sq(c: &Components, replicas: f64) -> f64 {
    c.between_sd.powi(2) + replicas * c.shared_sd.unwrap_or(0.0).powi(2)
}

/// Per arm, the SD of its own instance effect (log scale): the variance of its lifetime means
/// minus what it shares with the other arms (their mean pairwise covariance: the machine's
/// drift) and minus its burst noise averaged over a lifetime's blocks. `means[a][l]` is arm
/// `a`'s mean log value in lifetime `l`; `within[a]` the SD of arm `a`'s blocks inside a
/// lifetime (after the block's common part is removed) and `per_lifetime` the blocks a
/// lifetime holds on average. None for an arm with fewer than three lifetimes.
pub fn instance_sds(means: &[Vec<f64>], within: &[f64], per_lifetime: f64) -> Vec<Option<f64>> {
    let l = means.iter().map(Vec::len).min().unwrap_or(0);
    let cov = |a: &[f64], b: &[f64]| {
        let (ma, mb) = (
            a[..l].iter().sum::<f64>() / l as f64,
            b[..l].iter().sum::<f64>() / l as f64,
        );
        a[..l]
            .iter()
            .zip(&b[..l])
            .map(|(x, y)| (x - ma) * (y - mb))
            .sum::<f64>()
            / (l as f64 - 1.0)
    };
    (0..means.len())
        .map(|a| {
            if l < 3 || means.len() < 2 {
                return None;
            }
            let var = cov(&means[a], &means[a]);
            let others: Vec<f64> = (0..means.len())
                .filter(|b| *b != a)
                .map(|b| cov(&means[a], &means[b]))
                .collect();
            let shared = others.iter().sum::<f64>() / others.len() as f64;
            let noise = within.get(a).map_or(0.0, |w| w * w / per_lifetime.max(1.0));
            Some((var - shared - noise).max(0.0).sqrt())
        })
        .collect()
}
