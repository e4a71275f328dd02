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
fn every_level_the_timing_resolved_is_said_with_its_entries_and_miss_cost() {
    use crate::model::stats::Estimate;
    use crate::model::tlb::MeasuredLevel;
    let level = |level, entries: (u64, u64), ns| MeasuredLevel {
        level,
        entries,
        reach_4k: (entries.0 * 4096, entries.1 * 4096),
        miss_ns: Estimate {
            point: ns,
            lo: Some(ns - 0.3),
            hi: Some(ns + 0.3),
            confidence: 0.999,
        },
    };
    let mut s = Sweep {
        backing: crate::backing::Backing::Hugetlb { page_size: 2 << 20 },
        points: Vec::new(),
        knee: Some((96, 128)),
        located: None,
        levels: vec![level(1, (96, 128), 2.4)],
    };
    assert_eq!(
        measured_levels(&s),
        None,
        "one level: the reach line says it"
    );
    s.levels.push(level(2, (1536, 2048), 16.3));
    assert_eq!(
        measured_levels(&s).unwrap(),
        "levels by timing: 1: about 96–128 entries (384K–512K), a miss there +2.4 [2.1, 2.7] \
         ns/access · 2: about 1,536–2,048 entries (6M–8M), a miss there +16.3 [16.0, 16.6] ns/access"
    );
}

#[test]
fn a_need_is_worded_with_its_times_and_level() {
    use crate::model::tlb::Need;
    let need = |name: &str, entries, times, level| Need {
        name: name.into(),
        entries,
        times,
        level,
    };
    let m = crate::model::tlb::Measured {
        run: 7,
        created: String::new(),
        reach: TlbReach {
            sweeps: vec![Sweep {
                backing: crate::backing::Backing::Thp,
                points: Vec::new(),
                knee: Some((96, 128)),
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
    let rows = [
        need("size=1000", 1, (0.008, 0.01), Some((0, Some(1)))),
        need("size=10000000", 2442, (19.08, 25.44), Some((2, None))),
        need("size=1000000", 245, (0.99, 2.5), Some((1, Some(2)))),
    ];
    let l = row_why_line(&rows, &m).unwrap();
    assert!(l.contains("run 7, 96–128 entries"), "{l}");
    assert!(
        l.contains("size=1000: 1 entries (within it; within level 1)"),
        "{l}"
    );
    assert!(
        l.contains("size=10000000: 2,442 entries (19.1–25.4× the reach; past level 2, the last one measured)"),
        "{l}"
    );
    assert!(
        l.contains("size=1000000: 245 entries (at its edge; past level 1, within level 2)"),
        "{l}"
    );
    assert!(row_why_line(&[], &m).is_none());
    let arms = [
        need("4k", 500, (3.9, 5.2), None),
        need("thp", 1, (0.008, 0.01), None),
    ];
    let l = why_line("the 2.0M touched", &arms, &m, None).unwrap();
    assert!(
        l.contains("500 TLB entries on 4k's pages (3.9–5.2× the reach)")
            && l.contains("1 on thp's pages (within it)"),
        "{l}"
    );
}

#[test]
fn a_span_below_the_miss_is_said_to_fit_only_when_its_interval_says_so() {
    use crate::model::stats::Estimate;
    use crate::model::tlb::Point;
    let point = |pages: u64, lo: f64, hi: f64| Point {
        pages,
        base_ns: 2.0,
        huge_ns: 1.5,
        extra_share: None,
        ratio: Estimate {
            point: (lo + hi) / 2.0,
            lo: Some(lo),
            hi: Some(hi),
            confidence: 0.99,
        },
        extra_ns: Estimate {
            point: 0.5,
            lo: Some(0.4),
            hi: Some(0.6),
            confidence: 0.99,
        },
    };
    let sweep = |points: Vec<Point>| Sweep {
        backing: crate::backing::Backing::Thp,
        points,
        knee: Some((1536, 2048)),
        levels: Vec::new(),
        located: None,
    };
    // 1,536 pages: 0.809× with an interval that reaches past 0.95 — not "fits".
    let s = sweep(vec![
        point(1024, 0.97, 1.02),
        point(1536, 0.66, 0.958),
        point(2048, 0.5, 0.6),
    ]);
    let w = knee_words(&s, 1536, 2048);
    assert!(
        w.starts_with("reach: 4 KiB pages fit up to 1,024 pages and miss from 2,048")
            && w.contains("1,536 pages: 0.809×, not resolved at the 5% rule"),
        "{w}"
    );
    // Where it fits with confidence, it is said plainly.
    let s = sweep(vec![point(1536, 0.97, 1.02), point(2048, 0.5, 0.6)]);
    assert!(
        knee_words(&s, 1536, 2048)
            .starts_with("reach: 4 KiB pages fit up to 1,536 pages and miss from 2,048")
    );
    // No span fits with confidence.
    let s = sweep(vec![point(1536, 0.7, 0.99), point(2048, 0.5, 0.6)]);
    assert!(
        knee_words(&s, 1536, 2048).contains("fit with confidence at no smaller span"),
        "{}",
        knee_words(&s, 1536, 2048)
    );
}

/// A sparse heap on THP: the kernel marks whole 2 MiB pages referenced, so the hot bytes and
/// their 4 KiB entries are said to be at most what smaps counts.
#[test]
fn hot_memory_on_thp_is_an_upper_bound_and_said_to_be() {
    use crate::model::inspect::{Entries, HotContext, HotMapping, HotSet};
    let set = |on_thp: u64| HotSet {
        pid: 42,
        name: "sparse".into(),
        window_s: 10.0,
        resident: 1 << 30,
        hot: 1 << 30,
        hugetlb_untracked: 0,
        entries: Entries {
            at_4k: 262_144,
            at_2m: (512, 512),
            at_1g: (1, 1),
            now: 512,
        },
        mappings: vec![HotMapping {
            start: 0,
            end: 1 << 30,
            kind: crate::probe::process::Kind::Heap,
            path: "[heap]".into(),
            resident: 1 << 30,
            hot: 1 << 30,
            on_thp,
            hugetlb_page: None,
        }],
        need: None,
    };
    let ctx = HotContext {
        measured: None,
        db: "r.db".into(),
        geometry: crate::probe::tlb::TlbGeometry::default(),
        errors: Vec::new(),
    };
    let said = |s: HotSet| {
        hot_text(&[s], &ctx)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let thp = said(set(1 << 30));
    assert!(
        thp.contains("at most 1G of 1G") && thp.contains("at most 262,144 entries at 4 KiB"),
        "{thp}"
    );
    assert!(thp.contains("upper bound"), "{thp}");
    let base = said(set(0));
    assert!(
        !base.contains("at most") && base.contains("262,144 entries at 4 KiB"),
        "{base}"
    );
    // Against a reach with two levels, the hot set is placed among them.
    let ctx = HotContext {
        measured: Some(crate::model::tlb::Measured {
            run: 3,
            created: String::new(),
            reach: TlbReach {
                sweeps: vec![Sweep {
                    backing: crate::backing::Backing::Hugetlb { page_size: 2 << 20 },
                    points: Vec::new(),
                    knee: Some((96, 128)),
                    located: None,
                    levels: vec![level(1, (96, 128)), level(2, (1536, 2048))],
                }],
                headline: Some(0),
                geometry: Default::default(),
                agreement: None,
                hypervisor: true,
                across: None,
            },
        }),
        ..ctx
    };
    let mut small = set(0);
    small.entries.at_4k = 1000;
    small.need = Some(crate::model::tlb::Need {
        name: "42".into(),
        entries: 1000,
        times: (7.8, 10.4),
        level: Some((1, Some(2))),
    });
    let t = hot_text(&[small], &ctx)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        t.contains("(96–128 entries; past level 1, within level 2)"),
        "{t}"
    );
}

/// A range whose lower end is below the smallest span names the smallest span, not its upper
/// end; unresolved, it says so; and "levels by timing" and CPUID's agreement are not printed
/// from an unresolved range.
#[test]
fn a_range_below_the_smallest_span_names_it_and_an_unresolved_one_claims_no_levels() {
    use crate::model::stats::Estimate;
    use crate::model::tlb::{Located, Point};
    let point = |pages: u64| Point {
        pages,
        base_ns: 2.0,
        huge_ns: 1.5,
        extra_share: None,
        ratio: Estimate {
            point: 0.75,
            lo: Some(0.7),
            hi: Some(0.8),
            confidence: 0.999,
        },
        extra_ns: Estimate {
            point: 0.5,
            lo: Some(0.4),
            hi: Some(0.6),
            confidence: 0.999,
        },
    };
    let located = |resolved: bool| Located {
        confidence: 0.999,
        resamples: 4000,
        between: (0, Some(2048)),
        no_knee: 0.0,
        resolved,
        surely_past: Some(2048),
        rounds_to_resolve: (!resolved).then_some(40),
    };
    let sweep = |hi: u64, l: Located| Sweep {
        backing: crate::backing::Backing::Thp,
        points: vec![point(1024), point(2048), point(4096)],
        knee: Some((0, hi)),
        levels: vec![level(1, (0, hi)), level(2, (4096, 8192))],
        located: Some(l),
    };
    let at =
        |hi, resolved| below_smallest(&sweep(hi, located(resolved)), hi, Some(&located(resolved)));
    assert_eq!(
        at(1024, true),
        "4 KiB pages already miss at the smallest span, 1,024 pages (4M): the reach is below it (at 99.9% over the whole sweep)"
    );
    assert_eq!(
        at(2048, true),
        "4 KiB pages miss from at most 2,048 pages (8M): the reach is below that, perhaps below the smallest span, 1,024 pages (4M) (at 99.9% over the whole sweep)"
    );
    assert!(
        at(2048, false).starts_with("reach: not resolved below 2,048 pages (8M) at this noise"),
        "{}",
        at(2048, false)
    );
    let reach = |s: Sweep| TlbReach {
        sweeps: vec![s],
        headline: Some(0),
        geometry: Default::default(),
        agreement: None,
        hypervisor: false,
        across: None,
    };
    let lines = |s: Sweep| {
        let t = reach(s);
        reach_lines(&t, &t.sweeps[0], 0.999).join("\n")
    };
    let mut s = sweep(2048, located(true));
    s.knee = Some((1024, 2048));
    assert!(
        lines(s.clone()).contains("levels by timing"),
        "{}",
        lines(s)
    );
    s.located = Some(located(false));
    assert!(
        !lines(s.clone()).contains("levels by timing"),
        "{}",
        lines(s)
    );
}

#[test]
fn the_range_across_runs_says_what_the_runs_of_this_host_support() {
    use crate::model::tlb::{AcrossRuns, RunRange};
    let run = |id: Option<i64>, between| RunRange {
        run: id,
        created: "2026-11-29T11:20:00Z".into(),
        between,
        resolved: false,
    };
    let runs = |n: i64| -> Vec<RunRange> {
        (1..n)
            .map(|i| run(Some(i), (1024, Some(1536))))
            .chain([run(None, (32, Some(1536)))])
            .collect()
    };
    let line = |runs: Vec<RunRange>, common, apart| {
        across_line(
            &AcrossRuns {
                runs,
                common,
                apart,
            },
            0.999,
        )
    };
    let first = line(runs(1), Some((32, Some(1536))), None);
    assert!(
        first.starts_with("across runs: the first range this host measured at 99.9%"),
        "{first}"
    );
    let three = line(runs(3), Some((1024, Some(1536))), None);
    assert!(
        three.contains("the 3 ranges this host measured at 99.9% since 2026-11-29 overlap, in 1,024–1,536 pages; 7 more runs make a study"),
        "{three}"
    );
    let study = line(runs(12), Some((1024, Some(1536))), None);
    assert!(study.contains("all 12 ranges"), "{study}");
    assert!(
        study.contains("so the range holds at 99.9% between runs here"),
        "{study}"
    );
    // Two that do not overlap: named, and no level claimed across runs.
    let mut apart = runs(3);
    apart[2].between = (256, Some(512));
    let said = line(apart, None, Some((0, 2)));
    assert!(
        said.contains("run 1's 1,024–1,536 pages and this run's 256–512 pages do not overlap"),
        "{said}"
    );
    assert!(
        said.contains(
            "holds within a run, not across runs; across them it lies in 256–1,536 pages"
        ),
        "{said}"
    );
    assert!(!said.contains("so the range holds"), "{said}");
}
