//! A `bench tlb` range set against this host's earlier runs: one run's bootstrap resamples its
//! own rounds, so the host's state moving between runs (the reach measured an hour apart on one
//! host) is outside every range it prints. Only runs at the same level, read from the same
//! headline backing, are compared; all ranges overlap exactly when the largest lower end lies
//! below the smallest upper end.

use crate::model::tlb::{AcrossRuns, Measured, RunRange, TlbReach};

/// The headline range of `now` (not yet stored) set against `earlier` (this host's stored runs,
/// oldest first). `None` when `now` has no located range.
pub fn across(earlier: &[Measured], now: &TlbReach) -> Option<AcrossRuns> {
    let (mine, level, backing) = range_of(now, None, "")?;
    let mut runs: Vec<RunRange> = earlier
        .iter()
        .filter_map(|m| range_of(&m.reach, Some(m.run), &m.created))
        .filter(|(_, l, b)| (*l - level).abs() < 1e-9 && *b == backing)
        .map(|(r, _, _)| r)
        .collect();
    runs.push(mine);
    let top = |r: &RunRange| r.between.1.unwrap_or(u64::MAX);
    let lo = runs.iter().map(|r| r.between.0).max()?;
    let hi = runs.iter().map(top).min()?;
    let (common, apart) = if lo < hi {
        (Some((lo, (hi < u64::MAX).then_some(hi))), None)
    } else {
        // The run with the highest lower end against the one with the lowest upper end.
        let a = runs.iter().position(|r| r.between.0 == lo)?;
        let b = runs.iter().position(|r| top(r) == hi)?;
        (None, Some((a.min(b), a.max(b))))
    };
    Some(AcrossRuns {
        runs,
        common,
        apart,
    })
}

/// A reach's headline range, its level and its backing.
fn range_of(
    t: &TlbReach,
    run: Option<i64>,
    created: &str,
) -> Option<(RunRange, f64, crate::backing::Backing)> {
    let s = t.headline()?;
    let l = s.located.as_ref()?;
    let range = RunRange {
        run,
        created: created.to_string(),
        between: l.between,
        resolved: l.resolved,
    };
    Some((range, l.confidence, s.backing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::Backing;
    use crate::model::tlb::{Located, Sweep};

    fn reach(between: (u64, Option<u64>), confidence: f64) -> TlbReach {
        TlbReach {
            sweeps: vec![Sweep {
                backing: Backing::Hugetlb { page_size: 2 << 20 },
                points: Vec::new(),
                knee: None,
                located: Some(Located {
                    confidence,
                    resamples: 4000,
                    between,
                    no_knee: 0.0,
                    resolved: between.1.is_some(),
                    surely_past: None,
                    rounds_to_resolve: None,
                }),
                levels: Vec::new(),
            }],
            headline: Some(0),
            geometry: Default::default(),
            agreement: None,
            hypervisor: false,
            across: None,
        }
    }

    fn stored(run: i64, between: (u64, Option<u64>), confidence: f64) -> Measured {
        Measured {
            run,
            created: format!("2026-11-29T1{run}:00:00Z"),
            reach: reach(between, confidence),
        }
    }

    #[test]
    fn ranges_that_all_overlap_share_their_common_span() {
        let earlier = [
            stored(1, (1024, Some(1536)), 0.999),
            stored(2, (768, Some(1536)), 0.999),
            stored(3, (1024, None), 0.999),
        ];
        let a = across(&earlier, &reach((512, Some(2048)), 0.999)).unwrap();
        assert_eq!(a.runs.len(), 4);
        assert_eq!(a.runs[3].run, None);
        assert_eq!(a.common, Some((1024, Some(1536))));
        assert_eq!(a.apart, None);
        // Past the largest span everywhere: no upper end in common either.
        let a = across(
            &[stored(1, (2048, None), 0.999)],
            &reach((1024, None), 0.999),
        )
        .unwrap();
        assert_eq!(a.common, Some((2048, None)));
    }

    #[test]
    fn ranges_an_hour_apart_that_do_not_overlap_are_named() {
        // The docs' own example: 256–512 and 768–1,536 an hour apart on one host.
        let earlier = [
            stored(1, (256, Some(512)), 0.999),
            stored(2, (384, Some(1024)), 0.999),
        ];
        let a = across(&earlier, &reach((768, Some(1536)), 0.999)).unwrap();
        assert_eq!(a.common, None);
        assert_eq!(a.apart, Some((0, 2)));
        // Ranges that touch at an end share no span: the knee lies above the lower end.
        let a = across(
            &[stored(1, (256, Some(512)), 0.999)],
            &reach((512, Some(1024)), 0.999),
        );
        assert_eq!(a.unwrap().apart, Some((0, 1)));
    }

    #[test]
    fn only_runs_at_the_same_level_are_compared() {
        let earlier = [stored(1, (256, Some(512)), 0.99)];
        let a = across(&earlier, &reach((768, Some(1536)), 0.999)).unwrap();
        assert_eq!(a.runs.len(), 1);
        assert_eq!(a.common, Some((768, Some(1536))));
        let mut unlocated = reach((768, Some(1536)), 0.999);
        unlocated.sweeps[0].located = None;
        assert_eq!(across(&earlier, &unlocated), None);
    }
}
