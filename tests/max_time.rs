//! `--max-time` kept: a run whose time cannot hold the blocks an interval needs stops after its
//! first block, says why and how long it would need, and exits 2; the trial it ran is kept.

mod common;

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
    assert!(
        said.contains("stopped after the first block: --max-time 20 s cannot give an interval: the first block took")
            && said.contains("an interval at 99.00% needs 8 blocks")
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
        reason.starts_with("--max-time 20 s cannot give an interval"),
        "{reason}"
    );
}
