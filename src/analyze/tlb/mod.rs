//! `bench tlb`: the TLB's reach and the cost of a miss, from timing alone (no PMU needed).
//!
//! The workload loads one cache line of every 4 KiB page of a span, in a random cycle, so every
//! access is to another page while the lines touched stay few. On 4 KiB pages each access
//! needs its own TLB entry; on 2 MiB or 1 GiB pages the same span needs a handful. Both see the
//! same data-cache behaviour, so their ratio, paired by round, isolates translation: it stays
//! at 1 while the 4 KiB pages fit the TLB, and leaves it where they stop fitting — the reach,
//! found within the step between two spans. Past it, the extra time per access is what a miss
//! costs (the walk, and under a hypervisor the host's walk too), in ns and as a share of an
//! access whose translation hits.

mod across;
mod locate;
mod why;

pub use across::across;
pub use why::{needs, why};

use crate::backing::Backing;
use crate::metric::Metric;
use crate::model::bench::{CellStats, Observation};
pub use crate::model::tlb::{
    Agreement, FASTER_BY, Measured, MeasuredLevel, Point, Sweep, TlbReach,
};
use crate::probe::tlb::TlbGeometry;
use crate::stats::Estimate;

/// Every level the timing resolves. The first is the knee; a later level starts where what
/// 4 KiB pages cost beyond the huge backing (`extra_ns`) jumps after a plateau: the two spans
/// before it agree (their intervals overlap), and the span's whole interval lies above twice
/// the last of them — by more than the huge backing's own time rose there (a span that
/// outgrows the data caches slows both backings; that is not a TLB level). A cost that climbs
/// span by span, as the share of accesses that miss grows, is one level, not many.
fn levels(points: &[Point], knee: Option<(u64, u64)>) -> Vec<MeasuredLevel> {
    let Some((lo, hi)) = knee else {
        return Vec::new();
    };
    let Some(first) = points.iter().position(|p| p.pages == hi) else {
        return Vec::new();
    };
    let overlap = |a: &Point, b: &Point| {
        let (e, f) = (&a.extra_ns, &b.extra_ns);
        matches!((e.lo, e.hi, f.lo, f.hi), (Some(al), Some(ah), Some(bl), Some(bh)) if al <= bh && bl <= ah)
    };
    // (entries, the index of the first span of its plateau)
    let mut bounds: Vec<((u64, u64), usize)> = vec![((lo, hi), first)];
    for i in first + 2..points.len() {
        let (p, prev, before) = (&points[i], &points[i - 1], &points[i - 2]);
        let last_start = bounds.last().map_or(first, |b| b.1);
        let plateau = i - 2 >= last_start && overlap(before, prev);
        let jumps = p
            .extra_ns
            .lo
            .is_some_and(|l| l > 2.0 * prev.extra_ns.point.max(0.0));
        let tlb = p.extra_ns.point - prev.extra_ns.point > p.huge_ns - prev.huge_ns;
        if plateau && jumps && tlb {
            bounds.push(((prev.pages, p.pages), i));
        }
    }
    bounds
        .iter()
        .enumerate()
        .map(|(n, ((lo, hi), at))| {
            let end = bounds.get(n + 1).map_or(points.len(), |b| b.1);
            let plateau = &points[*at..end];
            MeasuredLevel {
                level: n as u8 + 1,
                entries: (*lo, *hi),
                reach_4k: (lo * 4096, hi * 4096),
                miss_ns: plateau[1.min(plateau.len() - 1)].extra_ns,
            }
        })
        .collect()
}

/// Each span's rounds of `backing` against 4 KiB pages: ln(huge / 4 KiB), paired by round.
fn span_rounds(obs: &[Observation], backing: Backing, points: &[Point]) -> Vec<locate::SpanRounds> {
    let of = |b: Backing, size: u64| {
        obs.iter()
            .filter(move |o| o.metric == Metric::TlbNs && o.backing == b && o.size == size)
    };
    points
        .iter()
        .map(|p| {
            let size = p.pages * 4096;
            let log_ratios = of(backing, size)
                .filter_map(|h| {
                    let b = of(Backing::Base, size).find(|b| b.round == h.round)?;
                    Some((h.value / b.value).ln())
                })
                .filter(|x| x.is_finite())
                .collect();
            locate::SpanRounds {
                pages: p.pages,
                log_ratios,
            }
        })
        .collect()
}

/// The reach and the miss cost from a tlb bench's observations and cells, the knee located
/// over the whole sweep at `confidence`.
pub fn reach(
    obs: &[Observation],
    cells: &[CellStats],
    geometry: TlbGeometry,
    hypervisor: bool,
    confidence: f64,
) -> TlbReach {
    let tlb: Vec<&CellStats> = cells.iter().filter(|c| c.metric == Metric::TlbNs).collect();
    let mut backings: Vec<Backing> = Vec::new();
    for c in &tlb {
        if c.backing != Backing::Base && !backings.contains(&c.backing) {
            backings.push(c.backing);
        }
    }
    let sweeps: Vec<Sweep> = backings
        .iter()
        .map(|&b| {
            let mut points: Vec<Point> = tlb
                .iter()
                .filter(|c| c.backing == b)
                .filter_map(|c| {
                    let base = tlb
                        .iter()
                        .find(|x| x.backing == Backing::Base && x.size == c.size)?;
                    let ratio = c.vs_baseline?;
                    // 4 KiB time = huge time / ratio, so the extra is huge × (1/ratio − 1).
                    let extra = |r: f64| c.score * (1.0 / r - 1.0);
                    Some(Point {
                        pages: c.size / 4096,
                        base_ns: base.score,
                        huge_ns: c.score,
                        extra_share: (c.score > 0.0).then(|| extra(ratio.point) / c.score),
                        extra_ns: Estimate {
                            point: extra(ratio.point),
                            lo: ratio.hi.map(extra),
                            hi: ratio.lo.map(extra),
                            confidence: ratio.confidence,
                        },
                        ratio,
                    })
                })
                .collect();
            points.sort_by_key(|p| p.pages);
            let spans = span_rounds(obs, b, &points);
            let (knee, located) = match locate::locate(&spans, &points, confidence, 0x7eb) {
                Some((k, l)) => (k, Some(l)),
                None => (None, None),
            };
            Sweep {
                backing: b,
                knee,
                // Levels and CPUID's agreement are read only from a range the resamples
                // resolved: an unresolved one says where the reach may be, not where it is.
                levels: levels(&points, knee.filter(|_| resolved(located.as_ref()))),
                located,
                points,
            }
        })
        .collect();
    let pick = |want: &dyn Fn(Backing) -> bool| sweeps.iter().position(|s| want(s.backing));
    let headline = pick(&|b| b == Backing::Hugetlb { page_size: 2 << 20 })
        .or_else(|| pick(&|b| b == Backing::Thp))
        .or_else(|| (!sweeps.is_empty()).then_some(0));
    let agreement = headline.and_then(|i| {
        let (lo, hi) = sweeps[i]
            .knee
            .filter(|_| resolved(sweeps[i].located.as_ref()))?;
        let (level, entries) = [2u8, 1]
            .iter()
            .find_map(|l| geometry.data_entries(*l, 4096).map(|e| (*l, e)))?;
        let e = entries as f64;
        Some(Agreement {
            level,
            entries,
            agrees: e >= lo as f64 / 1.5 && e <= hi as f64 * 1.5,
        })
    });
    TlbReach {
        sweeps,
        headline,
        geometry,
        agreement,
        hypervisor,
        across: None,
    }
}

/// Whether a sweep's range was resolved over the whole sweep (a sweep too small to locate has
/// only the table's own knee, and that is taken as it is).
fn resolved(l: Option<&crate::model::tlb::Located>) -> bool {
    l.is_none_or(|l| l.resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::bench::{Observation, analyse};

    /// A machine with 3,072 second-level entries: 4 KiB pages cost 10 ns more per access once
    /// the pages outnumber them (scaled by the share that miss), the data cache the same for both.
    fn observations(entries: f64, noise: f64) -> Vec<Observation> {
        let mut obs = Vec::new();
        let mut rng = crate::rng::XorShift::new(3);
        for &pages in &[512u64, 1024, 2048, 3072, 4096, 8192, 16384] {
            let hit = 3.0 + (pages as f64).log2() * 0.3;
            let miss = (1.0 - entries / pages as f64).max(0.0);
            for round in 0..12 {
                let wobble = |r: &mut crate::rng::XorShift| {
                    1.0 + noise * (r.below(1000) as f64 / 500.0 - 1.0)
                };
                for (backing, v) in [
                    (Backing::Base, hit + 10.0 * miss),
                    (Backing::Hugetlb { page_size: 2 << 20 }, hit),
                ] {
                    obs.push(Observation {
                        metric: Metric::TlbNs,
                        size: pages * 4096,
                        backing,
                        round,
                        value: v * wobble(&mut rng),
                    });
                }
            }
        }
        obs
    }

    /// A sweep too noisy to resolve its range: CPUID's count is not said to agree or
    /// disagree with it, and no levels are read from it, where the clean sweep has both.
    #[test]
    fn an_unresolved_range_gives_no_cpuid_agreement_and_no_levels() {
        let noisy = observations(3072.0, 0.6);
        let cells = analyse(&noisy, Backing::Base, 0.999);
        let r = reach(&noisy, &cells, geometry(3072), true, 0.999);
        let s = r.headline().unwrap();
        let l = s.located.as_ref().unwrap();
        assert!(!l.resolved, "{l:?}");
        assert_eq!((&r.agreement, s.levels.len()), (&None, 0), "{:?}", s.knee);
        let clean = observations(3072.0, 0.01);
        let cells = analyse(&clean, Backing::Base, 0.999);
        let r = reach(&clean, &cells, geometry(3072), true, 0.999);
        assert!(r.agreement.is_some() && !r.headline().unwrap().levels.is_empty());
    }

    /// A span as `bench tlb` measured it: 4 KiB ns per access and huge / 4 KiB (±3%).
    fn measured(span_k: u64, base_ns: f64, ratio: f64) -> Point {
        let r = Estimate {
            point: ratio,
            lo: Some(ratio * 0.97),
            hi: Some((ratio * 1.03).min(1.03)),
            confidence: 0.999,
        };
        let huge = base_ns * ratio;
        let extra = |r: f64| huge * (1.0 / r - 1.0);
        Point {
            pages: span_k / 4,
            base_ns,
            huge_ns: huge,
            extra_share: Some(extra(r.point) / huge),
            extra_ns: Estimate {
                point: extra(r.point),
                lo: r.hi.map(extra),
                hi: r.lo.map(extra),
                confidence: r.confidence,
            },
            ratio: r,
        }
    }

    /// The 16-CPU machine's sweep (CPUID 0x000c06f2: an L1 dTLB of 96 entries for 4 KiB pages
    /// and a second level of 2,048): both levels are named, each with its entries and what a
    /// miss there costs; the memory-bound span at 256M is not a level.
    #[test]
    fn each_level_the_timing_resolves_is_named_with_its_entries_and_miss_cost() {
        let points = vec![
            measured(64, 1.60, 1.00),
            measured(256, 1.65, 1.00),
            measured(384, 1.68, 1.00),
            measured(512, 4.20, 0.42),
            measured(4096, 7.44, 0.68),
            measured(6144, 7.78, 0.69),
            measured(8192, 24.38, 0.33),
            measured(16384, 16.30, 0.34),
            measured(65536, 24.0, 0.53),
            measured(262144, 170.6, 0.79),
        ];
        // The knee is given (locating it is `locate.rs`'s test); the levels follow from it.
        let k = Some((96, 128));
        let l = levels(&points, k);
        assert_eq!(l.len(), 2, "{l:#?}");
        assert_eq!((l[0].level, l[0].entries), (1, (96, 128)));
        assert_eq!((l[1].level, l[1].entries), (2, (1536, 2048)));
        assert_eq!(l[1].reach_4k, (6 << 20, 8 << 20));
        // A first-level miss that hits the second costs about 2.4 ns; past the second, 11–16.
        assert!((l[0].miss_ns.point - 2.4).abs() < 0.2, "{:?}", l[0].miss_ns);
        assert!(l[1].miss_ns.point > 10.0, "{:?}", l[1].miss_ns);
    }

    fn geometry(entries: u32) -> TlbGeometry {
        TlbGeometry {
            levels: vec![crate::probe::tlb::TlbLevel {
                level: 2,
                kind: crate::probe::tlb::TlbKind::Data,
                page_size: 4096,
                entries,
                ways: Some(8),
            }],
            source: "test".into(),
        }
    }

    #[test]
    fn the_knee_is_where_the_pages_outnumber_the_entries() {
        let obs = observations(3072.0, 0.01);
        let cells = analyse(&obs, Backing::Base, 0.999);
        let r = reach(&obs, &cells, geometry(3072), true, 0.999);
        let s = r.headline().unwrap();
        assert_eq!(s.knee, Some((3072, 4096)), "{:?}", s.points);
        // Past one level the cost rises smoothly with the share that misses: one level.
        assert_eq!(s.levels.len(), 1, "{:?}", s.levels);
        let (first, last) = s.past();
        let (first, last) = (first.unwrap(), last.unwrap());
        // At 4,096 pages a quarter of the accesses miss: about 2.5 ns extra; at 16,384, 8.1.
        assert!((first.extra_ns.point - 2.5).abs() < 0.5, "{first:?}");
        assert!((last.extra_ns.point - 8.1).abs() < 0.8, "{last:?}");
        assert!(last.extra_ns.lo.unwrap() <= last.extra_ns.point);
        assert_eq!(r.agreement.as_ref().map(|a| a.agrees), Some(true));
        // CPUID declaring a quarter of that disagrees with the timing.
        let r = reach(&obs, &cells, geometry(768), true, 0.999);
        assert_eq!(r.agreement.map(|a| a.agrees), Some(false));
        // No knee when the huge backing never pulls ahead.
        let flat_obs = observations(1e9, 0.01);
        let flat = analyse(&flat_obs, Backing::Base, 0.999);
        assert_eq!(
            reach(&flat_obs, &flat, geometry(3072), false, 0.999)
                .headline()
                .unwrap()
                .knee,
            None
        );
    }
}
