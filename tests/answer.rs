//! The answer a reader gets: a service run's default output fits a screen and the person who
//! runs the service, and every number it prints is a field of the stored record; and the
//! answer's lines from analyses `analyze::experiment::analyse` builds — the renderer reads only
//! the record, so these tests build a real one and read what `render::summary` says of it.

use crate::common;
use crate::common::postgres::PrivatePg;
use hugelab::model::analysis::ExperimentAnalysis;
use hugelab::model::verdict::Design;
use hugelab::render::summary::{RunFacts, answer, run_line};
use hugelab::render::words::WIDTH;

/// Every signed number the text prints (`+3.1%`, `[+0.3,`, `-4.3%`), with its decimals; a sign
/// inside a word (`hugetlb-2m`) is not one.
fn signed_numbers(text: &str) -> Vec<(f64, usize)> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| matches!(c, '[' | ']' | ',' | ';' | '(' | ')')))
        .filter_map(|w| {
            let w = w.strip_suffix('%').unwrap_or(w);
            let digits = w.strip_prefix(['+', '-'])?;
            if !digits.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len());
            Some((w.parse().ok()?, decimals))
        })
        .collect()
}

/// Every contrast's estimate and interval ends in a stored run's record, percent.
fn estimates(report: &serde_json::Value, out: &mut Vec<f64>) {
    for m in report["metrics"].as_array().into_iter().flatten() {
        for c in m["contrasts"].as_array().into_iter().flatten() {
            let p = &c[1]["percent"];
            out.extend(["point", "lo", "hi"].iter().filter_map(|k| p[k].as_f64()));
        }
    }
    for c in report["conditions"].as_array().into_iter().flatten() {
        estimates(&c["analysis"], out);
    }
}

#[test]
fn printed_numbers_are_found_in_a_record_in_their_own_units() {
    use common::printed::{not_stored, numbers};
    let text = "hugetlb-2m vs off  tps +3.1% [+0.3, +5.7]  memory 1.5 GiB (13×), 97% huge, 2m26s, cpu ×2.1";
    let printed = numbers(text);
    let units: Vec<(f64, &str)> = printed.iter().map(|p| (p.value, p.unit.as_str())).collect();
    assert_eq!(
        units,
        [
            (3.1, "%"),
            (0.3, ""),
            (5.7, ""),
            (1.5, "GiB"),
            (13.0, "×"),
            (97.0, "%"),
            (146.0, "s"),
            (2.1, "×")
        ]
    );
    let record = serde_json::json!({
        "elapsed_s": 146.3, "pct": [3.12, 0.31, 5.66], "bytes": 1610612736u64,
        "ratio": 13.2, "huge": 0.968, "cpu_percent": 110.0
    });
    assert_eq!(not_stored(text, &record), vec![]);
    // One figure off by more than its rounding: named.
    let record = serde_json::json!({
        "elapsed_s": 146.3, "pct": [3.16, 0.31, 5.66], "bytes": 1610612736u64,
        "ratio": 13.2, "huge": 0.968, "cpu_percent": 110.0
    });
    let off = not_stored(text, &record);
    assert_eq!(off.len(), 1, "{off:?}");
    assert_eq!(off[0].text, "+3.1%");
}

#[test]
fn signed_numbers_are_read_with_their_decimals_and_arm_names_are_not_numbers() {
    assert_eq!(
        signed_numbers("hugetlb-2m vs off  tps +3.1% [+0.3, -5.80] @99.52% FASTER; ×15.6"),
        vec![(3.1, 1), (0.3, 1), (-5.8, 2)]
    );
}

#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: hugetlb pools, THP modes, runs PostgreSQL as postgres"
)]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
#[cfg_attr(missing_chromium, ignore = "needs Chromium (.ci/run installs it)")]
fn a_postgres_answer_fits_twelve_lines_and_prints_only_what_the_record_holds() {
    require_root!();
    let lock = common::knob_lock();
    let pg = PrivatePg::new();
    let (dir, port, sock) = (&pg.dir, pg.port, pg.sock.clone());
    let server = pg.server("-c shared_buffers=64MB");
    let db = dir.path().join("r.db").display().to_string();
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "postgres",
        "--user",
        "postgres",
        "--server",
        &server,
        // One-second bursts in one server lifetime: the claim is the answer's shape, and a burst
        // calibrated against a busy machine only makes the run (and the knob lock) longer.
        "--burst",
        "1s",
        "--blocks",
        "6",
        "--lifetime-blocks",
        "6",
        "--db",
        &db,
        "--",
        "pgbench",
        "-S",
        "-T",
        "1",
        "-c",
        "2",
        "-h",
        &sock,
        "-p",
        &port.to_string(),
        "postgres",
    ]);
    // What follows reads the stored run: the settings are another test's from here.
    drop(lock);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() <= 12, "{} lines:\n{out}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
    // One entry per arm, each naming its memory cost like with like; what advise would say.
    for arm in ["hugetlb-2m", "thp"] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(arm) && l.contains(" vs off  tps "))
            .unwrap_or_else(|| panic!("no line for {arm}:\n{out}"));
        let entry: String = lines[at..]
            .iter()
            .take_while(|l| l.starts_with(arm) || l.starts_with("  "))
            .flat_map(|l| l.split_whitespace())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(entry.contains("memory (segments whole) "), "{entry}");
        assert!(entry.contains("% huge"), "{entry}");
    }
    assert!(out.contains("advise (this run alone): "), "{out}");
    assert!(out.contains("hugelab results show 1"), "{out}");
    assert!(
        !out.contains("Kalibera") && !out.contains("design:") && !out.contains("note:"),
        "the design and the notes are behind --verbose:\n{out}"
    );
    // advise weighs the same like-with-like memory and says so.
    let advice = common::hugelab_stdout(["advise", "--for", "postgres", "--db", &db, "1"]);
    let words = advice.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("server memory (segments whole)"),
        "advise weighs the memory counted like with like:\n{advice}"
    );
    // The report is the answer drawn: in Chromium at 1200 px, its first 900 px hold the
    // answer's lines and the chart of the primary metric's contrasts, then its costs'.
    let html = dir.path().join("report.html");
    common::succeed(
        std::process::Command::new(env!("CARGO_BIN_EXE_hugelab"))
            .args(["report", "1", "--db", &db, "-o"])
            .arg(&html),
    );
    let bin = common::chromium::chromium().expect("no Chromium (.ci/run installs it)");
    let (answer_end, figures) = common::chromium::layout(bin, &html, 1200);
    assert!(answer_end.is_some_and(|b| b <= 900.0), "{answer_end:?}");
    let first = figures.first().expect("charts");
    assert!(
        first.0.starts_with("tps: each arm's change") && first.1 <= 900.0,
        "{figures:?}"
    );
    // Next, a cost's contrasts (the report orders the primary metric, then its costs).
    assert!(
        figures[1].0.contains("each arm's change") && figures[1].1 <= 900.0,
        "the primary metric's cost next: {figures:?}"
    );
    // Every number printed — percentages, ×, sizes, times, counts — is a field of the stored
    // record its line reads, rounded as printed, and a planted change of one is caught.
    let shown: serde_json::Value = serde_json::from_str(&common::hugelab_stdout([
        "results", "show", "1", "--json", "--db", &db,
    ]))
    .unwrap();
    common::printed::holds(&shown, &out, &|d| {
        common::printed::run_text(d, hugelab::render::run::Print::Brief)
    });
    // Every signed percentage printed is a contrast's estimate in the stored record, to the
    // decimals printed.
    let record: serde_json::Value = serde_json::from_str(&common::hugelab_stdout([
        "results", "show", "1", "--json", "--db", &db,
    ]))
    .unwrap();
    let mut known = Vec::new();
    estimates(&record["report"], &mut known);
    assert!(!known.is_empty(), "{record}");
    let printed = signed_numbers(&out);
    assert!(printed.len() >= 4, "{out}");
    for (v, decimals) in printed {
        let tol = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
        assert!(
            known.iter().any(|k| (k - v).abs() <= tol),
            "{v} is printed but no contrast in the record is {v} (±{tol}):\n{out}"
        );
    }
}

#[test]
fn the_cost_line_sits_under_the_verdict_with_each_arms_memory() {
    use hugelab::analyze::costs::{PEAK_MEM, SYS_CPU, USER_CPU, defs};
    use hugelab::analyze::experiment::{MetricDef, TrialData, analyse};
    use hugelab::model::verdict::Better;
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
    use hugelab::analyze::experiment::{MetricDef, TrialData, analyse};
    use hugelab::model::verdict::Better;
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

/// A service's brief answer words a verdict as a command run's answer does: a FASTER interval
/// that does not clear δ names its end nearest zero, never "by less than δ".
#[test]
fn a_service_answer_words_a_verdict_as_a_command_answer_does() {
    use hugelab::model::record::{RECORD_SCHEMA, RunFacts, RunRecord};
    let r = two_arms(12, 0.995);
    let record = RunRecord {
        schema: RECORD_SCHEMA.into(),
        run_id: 1,
        stored: true,
        service: true,
        replicas: 1,
        report: r.clone(),
        facts: RunFacts {
            blocks: 12,
            ..Default::default()
        },
        pools: Vec::new(),
        advice: None,
        servers: Vec::new(),
        notes: Vec::new(),
        trace_stalls: Vec::new(),
        decision: None,
        noise: Vec::new(),
        calibration: None,
        tlb: None,
        vm_advice: None,
    };
    let flat = |l: Vec<String>| l.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    let brief = flat(hugelab::render::service_answer::lines(&record));
    let command = flat(answer(&r));
    let phrase = "[-0.58, -0.38] @99.07% FASTER, not clearing δ = 1% (the interval reaches -0.38%)";
    assert!(brief.contains(phrase), "{brief}");
    assert!(command.contains(phrase), "{command}");
    assert!(!brief.contains("by less than"), "{brief}");
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
    use hugelab::analyze::experiment::{MetricDef, TrialData, analyse};
    use hugelab::model::verdict::Better;
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
