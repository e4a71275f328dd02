//! `hugelab report`: the charts plot the stored values, the HTML and Markdown carry the
//! terminal's cells, and a real headless Chromium renders the file.

use crate::common::chromium::{chromium, headless};
use assert_cmd::Command;
use hugelab::store::{ArmRow, Store, TrialRow};
use hugelab::stored_runs::view;
use std::path::Path;

/// `hugelab report ID --db DB -o OUT`, which must succeed.
fn report_to(db: &Path, id: i64, out: &Path) {
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["report", &id.to_string(), "--db"])
        .arg(db)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
}

/// A stored two-arm run with known values: arm b is 10% faster in every block but one.
fn stored_run(db: &Path) -> i64 {
    stored_run_on(db, 1.0)
}

/// The same run on a machine `machine` times slower (a compare of a run with itself is refused).
fn stored_run_on(db: &Path, machine: f64) -> i64 {
    let mut s = Store::open(db).unwrap();
    let arms = vec![
        ArmRow {
            idx: 0,
            name: "4k".into(),
            spec: "process.thp=off".into(),
        },
        ArmRow {
            idx: 1,
            name: "thp".into(),
            spec: "malloc=thp".into(),
        },
    ];
    let plan = serde_json::json!({"baseline": 0, "metrics": [{"name": "wall_s", "better": "lower"}],
        "system": hugelab::probe::status::probe(&hugelab::probe::Root::system()).ok()});
    let id = s
        .create_run(
            Some("t"),
            &["prog".into()],
            Some("6.18"),
            "running",
            &serde_json::from_value(plan.clone()).unwrap(),
            &arms,
        )
        .unwrap();
    let mut seq = 0;
    for b in 0..20i64 {
        for a in [0i64, 1] {
            let base = 1.0 + 0.01 * ((b * 7) % 5) as f64;
            let v = machine
                * if a == 0 {
                    base
                } else {
                    base * if b == 3 { 1.02 } else { 0.9 }
                };
            s.add_trial(id, &TrialRow {
                block: b,
                arm_idx: a,
                seq,
                ok: true,
                flagged: (a == 1 && b == 5).then(|| "no huge pages".to_string()),
                metrics: [("wall_s".to_string(), v)].into(),
                evidence: serde_json::json!({
                    "memory": {"coverage_at_peak": if a == 1 { 0.75 } else { 0.0 }},
                    // `run --trace compaction`: arm thp stalls 2 × 8 µs and 1 × 1 ms per trial.
                    "trace": {"latencies": if a == 1 {
                        serde_json::json!([{"kind": "compaction", "hist": {"total_ns": 1_016_000u64, "log2": [[8192, 2], [1048576, 1]]}}])
                    } else {
                        serde_json::json!([])
                    }}
                }).into(),
            }).unwrap();
            seq += 1;
        }
    }
    s.finish_run::<()>(id, "complete", None).unwrap();
    id
}

#[test]
fn run_charts_plot_the_stored_values_and_tables_match_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = stored_run(&db);
    let store = Store::open(&db).unwrap();
    let (meta, arms, trials) = store.load(id).unwrap();
    let v = view(&store, meta, &arms, &trials, &Default::default()).unwrap();
    // Distributions and progression: every stored trial, with its arm, order and flag.
    let s = &v.series[0];
    assert_eq!(s.points.len(), trials.len());
    for (p, t) in s.points.iter().zip(&trials) {
        assert_eq!(
            (p.value, p.seq, p.arm as i64),
            (t.metrics["wall_s"], t.seq, t.arm_idx)
        );
        assert_eq!(p.flagged, t.flagged.is_some());
    }
    // The forest plot draws the stored contrast, unchanged.
    let report = v.report().unwrap();
    let rows = hugelab::render::html::forest_rows(report, 0);
    let c = report.metrics[0].contrasts[0].1.as_ref().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].point, rows[0].lo, rows[0].hi),
        (c.percent.point, c.percent.lo, c.percent.hi)
    );
    assert!(
        rows[0].point < -5.0 && rows[0].verdict.starts_with("FASTER"),
        "{rows:?}"
    );

    // HTML and Markdown carry exactly the terminal's cells.
    let html = hugelab::render::html::runs(std::slice::from_ref(&v));
    let md = hugelab::render::markdown::runs(std::slice::from_ref(&v));
    for g in hugelab::render::run::report_grids(report) {
        for row in &g.rows {
            for cell in row {
                assert!(
                    html.contains(&format!("<td>{}</td>", hugelab::render::html::esc(cell))),
                    "{cell}"
                );
                assert!(
                    md.contains(&format!("| {cell} ")) || md.contains(&format!(" {cell} |")),
                    "{cell}"
                );
            }
        }
        assert!(hugelab::render::run::render_report(report).contains(&g.rows[0][0]));
    }
    // The answer first, the same lines as the terminal's `results show`.
    let record = v.record.as_ref().unwrap();
    let first = hugelab::render::run::render_stored(record, &[], &v.said);
    let answer = first.lines().next().unwrap();
    assert!(
        answer.starts_with("thp vs 4k") && answer.contains("FASTER"),
        "{first}"
    );
    assert!(html.contains(&hugelab::render::html::esc(answer)) && md.contains(answer));
    let h2 = html.find("<h2>").unwrap();
    assert!(html[h2..].find("class=\"answer\"").unwrap() < html[h2..].find("<svg").unwrap());
    // The answer drawn first: every contrast chart (the primary metric's first), then the
    // trials, primary metric first; the design and notes after the charts.
    let forests: Vec<usize> = html
        .match_indices("each arm's change vs")
        .map(|(i, _)| i)
        .collect();
    let trials = html.find("every successful trial per arm").unwrap();
    assert!(
        !forests.is_empty() && forests.iter().all(|&f| f < trials),
        "{html}"
    );
    let primary = &report.metrics[0].metric.name;
    assert!(
        html[forests[0].saturating_sub(200)..forests[0]].contains(primary.as_str()),
        "the first contrast chart is the primary metric's"
    );
    if let Some(d) = html.find("class=\"details\"") {
        assert!(d > html.rfind("<svg").unwrap(), "details after the charts");
    }
    // The stall histogram of `run --trace`, per trial, for both traced arms.
    assert_eq!(v.stalls.len(), 1);
    let thp = &v.stalls[0].arms[1];
    assert_eq!(
        (thp.trials, thp.buckets.clone()),
        (20, vec![(8192, 40), (1048576, 20)])
    );
    assert!(
        html.contains("run --trace, compaction: latency histogram"),
        "{html}"
    );
    assert!(html.contains("thp 1.0 ms per trial") && html.contains("4k 0.0 ms per trial"));
    assert!(md.contains("| 8.19 µs | 0.00 | 2.00 |"), "{md}");
    // Forest, distribution, progression, stalls, coverage: five charts; no script, nothing
    // remote.
    assert_eq!(html.matches("<svg").count(), 5, "one chart of each kind");
    assert!(!html.contains("<script"));
    // Nothing loaded: the only URLs are the SVG namespace names, which are never fetched.
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(html.contains("system when the run started") && md.contains("THP enabled"));
    assert!(!md.contains("<svg"));
}

#[test]
fn a_thousand_trial_report_stays_under_a_megabyte() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut s = Store::open(&db).unwrap();
    let arms: Vec<ArmRow> = (0..2)
        .map(|i| ArmRow {
            idx: i,
            name: format!("arm{i}"),
            spec: String::new(),
        })
        .collect();
    let plan = serde_json::json!({"baseline": 0});
    let id = s
        .create_run(
            None,
            &["prog".into()],
            None,
            "running",
            &serde_json::from_value(plan.clone()).unwrap(),
            &arms,
        )
        .unwrap();
    for seq in 0..1000i64 {
        s.add_trial(
            id,
            &TrialRow {
                block: seq / 2,
                arm_idx: seq % 2,
                seq,
                ok: true,
                flagged: None,
                metrics: [("wall_s".to_string(), 1.0 + (seq % 17) as f64 * 0.003)].into(),
                evidence: serde_json::json!({}).into(),
            },
        )
        .unwrap();
    }
    let out = dir.path().join("big.html");
    report_to(&db, id, &out);
    let n = std::fs::metadata(&out).unwrap().len();
    assert!(n < 1 << 20, "{n} bytes");
}

/// A stored bench: 4k and thp over three sizes, eight rounds, the largest THP region half huge.
fn stored_bench(db: &Path) -> i64 {
    use hugelab::backing::Backing;
    use hugelab::metric::Metric;
    use hugelab::model::bench::{BenchResult, CellEvidence, Coverage, Observation, Plan};
    use hugelab::workload::Workload;
    let sizes = [64u64 << 10, 16 << 20, 1 << 30];
    let backings = [Backing::Base, Backing::Thp];
    let plan = Plan {
        workloads: vec![Workload::Touch],
        sizes: sizes.to_vec(),
        backings: backings.to_vec(),
        rounds: 8,
        threads: 1,
        confidence: 0.999,
        seed: 7,
        iteration_ns: 20_000_000,
    };
    let mut obs = Vec::new();
    for round in 0..8 {
        for (zi, &size) in sizes.iter().enumerate() {
            for (a, &backing) in backings.iter().enumerate() {
                let jitter = 0.01 * ((round * 7 + a * 3 + zi) % 5) as f64;
                let value = (zi as f64 + 1.0) * if a == 1 { 0.5 } else { 1.0 } + jitter;
                obs.push(Observation {
                    metric: Metric::TouchNs,
                    size,
                    backing,
                    round,
                    value,
                });
            }
        }
    }
    let evidence: Vec<CellEvidence> = sizes
        .iter()
        .map(|&size| {
            let half = size == 1 << 30;
            CellEvidence {
                workload: Workload::Touch,
                size,
                backing: Backing::Thp,
                coverage: Coverage {
                    fraction: Some(if half { 0.5 } else { 1.0 }),
                    source: "smaps".into(),
                    degraded: half,
                    note: None,
                },
                region: Default::default(),
                kernel_counters: Default::default(),
                per_op: Default::default(),
            }
        })
        .collect();
    let (cells, tlb) = hugelab::analyze::bench::decide(&obs, &plan, None, 0.999);
    let mut saver = hugelab::bench::StoredBench::start(&plan, None, None, Some(db)).unwrap();
    saver.add(&obs, &evidence).unwrap();
    let r = BenchResult {
        schema: hugelab::model::bench::SCHEMA.into(),
        plan,
        kernel: None,
        cpu: None,
        observations: obs,
        cells,
        evidence,
        skipped: vec![],
        settings_changed: vec![],
        notes: vec![],
        elapsed_s: 3.0,
        tlb,
        measured_tlb: None,
        why: None,
    };
    saver.finish("complete", Some(&r)).unwrap();
    1
}

/// A stored bench's report draws the bench's own cells: its scores and ratios, its headline,
/// its coverage marks — never a re-analysis of its rounds as a run's.
#[test]
fn bench_report_has_lines_per_backing_over_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = stored_bench(&db);
    let s = Store::open(&db).unwrap();
    let (meta, arms, trials) = s.load(id).unwrap();
    let v = view(&s, meta, &arms, &trials, &Default::default()).unwrap();
    let bench = v.bench.clone().expect("the bench's whole result");
    assert_eq!(v.curves.len(), 1);
    let c = &v.curves[0];
    assert_eq!((c.metric.as_str(), c.unit.as_str()), ("touch", "ns/op"));
    let thp = c.lines.iter().find(|l| l.backing == "thp").unwrap();
    assert_eq!(
        thp.points.iter().map(|p| p.size).collect::<Vec<_>>(),
        vec![64 << 10, 16 << 20, 1 << 30]
    );
    // The plotted score and ratio are the bench's cells, unchanged.
    let cell = bench
        .cells
        .iter()
        .find(|c| c.size == 16 << 20 && c.backing.to_string() == "thp")
        .unwrap();
    let p = &thp.points[1];
    assert_eq!(p.score, cell.score);
    assert_eq!(p.hi, cell.error.map(|e| cell.score + e));
    let ratio = cell.vs_baseline.unwrap();
    assert!((p.vs_baseline.unwrap().point - (ratio.point - 1.0) * 100.0).abs() < 1e-9);
    assert!(thp.points[2].degraded && !thp.points[1].degraded);
    let out = dir.path().join("b.html");
    report_to(&db, id, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(html.matches("<svg").count(), 2, "score and ratio vs size");
    assert!(html.contains("touch (ns/op) by region size"));
    // The headline and the same cells as the terminal's, in HTML and Markdown.
    let md = hugelab::render::markdown::runs(std::slice::from_ref(&v));
    for line in hugelab::render::bench::answer_lines(&bench) {
        assert!(md.contains(&line), "{line}\n{md}");
        assert!(html.contains(&hugelab::render::html::esc(&line)), "{line}");
    }
    for g in hugelab::render::bench::grids(&bench) {
        for row in &g.rows {
            for cell in row {
                assert!(md.contains(&format!("| {cell} |")), "{cell}\n{md}");
                assert!(
                    html.contains(&format!("<td>{}</td>", hugelab::render::html::esc(cell))),
                    "{cell}"
                );
            }
        }
    }
    assert!(md.contains("50.0% DEGRADED"), "{md}");
}

#[test]
fn compare_report_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let a = stored_run(&db);
    let b = stored_run_on(&db, 1.03);
    let out = dir.path().join("c.md");
    Command::cargo_bin("hugelab")
        .unwrap()
        .args([
            "report",
            "--compare",
            &a.to_string(),
            &b.to_string(),
            "--format",
            "md",
            "--db",
        ])
        .arg(&db)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(
        md.contains("| 4k | 20, 20 |") && md.contains("| thp | 20, 20 |"),
        "{md}"
    );
    // Unknown run: a clear error naming it, exit 1; bad level: exit 2.
    let o = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["report", "99", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no run 99"));
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["report", "1", "--confidence", "1.5", "--db"])
        .arg(&db)
        .assert()
        .code(2);
}

#[test]
#[cfg_attr(missing_chromium, ignore = "needs Chromium (apt-get install chromium)")]
fn a_real_browser_renders_the_report() {
    let bin =
        chromium().expect("no Chromium on this machine (apt-get install chromium; .ci/run does)");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = stored_run(&db);
    let html = dir.path().join("report.html");
    report_to(&db, id, &html);
    let url = format!("file://{}", html.display());
    // The DOM as the browser built it: every chart parsed as SVG.
    let dom = headless(bin, &dir.path().join("p1"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        dom_text.matches("<svg").count(),
        5,
        "{}",
        &dom_text[..dom_text.len().min(500)]
    );
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(
        !log.lines()
            .any(|l| l.contains("CONSOLE") && l.to_lowercase().contains("error")),
        "console errors: {log}"
    );
    // A screenshot, and it is not blank: many distinct colours (charts, text, table lines).
    let png = dir.path().join("shot.png");
    let shot = headless(bin, &dir.path().join("p2"))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,2400")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    assert!((info.width, info.height) == (1200, 2400), "{info:?}");
    assert!(
        colours.len() > 50,
        "only {} colours: a blank page",
        colours.len()
    );
    let non_white = buf[..info.buffer_size()]
        .chunks(px)
        .filter(|c| c[..3] != [255, 255, 255])
        .count();
    assert!(non_white > 10_000, "{non_white} non-white pixels");
}

#[test]
fn a_cost_is_drawn_in_its_own_unit_and_words() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut s = Store::open(&db).unwrap();
    let arms = vec![
        ArmRow {
            idx: 0,
            name: "never".into(),
            spec: "thp=never".into(),
        },
        ArmRow {
            idx: 1,
            name: "always".into(),
            spec: "thp=always".into(),
        },
    ];
    let plan = serde_json::json!({"baseline": 0, "metrics": [
        {"name": "wall_s", "better": "lower"},
        {"name": "peak_mem_bytes", "better": "lower", "cost": true}]});
    let id = s
        .create_run(
            Some("t"),
            &["prog".into()],
            Some("6.18"),
            "running",
            &serde_json::from_value(plan.clone()).unwrap(),
            &arms,
        )
        .unwrap();
    let mut seq = 0;
    for b in 0..12i64 {
        for a in [0i64, 1] {
            // 65.6 MiB against 1.00 GiB in every block: a sparse heap under THP always.
            let mem = if a == 0 {
                65.6 * 1048576.0
            } else {
                1073741824.0
            };
            let wall = 1.0 + 0.01 * ((b * 7 + a * 3) % 5) as f64;
            s.add_trial(
                id,
                &TrialRow {
                    block: b,
                    arm_idx: a,
                    seq,
                    ok: true,
                    flagged: None,
                    metrics: [
                        ("wall_s".to_string(), wall),
                        ("peak_mem_bytes".to_string(), mem),
                    ]
                    .into(),
                    evidence: serde_json::json!({}).into(),
                },
            )
            .unwrap();
            seq += 1;
        }
    }
    s.finish_run::<()>(id, "complete", None).unwrap();
    let store = Store::open(&db).unwrap();
    let (meta, arm_rows, trials) = store.load(id).unwrap();
    let v = view(&store, meta, &arm_rows, &trials, &Default::default()).unwrap();
    let report = v.report().unwrap();
    let mi = report
        .metrics
        .iter()
        .position(|m| m.metric.name == "peak_mem_bytes")
        .expect("the memory contrast");
    let rows = hugelab::render::html::forest_rows(report, mi);
    assert_eq!(rows[0].verdict, "MORE", "{rows:?}");
    let html = hugelab::render::html::runs(std::slice::from_ref(&v));
    assert!(html.contains("peak memory vs baseline, % (right: MORE, left: LESS)"));
    assert!(
        html.contains("peak_mem_bytes: every successful trial per arm (GiB;"),
        "the trials in GiB, not bytes"
    );
    assert!(!html.contains("1000000000"), "no axis of raw bytes");
}
