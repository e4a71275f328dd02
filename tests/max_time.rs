//! `--max-time` kept: a run whose time cannot hold the blocks an interval needs stops after its
//! first block, says why and how long it would need, and exits 2; the trial it ran is kept.

use crate::common;
#[test]
fn a_max_time_too_short_for_an_interval_is_said_after_the_first_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Blocks of two 3 s trials: 20 s hold at most a few, and an interval at 99% needs 8.
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--warmup", "0", "--max-time", "20", "--db"])
        .arg(&db)
        .args(["-a", "a=", "-a", "b=env.HUGELAB_AA=1", "--", "sleep", "3"])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{said}");
    // Wrapped at the terminal's width: read as one line.
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("stopped after the first block: --max-time 20 s is too short for an interval, by estimate: the first block took")
            && said.contains("an interval at 99% needs 8 blocks")
            && said.contains("give --max-time"),
        "{said}"
    );
    // What it measured is kept, with the reason it stopped.
    let v = common::hugelab_json([
        "results",
        "show",
        "1",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(
        v["record"]["facts"]["blocks"], 1,
        "{}",
        v["record"]["facts"]
    );
    let reason = v["record"]["facts"]["stop_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("--max-time 20 s is too short for an interval, by estimate"),
        "{reason}"
    );
}

/// A server's load of a fixed count (redis-benchmark -n: 200,000 SETs, 3–6 s on the development
/// VM; 16 blocks of two need far more than 10 s on any host) that the time cannot hold an
/// interval of is refused before the first block, from the load run alone while the servers were set
/// up, with the time it would need — not after spending a block on it.
#[test]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli"
)]
fn a_count_length_load_too_long_for_the_time_is_refused_before_the_first_block() {
    assert!(
        std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok(),
        "needs redis-server and redis-benchmark (apt-get install redis-server; .ci/run does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--max-time", "10", "--db"])
        .arg(&db)
        .args([
            "--server",
            "redis-server --port {port} --bind 127.0.0.1 --save \"\" --appendonly no",
            "--ready",
            "log:Ready to accept connections",
            "-a",
            "a=",
            "-a",
            "b=env.HUGELAB_AA=1",
            "--",
            "redis-benchmark",
            "-p",
            "{port}",
            "-t",
            "set",
            "-n",
            "200000",
            "-c",
            "4",
            "--csv",
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{said}");
    // Wrapped at the terminal's width: read as one line.
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("stopped before the first block: --max-time 10 s"),
        "{said}"
    );
    let v = common::hugelab_json([
        "results",
        "show",
        "1",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let facts = &v["record"]["facts"];
    assert_eq!(facts["blocks"], 0, "{facts}");
    let reason = facts["stop_reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "--max-time 10 s is too short for an interval, by estimate: one arm's load alone took"
        ) && reason.contains("a block of 2 one after another")
            && reason.contains("8 server lifetimes of 2 blocks, 16 blocks")
            && reason.contains("give --max-time"),
        "{reason}"
    );
}
