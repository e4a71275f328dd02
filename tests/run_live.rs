//! `hugelab run` with real children on the live kernel: evidence that differs by arm
//! (malloc=thp, process.thp=off, THP modes as root), a flagged arm, an A/A run never FASTER,
//! SIGKILL durability with settings restored, failed runs (exit 4), --timeout/--prepare/cache
//! options, --user, the noise floor of --calibrate, and Ctrl-C or a closed stderr handled.

use crate::common;
use assert_cmd::Command;
use hugelab::store::Store;

/// A child that holds 256 MiB for most of a second: long enough that the sampler's walks (80,
/// 160, 320, 640 ms) see its peak even when other tests load the machine.
fn python_alloc() -> Vec<&'static str> {
    vec![
        "python3",
        "-c",
        "import time; b = bytearray(256 << 20); time.sleep(0.8)",
    ]
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
fn calibrate_prints_the_noise_floor() {
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
fn malloc_thp_vs_process_thp_off_shows_in_the_evidence() {
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let v = common::run_json(
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
    let v = common::run_json(
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
    let why = ev["first_flag"].as_str().unwrap();
    // The share on the pages asked for: from the page-table walks or, where they missed the
    // peak (a host slow enough stalls them), from the status reads there.
    assert!(
        why.contains("of the memory that matters")
            || why.contains("resident at the peak was on hugetlb pages (status reads"),
        "{why}"
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
    let v = common::run_json(
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
    let v = common::run_json(
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
    assert_eq!(
        meta.status, "running",
        "the killed run could not finish its row"
    );
    assert_eq!(arms.len(), 2);
    assert!(trials.len() >= 5 && trials.iter().all(|t| t.metrics.contains_key("wall_s")));
    // The next hugelab command restores THP first, and reads the run as interrupted: its
    // process is gone.
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "--db"])
        .arg(&db)
        .arg("list")
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout);
    let row = listed
        .lines()
        .find(|l| l.contains("│ 1 "))
        .unwrap_or_default();
    assert!(row.contains("interrupted"), "{listed}");
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        before
    );
    assert!(!std::path::Path::new("/run/hugelab/journal.json").exists());
    // The next run into that database marks it so for good.
    let db_s = db.display().to_string();
    common::hugelab_stdout([
        "run", "--db", &db_s, "-a", "a=", "-a", "b=", "--blocks", "2", "--warmup", "0", "-q", "--",
        "true",
    ]);
    let (meta, _, _) = Store::open(&db).unwrap().load(1).unwrap();
    assert_eq!(meta.status, "interrupted");
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
    // Found while planning: a usage error (exit 2), and nothing stored.
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("program \"no-such-program-xyz\" not found") && e.contains("check PATH"),
        "{e}"
    );
    assert!(!dir.path().join("r.db").exists(), "nothing stored");
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn user_drops_privileges() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let v = common::run_json(
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
    // As root the run drops caches and compacts memory: it owns the machine while it runs, so
    // it holds the knob lock like every test that does.
    let _lock = common::is_root().then(common::knob_lock);
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
    assert!(trials.iter().all(|t| t.evidence.outcome.timed_out
        && t.evidence.outcome.signal == Some(libc::SIGKILL)
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

/// A warm-up trial killed by `--timeout` is a failure the answer counts, beside the measured
/// trials' (`--keep-going` goes on to measure).
#[test]
fn a_warm_up_trial_that_times_out_is_counted_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("first");
    // Only the first run is slow: the first arm's warm-up trial.
    let script = format!(
        "if [ -e {0} ]; then :; else touch {0}; sleep 5; fi",
        mark.display()
    );
    let out = common::hugelab_stdout([
        "run",
        "--no-save",
        "--keep-going",
        "--warmup",
        "1",
        "--blocks",
        "2",
        "--timeout",
        "1s",
        "-a",
        "a=env.X=1",
        "-a",
        "b=env.X=2",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("2 blocks in")
            && words.contains("0 failed (and 1 warm-up trial before them)"),
        "{out}"
    );
}

/// A primary metric that is 0 in one arm (a flag, an error count) cannot be compared by a
/// ratio: the run stops at the first such trial and says so, as bad input (exit 2), not as a
/// failed run with "0 failed trials".
#[test]
fn a_primary_metric_of_zero_is_refused_at_once_with_its_reason() {
    let out = common::hugelab_exits(
        [
            "run",
            "--no-save",
            "--blocks",
            "4",
            "-a",
            "plain=env.X=0",
            "-a",
            "other=env.X=1",
            "--metric",
            "v=v=([0-9]+)",
            "--",
            "sh",
            "-c",
            "echo v=$X",
        ],
        2,
    );
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("the primary metric v was 0 in a trial of arm plain")
            && words.contains("no ratio can be taken of 0")
            && words.contains("0 blocks in"),
        "{out}"
    );
    assert!(!words.contains("no block completed"), "{out}");
}

/// After Ctrl-C the answer counts what was analysed in the words it planned: "1 block", "1
/// complete block of the 3 planned", never "1 blocks" beside "3 blocks are too few".
#[test]
fn ctrl_c_after_a_block_says_what_was_analysed_of_what_was_planned() {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args([
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--blocks",
            "3",
            "--warmup",
            "0",
            "--no-save",
        ])
        .args(["--", "sleep", "0.5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // About block 2 (block 1 is two 0.5 s trials); wherever it lands under load, the words must
    // agree with the count.
    std::thread::sleep(std::time::Duration::from_millis(1400));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{text}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let done = ["0 blocks in", "1 block in", "2 blocks in"]
        .iter()
        .position(|w| words.contains(w))
        .unwrap_or_else(|| panic!("no block count: {text}"));
    let analysed = match done {
        1 => "1 complete block of the 3 planned analysed".to_string(),
        n => format!("{n} complete blocks of the 3 planned analysed"),
    };
    assert!(words.contains(&analysed), "{analysed}: {text}");
    assert!(!words.contains("1 blocks"), "{text}");
}

/// `--target-halfwidth`: the run looks after every block with the sequential design's
/// confidence sequence and stops once every contrast is that precise; the answer's interval is
/// that narrow, and bad values are refused before anything runs.
#[test]
fn a_target_half_width_stops_the_run_once_every_interval_is_that_narrow() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run_json(
        &[
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--target-halfwidth",
            "5%",
            "--max-time",
            "10m",
            "--warmup",
            "0",
        ],
        &["sleep", "0.02"],
        &dir.path().join("r.db"),
    );
    let why = v["stop_reason"].as_str().unwrap();
    assert!(why.starts_with("every contrast within ±5%"), "{why}");
    assert!(why.contains("confidence sequence"), "{why}");
    let p = &v["report"]["metrics"][0]["contrasts"][0][1]["percent"];
    let half = (p["hi"].as_f64().unwrap() - p["lo"].as_f64().unwrap()) / 2.0;
    assert!(half <= 5.0, "{p}");
    for (bad, want) in [
        ("0", "outside"),
        ("60%", "outside"),
        ("a lot", "not a half-width"),
    ] {
        let e = common::hugelab_stderr(
            [
                "run",
                "-a",
                "a=",
                "-a",
                "b=",
                "--target-halfwidth",
                bad,
                "--",
                "true",
            ],
            2,
        );
        assert!(e.contains(want), "{bad}: {e}");
    }
}
