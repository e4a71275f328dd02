//! `hugelab run`: planning and block order with a fake runner; live runs whose evidence must
//! differ by arm; a flagged arm; SIGKILL durability; export/import round trips.

mod common;

use assert_cmd::Command;
use clap::Parser;
use hugelab::analyze::verdict::{Design, Verdict};
use hugelab::commands::run::{
    Context, Executed, Plan, RunArgs, block_order, execute, plan, plan_as,
};
use hugelab::control::{Guard, SysfsSettings};
use hugelab::probe::Root;
use hugelab::store::Store;
use hugelab::workload::child::{Runner, TrialHooks, TrialOutcome, TrialSpec};
use std::cell::Cell;
use std::path::Path;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: RunArgs,
}

fn args(extra: &[&str]) -> RunArgs {
    T::parse_from(std::iter::once("run").chain(extra.iter().copied())).a
}

/// Records what it was asked to run; arm `slow` (process.thp=off) takes twice as long and
/// prints a lower score; fails on request; with `sysfs`, records the THP mode it ran under.
struct Fake {
    calls: Vec<TrialSpec>,
    fail_at: Option<usize>,
    sysfs: Option<std::path::PathBuf>,
    thp_seen: Vec<String>,
}

impl Fake {
    fn new(fail_at: Option<usize>) -> Fake {
        Fake {
            calls: vec![],
            fail_at,
            sysfs: None,
            thp_seen: vec![],
        }
    }
}

impl Runner for Fake {
    fn run(
        &mut self,
        spec: &TrialSpec,
        _hooks: &mut dyn TrialHooks,
    ) -> std::io::Result<TrialOutcome> {
        self.calls.push(spec.clone());
        if let Some(d) = &self.sysfs {
            let t = std::fs::read_to_string(d.join("sys/kernel/mm/transparent_hugepage/enabled"))?;
            self.thp_seen
                .push(hugelab::probe::kv::parse_selector(&t).unwrap().selected);
        }
        let n = self.calls.len();
        let slow = spec.config.thp_disable || self.thp_seen.last().is_some_and(|m| m == "never");
        let jitter = 1.0 + 0.001 * (n % 7) as f64;
        Ok(TrialOutcome {
            wall_ns: ((if slow { 2e8 } else { 1e8 }) * jitter) as u64,
            exit_code: Some(if Some(n) == self.fail_at { 1 } else { 0 }),
            stdout: format!("score: {}\n", if slow { 50 } else { 100 }),
            ..TrialOutcome::default()
        })
    }
}

fn store_in(dir: &Path, a: &RunArgs) -> (Store, i64) {
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
    (store, id)
}

/// Execute `p` with `fake` into a fresh store in `dir`; `stop_after` calls simulate Ctrl-C.
fn execute_with(
    a: &RunArgs,
    p: &Plan,
    outputs: &[hugelab::commands::run::OutputMetric],
    fake: &mut Fake,
    dir: &Path,
    stop_after: Option<usize>,
) -> (Executed, Store, i64) {
    let (mut store, id) = store_in(dir, a);
    let calls = Cell::new(0usize);
    let sysfs = fake.sysfs.clone();
    let stop = || {
        calls.set(calls.get() + 1);
        stop_after.is_some_and(|n| calls.get() >= n)
    };
    let mut ctx = Context {
        runner: fake,
        store: &mut store,
        run_id: id,
        root: Root::new(dir),
        cpu: Default::default(),
        trace: None,
        guard: Box::new(move || {
            let root = Root::new(sysfs.clone().expect("a system arm needs the fake sysfs"));
            Ok(Guard::new(
                Box::new(common::FakeKernel(SysfsSettings::new(root.clone()))),
                root.clone(),
                root.path("/run/journal.json"),
            )?)
        }),
        stop: &stop,
        progress: &mut hugelab::render::progress::Silent,
    };
    let x = execute(a, p, outputs, &mut ctx).unwrap();
    drop(ctx);
    (x, store, id)
}

/// Plan `a` and execute it with a fake runner into a fresh store in `dir`.
fn fake_execute(
    a: &RunArgs,
    dir: &Path,
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
    let mut fake = Fake::new(fail_at);
    let (x, store, id) = execute_with(a, &p, &outputs, &mut fake, dir, None);
    (fake, x.trials, x.blocks_done, x.stop_reason, store, id)
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
fn calibrate_runs_the_command_against_itself() {
    // With no arm and with one arm: two identical arms, A1 and A2.
    for extra in [&[][..], &["--arm", "x=env.FOO=1"][..]] {
        let mut v = vec!["--calibrate", "1m"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        let (p, _) = plan(&args(&v)).unwrap();
        assert!(p.calibrate);
        let names: Vec<&str> = p.arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["A1", "A2"]);
        assert_eq!(p.arms[0].spec, p.arms[1].spec);
    }
    // End to end, for a few seconds: the noise floor table comes out.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--calibrate", "3s", "--warmup", "0", "--db"])
        .arg(dir.path().join("c.db"))
        .args(["--", "sleep", "0.01"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("noise floor of this machine"), "{text}");
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
    for t in &trials {
        let want = if t.arm_idx == 1 { 50.0 } else { 100.0 };
        assert_eq!(t.metrics["score"], want, "each arm's own output was parsed");
    }
    let (_, _, stored) = store.load(id).unwrap();
    assert_eq!(stored.len(), 24, "every trial was written as it finished");

    // The fifth call fails (the third measured trial): without --keep-going the run stops there.
    let dir2 = tempfile::tempdir().unwrap();
    let (_, trials, _, reason, _, _) = fake_execute(&a, dir2.path(), Some(5));
    assert_eq!(trials.len(), 3);
    assert!(!trials[2].ok && reason.contains("--keep-going"), "{reason}");
}

#[test]
fn first_ctrl_c_keeps_the_trial_in_flight_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--blocks",
        "10",
        "--warmup",
        "0",
        "--",
        "prog",
    ]);
    let (p, o) = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    // Ctrl-C arrives while the 5th trial runs: the stop is seen after it finishes.
    let (x, store, id) = execute_with(&a, &p, &o, &mut fake, dir.path(), Some(5));
    assert_eq!(fake.calls.len(), 5, "nothing new started after the stop");
    assert_eq!(x.trials.len(), 5, "the trial in flight was kept");
    assert!(
        x.interrupted && x.stop_reason.contains("kept"),
        "{}",
        x.stop_reason
    );
    assert_eq!(x.blocks_done, 2);
    assert_eq!(store.load(id).unwrap().2.len(), 5, "and stored");
}

#[test]
fn system_arms_switch_through_the_guard_on_a_fake_sysfs() {
    let dir = tempfile::tempdir().unwrap();
    common::fake_sysfs(dir.path());
    let a = args(&[
        "--arm", "never=", "--arm", "always=", "--blocks", "6", "--warmup", "0", "--seed", "9",
        "--", "prog",
    ]);
    let (mut p, o) = plan(&a).unwrap();
    p.arms = vec![
        hugelab::backing::arm::parse_arm("never=thp=never").unwrap(),
        hugelab::backing::arm::parse_arm("always=thp=always").unwrap(),
    ];
    let mut fake = Fake::new(None);
    fake.sysfs = Some(dir.path().to_path_buf());
    let (x, _, _) = execute_with(&a, &p, &o, &mut fake, dir.path(), None);
    // Every trial ran under its own arm's mode, in the shuffled block order.
    for (t, seen) in x.trials.iter().zip(&fake.thp_seen) {
        assert_eq!(seen, if t.arm_idx == 0 { "never" } else { "always" });
    }
    assert_eq!(fake.thp_seen.len(), 12);
    // The guard restored the machine's own value when the run ended.
    let t = std::fs::read_to_string(
        dir.path()
            .join("sys/kernel/mm/transparent_hugepage/enabled"),
    )
    .unwrap();
    assert!(t.contains("[madvise]"), "{t}");
    assert!(!dir.path().join("run/journal.json").exists());
}

#[test]
fn sequential_stops_by_the_rule_it_reports() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--arm",
        "same=",
        "--sequential",
        "--warmup",
        "0",
        "--",
        "prog",
    ]);
    let (p, o) = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    let (x, _, _) = execute_with(&a, &p, &o, &mut fake, dir.path(), None);
    // Deterministic arms settle at the first look the confidence sequence allows.
    assert_eq!(
        x.blocks_done,
        hugelab::analyze::sequential::ConfidenceSequence::MIN_BLOCKS
    );
    assert!(
        x.stop_reason.contains("confidence sequence") && x.stop_reason.contains("Bonferroni"),
        "{}",
        x.stop_reason
    );
    let data: Vec<_> = x
        .trials
        .iter()
        .map(hugelab::commands::run::trial_data)
        .collect();
    let names: Vec<String> = p.arms.iter().map(|x| x.name.clone()).collect();
    let r = hugelab::analyze::experiment::analyse(
        &names,
        0,
        &data,
        &p.metrics,
        p.effect,
        p.confidence,
        &p.design,
    );
    for (_, c) in &r.metrics[0].contrasts {
        let c = c.as_ref().unwrap();
        assert!((c.level - 0.995).abs() < 1e-12, "α split over 2 contrasts");
        assert!(c.method.contains("confidence sequence"));
        assert_ne!(c.verdict, Verdict::Inconclusive);
    }
}

#[test]
fn group_sequential_looks_need_a_maximum() {
    let e = plan(&args(&[
        "--arm", "a=", "--arm", "b=", "--looks", "4", "--", "x",
    ]))
    .unwrap_err();
    assert!(e.to_string().contains("--looks needs --blocks"), "{e}");
    let (p, _) = plan(&args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--looks",
        "4",
        "--blocks",
        "40",
        "--",
        "x",
    ]))
    .unwrap();
    assert_eq!(
        p.design,
        Design::GroupSequential {
            looks: 4,
            max_blocks: 40
        }
    );
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--looks",
        "4",
        "--blocks",
        "40",
        "--warmup",
        "0",
        "--",
        "x",
    ]);
    let (p, o) = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    let (x, _, _) = execute_with(&a, &p, &o, &mut fake, dir.path(), None);
    // Look 1 (10 blocks) has boundary |Z| ≥ 5.8: a repeated interval at that level needs more
    // than 10 blocks, so even a 2× effect waits for look 2 (20 blocks).
    let g = hugelab::analyze::sequential::GroupSequential::new(4, 40, 0.01);
    assert!(g.bounds[0] > 5.0, "{:?}", g.bounds);
    assert_eq!(
        x.blocks_done, 20,
        "stopped at the second look: {}",
        x.stop_reason
    );
    assert!(
        x.stop_reason.contains("O'Brien–Fleming"),
        "{}",
        x.stop_reason
    );
}

#[test]
fn bad_levels_and_env_are_usage_errors_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    for argv in [
        vec![
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--confidence",
            "1.5",
            "--",
            "true",
        ],
        vec![
            "run", "--arm", "a=", "--arm", "b=", "--effect", "2", "--", "true",
        ],
        vec![
            "run", "--arm", "a=", "--arm", "b=", "--env", "FOO", "--", "true",
        ],
        vec!["results", "--db", db, "show", "1", "--confidence", "1.5"],
        vec!["compare", "1", "2", "--db", db, "--confidence", "1.5"],
        vec!["bench", "--confidence", "1.5"],
    ] {
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(&argv)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(
            err.contains("outside") || err.contains("NAME=VALUE"),
            "{argv:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
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

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
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

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
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
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for five stored trials, or for the run to end by itself (a failure, shown below).
    loop {
        let n = Store::open(&db)
            .ok()
            .and_then(|s| s.load(1).ok())
            .map_or(0, |(_, _, t)| t.len());
        if n >= 5 || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let exited_early = child.try_wait().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(
        exited_early.is_none(),
        "run ended by itself ({exited_early:?}): {stderr}"
    );
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
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2 arms, 6 trials"));
    // The hugelab export came back whole: every trial with its block, metrics and evidence.
    let store = Store::open(&db).unwrap();
    let (_, _, original) = store.load(1).unwrap();
    let (meta, _, again) = store.load(2).unwrap();
    let key = |t: &hugelab::store::TrialRow| (t.block, t.arm_idx, t.ok, t.metrics.clone());
    let mut want: Vec<_> = original.iter().filter(|t| t.block >= 0).map(key).collect();
    want.sort_by_key(|k| (k.0, k.1));
    assert_eq!(want, again.iter().map(key).collect::<Vec<_>>());
    assert_ne!(
        meta.plan["paired"], false,
        "a hugelab export keeps its pairing"
    );
    // Garbage is refused with the offending index, and nothing is stored.
    for (times, want) in [
        ("[0.1,-0.5,0.1]", "results[0].times[1] = -0.5"),
        ("[0.1,0,0.1]", "results[0].times[1] = 0"),
        ("[0.1,1e308,0.1]", "results[0].times[1] = 1e"),
        (
            "[0.1,\"fast\",0.1]",
            "results[0].times[1] = \"fast\": not a number",
        ),
    ] {
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            format!(r#"{{"results":[{{"command":"x","times":{times}}}]}}"#),
        )
        .unwrap();
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(["import", "--db"])
            .arg(&db)
            .arg(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{times}: {err}");
        assert!(err.contains(want), "{times}: {err}");
    }
    assert_eq!(
        Store::open(&db).unwrap().runs().unwrap().len(),
        3,
        "no partial run stored"
    );
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
    assert!(
        reason.contains("settled") && reason.contains("sequential"),
        "{reason}"
    );
    assert!(
        (20..60).contains(&blocks),
        "a 2× difference settles soon after the confidence sequence starts: {blocks}"
    );
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
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
fn a_failed_run_exits_4_and_is_stored_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let dbs = db.display().to_string();
    // The first trial fails: the run stops there, says how the trial ended, exits 4.
    let out = common::hugelab_exits(
        [
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=env.X=1",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--json",
            "--db",
            &dbs,
            "--",
            "false",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let why = v["stop_reason"].as_str().unwrap();
    assert!(why.contains("failed (exit 1)"), "{why}");
    assert_eq!(
        Store::open(&db).unwrap().load(1).unwrap().0.status,
        "failed"
    );
    // A warm-up that fails stops the run before anything is measured.
    let out = common::hugelab_exits(
        [
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "2",
            "--json",
            "--db",
            &dbs,
            "--",
            "sh",
            "-c",
            "kill -9 $$",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let why = v["stop_reason"].as_str().unwrap();
    assert!(
        why.contains("warm-up trial of arm") && why.contains("killed by SIGKILL"),
        "{why}"
    );
    // --keep-going past a metric that is never printed: every trial failed, no complete block.
    let out = common::hugelab_exits(
        [
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--keep-going",
            "--metric",
            "x=never ([0-9]+)",
            "--json",
            "--db",
            &dbs,
            "--",
            "true",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let why = v["stop_reason"].as_str().unwrap();
    assert!(why.contains("no block completed"), "{why}");
    assert_eq!(
        Store::open(&db).unwrap().load(3).unwrap().0.status,
        "failed"
    );
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
    let db = dir.path().join("r.db");
    let mut all = vec!["run"];
    all.extend_from_slice(&extra);
    let dbs = db.display().to_string();
    all.extend(["--json", "--db", &dbs, "--", "sleep", "5"]);
    // Every trial timed out: no complete block, a failed run (exit 4).
    let v: serde_json::Value = serde_json::from_str(&common::hugelab_exits(all, 4)).unwrap();
    assert_eq!(
        Store::open(&db).unwrap().load(1).unwrap().0.status,
        "failed"
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
    // Killed at the timeout (the trial's own measured span), not after the child's 5 s.
    assert!(trials.iter().all(|t| t.evidence["timed_out"] == true
        && t.evidence["signal"] == libc::SIGKILL
        && t.metrics["wall_s"] < 5.0));
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
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

#[test]
fn without_root_system_arms_and_root_options_are_refused_with_the_fix() {
    let thp = args(&["--preset", "thp", "--", "true"]);
    let e = plan_as(&thp, false).unwrap_err().to_string();
    assert!(
        e.contains("needs root") && e.contains("process.thp=off"),
        "{e}"
    );
    assert!(plan_as(&thp, true).is_ok());
    for opt in ["--drop-caches", "--compact"] {
        let a = args(&["--arm", "a=", "--arm", "b=", opt, "--", "true"]);
        let e = plan_as(&a, false).unwrap_err().to_string();
        assert!(e.contains("need root"), "{opt}: {e}");
    }
    let traced = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=",
        "--trace",
        "compaction",
        "--",
        "true",
    ]);
    let e = plan_as(&traced, false).unwrap_err().to_string();
    assert!(e.contains("--trace needs root"), "{e}");
    let bad = args(&[
        "--arm", "a=", "--arm", "b=", "--trace", "compact", "--", "true",
    ]);
    let e = plan_as(&bad, true).unwrap_err().to_string();
    assert!(
        e.contains("--trace: unknown trace kind \"compact\"; valid: compaction"),
        "{e}"
    );
    // Per-process arms need no privilege.
    let a = args(&["--arm", "a=", "--arm", "b=process.thp=off", "--", "true"]);
    assert!(plan_as(&a, false).is_ok());
}

#[test]
fn progress_estimates_are_of_the_primary_metric() {
    // b's metric is twice a's while their wall times are alike: the orientation line must
    // follow the metric the verdicts are about, and name it.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--blocks", "3", "--warmup", "0", "--db"])
        .arg(dir.path().join("p.db"))
        .args([
            "--arm",
            "a=env.V=100",
            "--arm",
            "b=env.V=200",
            "--metric",
            "v=v=([0-9]+),higher",
            "--shell",
            "--",
            "echo v=$V",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("· v: b +100.0% (unadjusted, for orientation)"),
        "{err}"
    );
}

#[test]
fn ctrl_c_is_handled_when_stderr_is_gone() {
    // The process that read hugelab's stderr has gone (a closed pipe): the Ctrl-C messages
    // fail to write. That must not end the signal handling — a second Ctrl-C still kills the
    // trial in flight (it is discarded) and exits.
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args([
            "run", "--arm", "a=", "--arm", "b=", "--blocks", "5", "--warmup", "0",
        ])
        .arg("--db")
        .arg(&db)
        .args(["--", "sleep", "600"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let l = lines.next().expect("run ended early").unwrap();
        if l.contains("block 1/5") {
            break;
        }
    }
    drop(lines);
    for _ in 0..2 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let (_, _, trials) = Store::open(&db).unwrap().load(1).unwrap();
    assert!(
        trials.is_empty(),
        "the 10-minute trial was killed, not waited for"
    );
}

#[test]
fn read_only_commands_create_nothing_and_every_store_error_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-dir/none.db");
    let m = missing.display().to_string();
    for args in [
        vec!["results", "list", "--db", &m],
        vec!["results", "show", "1", "--db", &m],
        vec!["report", "1", "--db", &m],
    ] {
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&m) && err.contains("no results database"),
            "{args:?}: {err}"
        );
    }
    assert!(!missing.parent().unwrap().exists(), "nothing was created");
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "not a database at all, just text").unwrap();
    let j = junk.display().to_string();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "list", "--db", &j])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&j) && err.contains("not a database"), "{err}");
    // run --no-save measures and stores nothing.
    let db = dir.path().join("never.db");
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .env("XDG_DATA_HOME", dir.path())
        .args([
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--no-save",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("not stored (--no-save)"));
    assert!(!db.exists() && !dir.path().join("hugelab").exists());
}

#[test]
fn a_closed_stderr_neither_panics_nor_changes_the_exit_code() {
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let b = bin.display();
    for (cmd, code) in [
        (
            format!(
                "{b} run --arm a= --arm b= --blocks 2 --warmup 0 --no-save -- true 2>&- >/dev/null"
            ),
            0,
        ),
        (format!("{b} run --arm a= -- true 2>&-"), 2),
        (
            format!(
                "{b} run --arm a= --arm b= --blocks 2 --warmup 0 --no-save -- false 2>&- >/dev/null"
            ),
            4,
        ),
    ] {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(code), "{cmd}");
    }
}
