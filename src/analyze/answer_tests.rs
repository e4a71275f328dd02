//! The answer's lines from analyses built by `analyze::experiment::analyse`: the renderer reads
//! only the record, so these tests build a real one and read what `render::summary` says of it.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::verdict::Design;
use crate::render::summary::{RunFacts, answer, run_line};
use crate::render::words::WIDTH;

#[test]
fn the_cost_line_sits_under_the_verdict_with_each_arms_memory() {
    use crate::analyze::costs::{PEAK_MEM, SYS_CPU, USER_CPU, defs};
    use crate::analyze::experiment::{MetricDef, TrialData, analyse};
    use crate::model::verdict::Better;
    // 12 blocks: `always` 20% faster, 13× the memory, the same user CPU, 5× system CPU.
    let trials: Vec<TrialData> = (0..12)
        .flat_map(|b| {
            (0..2).map(move |a| {
                let j = 1.0 + 0.001 * ((b * 7 + a * 3) % 5) as f64;
                let (wall, mem, sys) = if a == 0 {
                    (1.0, 77.0 * 1048576.0, 0.03)
                } else {
                    (0.8, 1030.0 * 1048576.0, 0.15)
                };
                TrialData {
                    block: b,
                    arm: a,
                    ok: true,
                    metrics: [
                        ("wall_s".to_string(), wall * j),
                        (PEAK_MEM.to_string(), mem * j),
                        (USER_CPU.to_string(), 0.5 * j),
                        (SYS_CPU.to_string(), sys * j),
                    ]
                    .into(),
                    ..Default::default()
                }
            })
        })
        .collect();
    let mut metrics = vec![MetricDef {
        name: "wall_s".into(),
        better: Better::Lower,
        context: false,
        cost: false,
        row: false,
    }];
    metrics.extend(defs(false, false));
    let r = analyse(
        &["never".into(), "always".into()],
        0,
        &trials,
        &metrics,
        0.01,
        0.99,
        &Design::Fixed,
    );
    // The primary metric is wall time, not a cost that comes second.
    assert_eq!(r.primary().unwrap().metric.name, "wall_s");
    let lines = answer(&r);
    assert!(
        lines[0].contains("wall_s") && lines[0].contains("FASTER"),
        "{lines:?}"
    );
    let costs = lines[1..].join("\n");
    assert!(
        costs.trim_start().starts_with("costs: peak memory ×13."),
        "{costs}"
    );
    assert!(costs.contains("MORE (1.01 GiB vs 77."), "{costs}");
    assert!(
        costs.contains("user CPU") && costs.contains("SAME"),
        "{costs}"
    );
    assert!(costs.contains("system CPU ×5.0"), "{costs}");
    assert!(
        lines.iter().all(|l| l.chars().count() <= WIDTH),
        "{lines:?}"
    );
    // A run that recorded no cost (stored before, or imported) gets no cost line.
    let plain = analyse(
        &["never".into(), "always".into()],
        0,
        &trials,
        &metrics[..1],
        0.01,
        0.99,
        &Design::Fixed,
    );
    assert!(!answer(&plain).iter().any(|l| l.contains("costs:")));
}

/// `blocks` blocks of two arms, the second `ratio` times the first (with a little jitter).
fn two_arms(blocks: usize, ratio: f64) -> ExperimentAnalysis {
    use crate::analyze::experiment::{MetricDef, TrialData, analyse};
    use crate::model::verdict::Better;
    let trials: Vec<TrialData> = (0..blocks)
        .flat_map(|b| {
            (0..2).map(move |a| TrialData {
                block: b,
                arm: a,
                ok: true,
                metrics: [(
                    "wall_s".to_string(),
                    (if a == 0 { 1.0 } else { ratio })
                        * (1.0 + 0.0004 * ((b * 7 + a * 3) % 5) as f64),
                )]
                .into(),
                ..Default::default()
            })
        })
        .collect();
    let metrics = [MetricDef {
        name: "wall_s".into(),
        better: Better::Lower,
        context: false,
        cost: false,
        row: false,
    }];
    analyse(
        &["a".into(), "b".into()],
        0,
        &trials,
        &metrics,
        0.01,
        0.99,
        &Design::Fixed,
    )
}

#[test]
fn faster_not_by_delta_names_the_end_of_the_interval_that_misses_it() {
    // 0.5% faster, resolved: the interval excludes 0 but not δ = 1%.
    let text = answer(&two_arms(12, 0.995)).join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "[-0.58, -0.38] @99.07% FASTER, not clearing δ = 1% (the interval reaches -0.38%)"
        ),
        "{text}"
    );
}

#[test]
fn a_point_without_an_interval_says_why_on_its_own_line() {
    let lines = answer(&two_arms(3, 2.399));
    assert!(lines[0].contains("wall_s  +140% INCONCLUSIVE"), "{lines:?}");
    assert!(
        lines[1].starts_with("  no interval: 3 blocks are too few"),
        "{lines:?}"
    );
}

#[test]
fn the_run_line_says_secondary_metrics_are_not_adjusted_across_metrics() {
    use crate::analyze::experiment::{MetricDef, TrialData, analyse};
    use crate::model::verdict::Better;
    let trials: Vec<TrialData> = (0..12)
        .flat_map(|b| {
            (0..2).map(move |a| TrialData {
                block: b,
                arm: a,
                ok: true,
                metrics: [
                    ("wall_s".to_string(), 1.0 + 0.01 * (b % 3) as f64),
                    ("tps".to_string(), 100.0 + (a * 10 + b % 2) as f64),
                ]
                .into(),
                ..Default::default()
            })
        })
        .collect();
    let def = |name: &str, better, context| MetricDef {
        name: name.into(),
        better,
        context,
        cost: false,
        row: false,
    };
    let line = |defs: &[MetricDef]| {
        let r = analyse(
            &["a".into(), "b".into()],
            0,
            &trials,
            defs,
            0.01,
            0.99,
            &Design::Fixed,
        );
        run_line(&r, &RunFacts::default())
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let both = [
        def("wall_s", Better::Lower, false),
        def("tps", Better::Higher, false),
    ];
    assert!(
        line(&both).contains("secondary metrics: not adjusted across metrics"),
        "{}",
        line(&both)
    );
    // Wall time recorded as context: one contrasted metric, nothing to say.
    let one = [
        def("wall_s", Better::Lower, true),
        def("tps", Better::Higher, false),
    ];
    assert!(!line(&one).contains("secondary"), "{}", line(&one));
}
