//! Bench analysis: per cell (metric × size × backing) a summary and score ± error, and per
//! backing the paired ratio to the baseline backing over the randomized rounds.

use crate::backing::Backing;
use crate::metric::Metric;
pub use crate::model::bench::direction;
pub use crate::model::bench::{CellStats, Direction, Observation};
use crate::stats::{hodges_lehmann, summarize, t_half_width};

/// Analyse all observations against `baseline` at `confidence`. Cells keep input order.
pub fn analyse(obs: &[Observation], baseline: Backing, confidence: f64) -> Vec<CellStats> {
    let mut keys: Vec<(Metric, u64, Backing)> = Vec::new();
    for o in obs {
        if !keys.contains(&(o.metric, o.size, o.backing)) {
            keys.push((o.metric, o.size, o.backing));
        }
    }
    keys.into_iter()
        .filter_map(|(metric, size, backing)| {
            let cell = |b: Backing| -> Vec<(usize, f64)> {
                obs.iter()
                    .filter(|o| o.metric == metric && o.size == size && o.backing == b)
                    .map(|o| (o.round, o.value))
                    .collect()
            };
            let mine = cell(backing);
            let values: Vec<f64> = mine.iter().map(|x| x.1).collect();
            let summary = summarize(&values)?;
            let vs_baseline = if backing == baseline {
                None
            } else {
                let base = cell(baseline);
                let d: Vec<f64> = mine
                    .iter()
                    .filter_map(|(r, v)| {
                        base.iter()
                            .find(|(rb, _)| rb == r)
                            .map(|(_, b)| (v / b).ln())
                    })
                    .filter(|x| x.is_finite())
                    .collect();
                hodges_lehmann(&d, confidence).map(|e| e.map(f64::exp))
            };
            Some(CellStats {
                metric,
                size,
                backing,
                score: summary.mean,
                error: t_half_width(summary.sd, summary.n, confidence),
                summary,
                vs_baseline,
            })
        })
        .collect()
}

/// A bench decided at `confidence` — the one analysis a bench prints and a stored bench is read
/// again at: its cells (in the plan's order of metric, size and backing) and, for `bench tlb`,
/// the reach (`tlb`: the bench is `bench tlb`), against the CPUID `geometry` and whether a
/// hypervisor walks too.
pub fn decide(
    obs: &[Observation],
    plan: &crate::model::bench::Plan,
    tlb: Option<(crate::probe::tlb::TlbGeometry, bool)>,
    confidence: f64,
) -> (Vec<CellStats>, Option<crate::model::tlb::TlbReach>) {
    let mut cells = analyse(obs, Backing::Base, confidence);
    let tlb = tlb.map(|(geometry, hypervisor)| {
        crate::analyze::tlb::reach(obs, &cells, geometry, hypervisor, confidence)
    });
    let rank = |b: &Backing| {
        plan.backings
            .iter()
            .position(|x| x == b)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by_key(|c| (c.metric, c.size, rank(&c.backing)));
    (cells, tlb)
}

/// A stored bench read at another level: its rounds decided again at `confidence` (the cells,
/// the reach), everything it measured and said kept as it ran.
pub fn redecide(
    b: &crate::model::bench::BenchResult,
    confidence: f64,
) -> crate::model::bench::BenchResult {
    let tlb = b.tlb.as_ref().map(|t| (t.geometry.clone(), t.hypervisor));
    let (cells, tlb) = decide(&b.observations, &b.plan, tlb, confidence);
    let mut out = b.clone();
    out.plan.confidence = confidence;
    out.cells = cells;
    out.tlb = tlb;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratio_and_direction() {
        let mut obs = Vec::new();
        for r in 0..12 {
            let drift = 1.0 + r as f64 * 0.05; // drift hits both backings alike
            obs.push(Observation {
                metric: Metric::ChaseNs,
                size: 1 << 30,
                backing: Backing::Base,
                round: r,
                value: 300.0 * drift,
            });
            obs.push(Observation {
                metric: Metric::ChaseNs,
                size: 1 << 30,
                backing: Backing::Thp,
                round: r,
                value: 160.0 * drift * (1.0 + 0.001 * (r % 3) as f64),
            });
        }
        let cells = analyse(&obs, Backing::Base, 0.999);
        assert_eq!(cells.len(), 2);
        assert!(cells[0].vs_baseline.is_none());
        let ratio = cells[1].vs_baseline.unwrap();
        assert!((ratio.point - 160.0 / 300.0).abs() < 0.002, "{ratio:?}");
        assert!(ratio.lo.is_some(), "12 rounds give a 99.9% interval");
        assert_eq!(direction(Metric::ChaseNs, &ratio), Direction::Better);
        assert_eq!(direction(Metric::CommitGbs, &ratio), Direction::Worse);
        // With drift the unpaired error is wide, yet the paired ratio is tight.
        assert!(cells[0].error.unwrap() > 20.0);
        assert!(ratio.hi.unwrap() / ratio.lo.unwrap() < 1.01);
    }
}
