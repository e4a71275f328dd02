//! `hugelab run`: planning and block order with a fake runner; live runs whose evidence must
//! differ by arm; a flagged arm; SIGKILL durability; export/import round trips.

mod common;

use assert_cmd::Command;
use clap::Parser;
use hugelab::commands::run::{RunArgs, block_order, execute, plan};
use hugelab::store::Store;
use hugelab::workload::child::{Runner, TrialOutcome, TrialSpec};
use std::sync::atomic::AtomicBool;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: RunArgs,
}

fn args(extra: &[&str]) -> RunArgs {
    T::parse_from(std::iter::once("run").chain(extra.iter().copied())).a
}

/// Records what it was asked to run; arm `slow` takes twice as long; fails on request.
struct Fake {
    calls: Vec<TrialSpec>,
    fail_at: Option<usize>,
}

impl Runner for Fake {
    fn run(&mut self, spec: &TrialSpec, _stop: &AtomicBool) -> std::io::Result<TrialOutcome> {
        self.calls.push(spec.clone());
        let n = self.calls.len();
        let slow = spec.config.thp_disable;
        let jitter = 1.0 + 0.001 * (n % 7) as f64;
        Ok(TrialOutcome {
            wall_ns: ((if slow { 2e8 } else { 1e8 }) * jitter) as u64,
            exit_code: Some(if Some(n) == self.fail_at { 1 } else { 0 }),
            stdout: format!("score: {}\n", if slow { 50 } else { 100 }),
            ..TrialOutcome::default()
        })
    }
}

/// Plan `a` and execute it with a fake runner into a fresh store in `dir`.
fn fake_execute(
    a: &RunArgs,
    dir: &std::path::Path,
    fail_at: Option<usize>,
) -> (
    Fake,
    Vec<hugelab::store::TrialRow>,
    usize,
    String,
    Store,
    i64,
) {
    let (p, outputs) = plan(a).unwrap();
    let mut store = Store::open(&dir.join("r.db")).unwrap();
    let id = store
        .create_run(
            None,
            &a.command,
            None,
            "running",
            &serde_json::json!({}),
            &[],
        )
        .unwrap();
    let mut fake = Fake {
        calls: vec![],
        fail_at,
    };
    let (trials, blocks, reason, _) = execute(
        a,
        &p,
        &outputs,
        &mut fake,
        &mut store,
        id,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    (fake, trials, blocks, reason, store, id)
}

#[test]
fn block_order_is_a_seeded_permutation() {
    for b in 0..20 {
        let mut o = block_order(3, b, 42);
        assert_eq!(o, block_order(3, b, 42), "same seed, same order");
        o.sort();
        assert_eq!(o, vec![0, 1, 2]);
    }
    let orders: std::collections::BTreeSet<Vec<usize>> =
        (0..50).map(|b| block_order(3, b, 7)).collect();
    assert!(orders.len() >= 5, "orders vary across blocks: {orders:?}");
}

#[test]
fn planning_errors_name_the_fix() {
    let e = plan(&args(&["--arm", "a=", "--", "true"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least two arms"), "{e}");
    let e = plan(&args(&["--arm", "a=", "--arm", "a=", "--", "true"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("two arms are named"), "{e}");
    let e = plan(&args(&[
        "--preset",
        "malloc",
        "--baseline",
        "x",
        "--",
        "true",
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("arms: off, thp, hugetlb"), "{e}");
    let e = plan(&args(&[
        "--preset", "malloc", "--metric", "x=[0-9]+", "--", "true",
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("capture group"), "{e}");
    let (p, m) = plan(&args(&[
        "--preset",
        "jvm",
        "--baseline",
        "thp",
        "--metric",
        "ops=([0-9.]+) ops,higher",
        "--",
        "java",
    ]))
    .unwrap();
    assert_eq!((p.baseline, p.metrics.len(), m.len()), (1, 2, 1));
}

#[test]
fn fake_runner_interleaves_stores_and_stops_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--blocks",
        "12",
        "--warmup",
        "1",
        "--seed",
        "3",
        "--metric",
        "score=score: ([0-9]+),higher",
        "--",
        "prog",
        "x",
    ]);
    let (fake, trials, blocks, reason, store, id) = fake_execute(&a, dir.path(), None);
    assert_eq!(fake.calls.len(), 2 + 24, "2 warm-up + 12 blocks × 2 arms");
    assert_eq!((trials.len(), blocks), (24, 12), "{reason}");
    assert_eq!(fake.calls[0].argv, vec!["prog", "x"]);
    // Every block holds each arm once; the per-process configuration reached the runner.
    for b in 0..12 {
        let mut arms: Vec<i64> = trials
            .iter()
            .filter(|t| t.block == b)
            .map(|t| t.arm_idx)
            .collect();
        arms.sort();
        assert_eq!(arms, vec![0, 1]);
    }
    assert_eq!(
        fake.calls.iter().filter(|c| c.config.thp_disable).count(),
        13
    );
    assert_eq!(trials[0].metrics["score"] as i64 % 50, 0);
    let (_, _, stored) = store.load(id).unwrap();
    assert_eq!(stored.len(), 24, "every trial was written as it finished");

    // The fifth call fails (the third measured trial): without --keep-going the run stops there.
    let dir2 = tempfile::tempdir().unwrap();
    let (_, trials, _, reason, _, _) = fake_execute(&a, dir2.path(), Some(5));
    assert_eq!(trials.len(), 3);
    assert!(!trials[2].ok && reason.contains("--keep-going"), "{reason}");
}

fn python_alloc() -> Vec<&'static str> {
    vec![
        "python3",
        "-c",
        "import time; b = bytearray(256 << 20); time.sleep(0.3)",
    ]
}

fn run_json(extra: &[&str], cmd: &[&str], db: &std::path::Path) -> serde_json::Value {
    let db = db.display().to_string();
    let mut all = vec!["run"];
    all.extend_from_slice(extra);
    all.extend(["--json", "--db", &db, "--"]);
    all.extend_from_slice(cmd);
    common::hugelab_json(all)
}

fn coverage(v: &serde_json::Value, arm: &str) -> f64 {
    v["report"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == arm)
        .unwrap()["mean_coverage_at_peak"]
        .as_f64()
        .unwrap()
}

#[test]
fn malloc_thp_vs_process_thp_off_shows_in_the_evidence() {
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            "--arm",
            "off=process.thp=off",
            "--arm",
            "thp=malloc=thp",
            "--blocks",
            "3",
            "--warmup",
            "0",
        ],
        &python_alloc(),
        &dir.path().join("r.db"),
    );
    assert!(coverage(&v, "off") < 0.05, "{}", v["report"]["evidence"]);
    assert!(
        coverage(&v, "thp") > 0.5,
        "glibc.malloc.hugetlb=1 madvises its mmap chunks: {}",
        v["report"]["evidence"]
    );
    assert_eq!(v["blocks_done"], 3);
}

#[test]
fn malloc_hugetlb_with_an_empty_pool_is_flagged() {
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            "--arm",
            "base=",
            "--arm",
            "hugetlb=malloc=hugetlb",
            "--blocks",
            "2",
            "--warmup",
            "0",
        ],
        &python_alloc(),
        &dir.path().join("r.db"),
    );
    let ev = v["report"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == "hugetlb")
        .unwrap()
        .clone();
    assert_eq!(ev["flagged"], 2, "{ev}");
    assert!(
        ev["first_flag"]
            .as_str()
            .unwrap()
            .contains("asked for huge pages")
    );
}

#[test]
fn thp_never_vs_always_as_root() {
    require_root!();
    let _lock = common::knob_lock();
    let before = common::selected("/sys/kernel/mm/transparent_hugepage/enabled");
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            "--arm",
            "never=thp=never",
            "--arm",
            "always=thp=always",
            "--blocks",
            "3",
            "--warmup",
            "0",
        ],
        &python_alloc(),
        &dir.path().join("r.db"),
    );
    assert!(
        coverage(&v, "never") < 0.05 && coverage(&v, "always") > 0.5,
        "{}",
        v["report"]["evidence"]
    );
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        before
    );
}

#[test]
fn a_a_run_is_never_faster_or_slower() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "15",
            "--warmup",
            "1",
            "--confidence",
            "0.9999",
        ],
        &["true"],
        &dir.path().join("r.db"),
    );
    let verdict = v["report"]["metrics"][0]["contrasts"][0][1]["verdict"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        verdict == "EQUIVALENT" || verdict == "INCONCLUSIVE",
        "{verdict}"
    );
}

#[test]
fn sigkill_mid_run_keeps_the_database_and_settings_are_restored() {
    require_root!();
    let _lock = common::knob_lock();
    let before = common::selected("/sys/kernel/mm/transparent_hugepage/enabled");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args([
            "run",
            "--arm",
            "never=thp=never",
            "--arm",
            "always=thp=always",
            "--blocks",
            "500",
            "--warmup",
            "0",
            "--db",
        ])
        .arg(&db)
        .args(["--", "sleep", "0.05"])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let n = Store::open(&db)
            .ok()
            .and_then(|s| s.load(1).ok())
            .map_or(0, |(_, _, t)| t.len());
        if n >= 5 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (meta, arms, trials) = Store::open(&db).unwrap().load(1).unwrap();
    assert_eq!(meta.status, "running", "killed runs stay marked as running");
    assert_eq!(arms.len(), 2);
    assert!(trials.len() >= 5 && trials.iter().all(|t| t.metrics.contains_key("wall_s")));
    // The next hugelab command restores THP first.
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "--db"])
        .arg(&db)
        .arg("list")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        before
    );
    assert!(!std::path::Path::new("/run/hugelab/journal.json").exists());
}

#[test]
fn export_import_compare_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    run_json(
        &[
            "--arm",
            "a=",
            "--arm",
            "b=env.X=1",
            "--blocks",
            "4",
            "--warmup",
            "0",
        ],
        &["true"],
        &db,
    );
    let export = dir.path().join("e.json");
    let st = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "--db"])
        .arg(&db)
        .args(["export", "1", "-o"])
        .arg(&export)
        .output()
        .unwrap();
    assert!(st.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    for field in [
        "command",
        "mean",
        "stddev",
        "median",
        "user",
        "system",
        "min",
        "max",
        "times",
        "exit_codes",
    ] {
        assert!(
            v["results"][0].get(field).is_some(),
            "hyperfine field {field} missing"
        );
    }
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["import", "--db"])
        .arg(&db)
        .arg(&export)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("as run 2"));
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["compare", "--json", "--db"])
        .arg(&db)
        .args(["1", "2"])
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(
            r["median_a"], r["median_b"],
            "an import of an export is the same data"
        );
    }
    // A hyperfine file imports as-is.
    let hf = dir.path().join("hf.json");
    std::fs::write(&hf, r#"{"results":[{"command":"sleep 0.1","times":[0.101,0.102,0.1],"exit_codes":[0,0,0]},{"command":"sleep 0.2","times":[0.2,0.21,0.2],"exit_codes":[0,0,0]}]}"#).unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["import", "--db"])
        .arg(&db)
        .arg(&hf)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2 commands, 6 trials"));
}

#[test]
fn a_missing_command_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--arm", "a=", "--arm", "b=", "--db"])
        .arg(dir.path().join("r.db"))
        .args(["--", "no-such-program-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("cannot start \"no-such-program-xyz\"") && e.contains("not found"),
        "{e}"
    );
    // System-wide arms without root point to the per-process arms.
    if !common::is_root() {
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(["run", "--preset", "thp", "--db"])
            .arg(dir.path().join("r.db"))
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("process.thp=off"));
    }
}

#[test]
fn sequential_stops_when_every_contrast_is_settled() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--blocks",
        "200",
        "--warmup",
        "0",
        "--sequential",
        "--",
        "prog",
    ]);
    let (_, _, blocks, reason, _, _) = fake_execute(&a, dir.path(), None);
    assert!(reason.starts_with("sequential"), "{reason}");
    assert!(
        (20..60).contains(&blocks),
        "a 2× difference settles soon after the confidence sequence starts: {blocks}"
    );
}

#[test]
fn user_drops_privileges() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        &[
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--user",
            "nobody",
            "--metric",
            "uid=([0-9]+)",
        ],
        &["id", "-u"],
        &dir.path().join("r.db"),
    );
    let med = v["report"]["metrics"][1]["arms"][0]["summary"]["median"]
        .as_f64()
        .unwrap();
    assert_eq!(med, 65534.0);
}

#[test]
fn timeout_prepare_and_cache_options() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    let prepare = format!("echo x >> {}", marks.display());
    let mut extra = vec![
        "--arm",
        "a=",
        "--arm",
        "b=",
        "--blocks",
        "2",
        "--warmup",
        "1",
        "--timeout",
        "300ms",
        "--keep-going",
        "--prepare",
        &prepare,
    ];
    if common::is_root() {
        extra.extend(["--drop-caches", "--compact"]);
    }
    let t = std::time::Instant::now();
    let v = run_json(&extra, &["sleep", "5"], &dir.path().join("r.db"));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(4),
        "timed-out trials were killed"
    );
    assert_eq!(
        std::fs::read_to_string(&marks).unwrap().lines().count(),
        6,
        "--prepare ran before every trial, warm-ups included"
    );
    let ev = &v["report"]["evidence"];
    assert_eq!(ev[0]["failed"], 2);
    assert_eq!(ev[1]["failed"], 2);
    let (_, _, trials) = Store::open(&dir.path().join("r.db"))
        .unwrap()
        .load(1)
        .unwrap();
    assert!(trials.iter().all(|t| t.evidence["timed_out"] == true));
}

#[test]
fn system_arms_without_root_point_to_per_process_arms() {
    require_root!(); // to become `nobody`
    let out = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["run", "--preset", "thp", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("needs root") && e.contains("process.thp=off"),
        "{e}"
    );
}
