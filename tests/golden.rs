//! Golden outputs: the terminal, Markdown and CSV renderings of fixed stored data are
//! byte-identical to the files in tests/golden/, so a refactor that changes what a user reads
//! shows up as a diff. `HUGELAB_UPDATE_GOLDEN=1 cargo test --test suite golden::` rewrites them (then
//! read the diff before committing).

use crate::common;
use hugelab::store::{ArmRow, Store, TrialRow};
use std::path::Path;

/// Three arms over 12 blocks with fixed values: one clearly faster, one the same.
fn fixture(db: &Path) {
    let mut s = Store::open(db).unwrap();
    let arms: Vec<ArmRow> = ["4k", "thp", "same"]
        .iter()
        .enumerate()
        .map(|(i, n)| ArmRow {
            idx: i as i64,
            name: n.to_string(),
            spec: String::new(),
        })
        .collect();
    let plan =
        serde_json::json!({"baseline": 0, "metrics": [{"name": "wall_s", "better": "lower"}]});
    // Two runs of the same programs, the second on a machine 3% slower (a comparison of a run
    // with itself is refused).
    for run in 0..2 {
        let machine = if run == 0 { 1.0 } else { 1.03 };
        let id = s
            .create_run(
                Some("golden"),
                &["prog".into(), "--x".into()],
                Some("6.18"),
                "running",
                &serde_json::from_value(plan.clone()).unwrap(),
                &arms,
            )
            .unwrap();
        let mut seq = 0;
        for b in 0..12i64 {
            for a in 0..3i64 {
                let base = 1.0 + 0.013 * ((b * 5 + a) % 7) as f64;
                let v = machine
                    * match a {
                        1 => base * 0.9,
                        2 => base * (1.0 + 0.001 * ((b % 3) as f64 - 1.0)),
                        _ => base,
                    };
                s.add_trial(
                    id,
                    &TrialRow {
                        block: b,
                        arm_idx: a,
                        seq,
                        ok: true,
                        flagged: None,
                        metrics: [("wall_s".to_string(), v)].into(),
                        evidence: serde_json::json!({"memory": {"coverage_at_peak": if a == 1 { 0.98 } else { 0.0 }}}).into(),
                    },
                )
                .unwrap();
                seq += 1;
            }
        }
        s.finish_run::<()>(id, "complete", None).unwrap();
    }
}

fn check(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("HUGELAB_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (HUGELAB_UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert!(
        got == want,
        "{name} differs from {}:\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

fn hugelab(db: &Path, args: &[&str]) -> String {
    let mut v: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
    v.push("--db".into());
    v.push(db.into());
    common::hugelab_stdout(v)
}

/// Drop lines that name the time of storing or the temporary database.
fn stable(s: &str) -> String {
    s.lines()
        .map(|l| {
            // "run 1 (2026-…Z, complete): …" and "## run 1: … (2026-…Z, …)".
            if l.starts_with("run ") || l.starts_with("## run ") {
                l.split(" (").next().unwrap_or(l).to_string() + " (…)"
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn stored_results_render_exactly_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    fixture(&db);
    check(
        "results-show.txt",
        &stable(&hugelab(&db, &["results", "show", "1"])),
    );
    check(
        "results-export.md",
        &stable(&hugelab(&db, &["results", "export", "1", "--format", "md"])),
    );
    check(
        "results-export.csv",
        &hugelab(&db, &["results", "export", "1", "--format", "csv"]),
    );
    let cmp = hugelab(&db, &["compare", "1", "2"]);
    // The answer first, within 100 columns (stdout is not a terminal here).
    let show = hugelab(&db, &["results", "show", "1"]);
    for text in [&show, &cmp] {
        for l in text.lines() {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }
    // These runs are stored as an earlier version stored them (trials, no record, no decision):
    // analysed from their trials at the defaults, and said so before the answer.
    assert!(
        show.lines()
            .nth(1)
            .unwrap()
            .starts_with("note: no record of its answer was stored"),
        "{show}"
    );
    assert!(
        show.contains("note: analysed at the defaults, 99%, δ = 1%"),
        "{show}"
    );
    // The answer right after the notes.
    assert!(
        show.lines()
            .skip(1)
            .find(|l| !l.starts_with("note: ") && !l.starts_with("  "))
            .unwrap()
            .starts_with("thp vs 4k   wall_s  "),
        "{show}"
    );
    check(
        "compare.txt",
        &cmp.replace(&format!("({})", hostname()), "(HOST)"),
    );
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `bench`'s answer-first text on fixed observations: the headline at the largest size, one
/// table per workload metric, within 100 columns.
#[test]
fn bench_renders_exactly_as_before() {
    use hugelab::analyze::bench::{Observation, analyse};
    use hugelab::backing::Backing;
    use hugelab::metric::Metric;
    use hugelab::model::bench::{BenchResult, Plan};
    let backings = [
        Backing::Base,
        Backing::Thp,
        Backing::Hugetlb { page_size: 2 << 20 },
    ];
    let mut obs = Vec::new();
    for (metric, base) in [
        (Metric::TouchNs, 20.0),
        (Metric::ChaseNs, 200.0),
        (Metric::CommitGbs, 1.5),
    ] {
        for size in [64u64 << 10, 1 << 30] {
            for (b, backing) in backings.iter().enumerate() {
                for round in 0..12 {
                    let jitter = 1.0 + 0.01 * ((round * 7 + b * 3) % 5) as f64;
                    let effect = match (size, b, metric.higher_is_better()) {
                        (s, 0, _) if s > 1 << 20 => 1.0,
                        (s, _, false) if s > 1 << 20 => 0.75,
                        (s, _, true) if s > 1 << 20 => 3.0 + b as f64,
                        _ => 1.0,
                    };
                    obs.push(Observation {
                        metric,
                        size,
                        backing: *backing,
                        round,
                        value: base * effect * jitter,
                    });
                }
            }
        }
    }
    let cells = analyse(&obs, Backing::Base, 0.999);
    let r = BenchResult {
        schema: "hugelab.bench/1".into(),
        plan: Plan {
            workloads: vec![],
            sizes: vec![64 << 10, 1 << 30],
            backings: backings.to_vec(),
            rounds: 12,
            threads: 1,
            confidence: 0.999,
            seed: 7,
            iteration_ns: 20_000_000,
        },
        kernel: None,
        cpu: None,
        observations: obs,
        cells,
        evidence: vec![],
        skipped: vec![],
        settings_changed: vec![],
        notes: vec![],
        elapsed_s: 12.0,
        tlb: None,
        measured_tlb: None,
        why: None,
    };
    let text = hugelab::render::bench::render(&r);
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    check("bench.txt", &text);
}
