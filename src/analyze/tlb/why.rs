//! A run's "why" against the measured TLB reach: the entries each arm's memory needs on the
//! pages it was on, built once when the run ends and kept in its record ([`RunWhy`]), so `run`,
//! `results show` and the report say the same.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::tlb::{Measured, Need, RunWhy};
use crate::model::verdict::Verdict;

/// What the TLB model is given for a run: per arm its memory that matters on its pages (scaled
/// to the hot bytes with `--hot`, in the same mix of page sizes); an arm whose backing was not
/// judged (4 KiB-indifferent) and had no huge coverage, one entry per 4 KiB of its own peak
/// memory.
pub fn why(report: &ExperimentAnalysis, measured: Measured) -> RunWhy {
    let size = report
        .evidence
        .iter()
        .filter_map(|e| e.mean_matters)
        .fold(0.0f64, f64::max);
    let hot = report.evidence.iter().any(|e| e.mean_hot.is_some());
    let entries: Vec<(String, u64)> = report
        .evidence
        .iter()
        .filter_map(|e| {
            let own = e.mean_matters.or_else(|| peak_memory(report, &e.arm));
            let bytes = if hot { e.mean_hot? } else { own? };
            match (e.mean_entries, e.mean_matters, e.mean_coverage_at_peak) {
                (Some(n), Some(m), _) if m > 0.0 => {
                    Some((e.arm.clone(), (n * bytes / m).ceil() as u64))
                }
                (None, _, Some(c)) if c < 0.1 && bytes > 0.0 => {
                    Some((e.arm.clone(), bytes as u64 / 4096))
                }
                _ => None,
            }
        })
        .collect();
    let hot_bytes = report
        .evidence
        .iter()
        .filter_map(|e| e.mean_hot)
        .fold(0.0f64, f64::max);
    let primary = report.primary();
    let resolved = primary.is_some_and(|p| {
        p.contrasts.iter().any(|(_, c)| {
            c.as_ref()
                .is_some_and(|c| matches!(c.verdict, Verdict::Faster | Verdict::Slower))
        })
    });
    let rows: Vec<(String, u64)> = report
        .metrics
        .iter()
        .filter(|x| x.metric.row)
        .filter_map(|x| {
            let size: u64 = x
                .metric
                .name
                .split_whitespace()
                .find_map(|w| w.strip_prefix("size="))?
                .parse()
                .ok()?;
            Some((format!("size={size}"), size.div_ceil(4096)))
        })
        .collect();
    RunWhy {
        needs: needs(&entries, &measured),
        rows: needs(&rows, &measured),
        measured,
        hot,
        hot_bytes: hot_bytes as u64,
        matters_bytes: size as u64,
        unresolved: (!resolved).then(|| primary.map_or(String::new(), |p| p.metric.name.clone())),
    }
}

/// Each named count of 4 KiB TLB entries against the measured reach: how many times the reach
/// it is, and where it falls among the levels the timing resolved (two or more). None without
/// a reach.
pub fn needs(named: &[(String, u64)], m: &Measured) -> Vec<Need> {
    let Some((lo, hi)) = m.reach.entries_4k() else {
        return Vec::new();
    };
    let levels = m
        .reach
        .headline()
        .map(|s| s.levels.as_slice())
        .filter(|l| l.len() >= 2);
    named
        .iter()
        .map(|(name, n)| Need {
            name: name.clone(),
            entries: *n,
            times: (*n as f64 / hi.max(1) as f64, *n as f64 / lo.max(1) as f64),
            level: levels.map(|ls| match ls.iter().rposition(|l| *n > l.entries.0) {
                None => (0, Some(ls[0].level)),
                Some(i) => (i + 1, ls.get(i + 1).map(|l| l.level)),
            }),
        })
        .collect()
}

/// An arm's median peak memory (the cost metric), where the run recorded it.
fn peak_memory(r: &ExperimentAnalysis, arm: &str) -> Option<f64> {
    let m = r.metrics.iter().find(|m| {
        m.metric.cost && crate::units::Unit::of_metric(&m.metric.name) == crate::units::Unit::Bytes
    })?;
    crate::model::costs::arm_median(m, arm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level the timing resolved: its entries, a miss costing 1 ns.
    fn level(level: u8, entries: (u64, u64)) -> crate::model::tlb::MeasuredLevel {
        crate::model::tlb::MeasuredLevel {
            level,
            entries,
            reach_4k: (entries.0 * 4096, entries.1 * 4096),
            miss_ns: crate::model::stats::Estimate {
                point: 1.0,
                lo: Some(0.9),
                hi: Some(1.1),
                confidence: 0.999,
            },
        }
    }

    #[test]
    fn a_sweeps_rows_and_arms_are_placed_against_the_measured_reach() {
        let m = crate::model::tlb::Measured {
            run: 7,
            created: String::new(),
            reach: crate::model::tlb::TlbReach {
                sweeps: vec![crate::model::tlb::Sweep {
                    backing: crate::backing::Backing::Thp,
                    points: Vec::new(),
                    knee: Some((2048, 3072)),
                    located: None,
                    levels: Vec::new(),
                }],
                headline: Some(0),
                geometry: Default::default(),
                agreement: None,
                hypervisor: true,
                across: None,
            },
        };
        let named = |xs: &[(&str, u64)]| -> Vec<(String, u64)> {
            xs.iter().map(|(n, e)| (n.to_string(), *e)).collect()
        };
        let rows = named(&[
            ("size=1000", 1),
            ("size=10000000", 2442),
            ("size=100000000", 24415),
        ]);
        let n = needs(&rows, &m);
        let times: Vec<(String, String)> = n
            .iter()
            .map(|x| (format!("{:.1}", x.times.0), format!("{:.1}", x.times.1)))
            .collect();
        assert_eq!(times[0], ("0.0".into(), "0.0".into()), "within the reach");
        assert!(
            n[1].times.0 < 1.0 && n[1].times.1 >= 1.0,
            "at its edge: {:?}",
            n[1]
        );
        assert_eq!(times[2], ("7.9".into(), "11.9".into()));
        assert!(
            n.iter().all(|x| x.level.is_none()),
            "one level: no level said"
        );
        // With two levels resolved, each says which level's misses it pays.
        let mut m = m;
        m.reach.sweeps[0].knee = Some((96, 128));
        m.reach.sweeps[0].levels = vec![level(1, (96, 128)), level(2, (1536, 2048))];
        let n = needs(&named(&[("a", 1), ("b", 2442), ("c", 245)]), &m);
        assert_eq!(n[0].level, Some((0, Some(1))), "within level 1");
        assert_eq!(
            n[1].level,
            Some((2, None)),
            "past level 2, the last one measured"
        );
        assert_eq!(
            n[2].level,
            Some((1, Some(2))),
            "past level 1, within level 2"
        );
        // No reach: nothing is placed.
        m.reach.headline = None;
        assert!(needs(&rows, &m).is_empty());
    }
}
