//! Printed = stored, by provenance: for each kind of answer (a command run, a `--calibrate` run,
//! an import, a bench, `bench tlb`; a service run in tests/answer.rs, a conditions run in
//! tests/conditions.rs), every number printed is a field of the stored record the line reads,
//! rounded as printed (`common::printed::unexplained`), and a planted wrong number is caught.

use crate::common;
use crate::common::printed::{holds, run_text};
use assert_cmd::Command;
use std::path::Path;

fn show_json(db: &Path, id: &str) -> serde_json::Value {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "show", id, "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn bench_text(doc: &serde_json::Value) -> Option<String> {
    let bench = serde_json::from_value(doc["bench"].clone()).ok()?;
    Some(hugelab::render::bench::render(&bench))
}

fn run(db: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "--db"])
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The last line says where the run was stored: the engine's, not the record's.
    let (body, last) = text.trim_end().rsplit_once('\n').unwrap();
    assert!(last.starts_with("stored as run"), "{text}");
    format!("{body}\n")
}

#[test]
fn a_command_runs_answer_is_its_record() {
    use hugelab::render::run::Print;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let printed = run(
        &db,
        &[
            "--arm",
            "a=env.X=1",
            "--arm",
            "b=env.X=2",
            "--blocks",
            "12",
            "--warmup",
            "0",
            "--",
            "true",
        ],
    );
    let doc = show_json(&db, "1");
    holds(&doc, &printed, &|d| run_text(d, Print::Brief));
    let stored = run_text(&doc, Print::Stored).unwrap();
    holds(&doc, &stored, &|d| run_text(d, Print::Stored));
}

#[test]
fn a_calibrating_runs_answer_is_its_record() {
    use hugelab::render::run::Print;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let printed = run(
        &db,
        &["--calibrate", "3s", "--warmup", "0", "--", "sleep", "0.01"],
    );
    assert!(printed.contains("noise floor"), "{printed}");
    let doc = show_json(&db, "1");
    holds(&doc, &printed, &|d| run_text(d, Print::Brief));
}

#[test]
fn an_imports_answer_is_its_record() {
    use hugelab::render::run::Print;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let hf = dir.path().join("hf.json");
    std::fs::write(&hf, r#"{"results":[{"command":"sleep 0.1","times":[0.101,0.102,0.1,0.103,0.1,0.104,0.102,0.101],"exit_codes":[0,0,0,0,0,0,0,0]},{"command":"sleep 0.2","times":[0.2,0.21,0.2,0.201,0.202,0.205,0.203,0.2],"exit_codes":[0,0,0,0,0,0,0,0]}]}"#).unwrap();
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["import", "--db"])
        .arg(&db)
        .arg(&hf)
        .assert()
        .success();
    let doc = show_json(&db, "1");
    let text = run_text(&doc, Print::Stored).unwrap();
    holds(&doc, &text, &|d| run_text(d, Print::Stored));
}

#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn a_bench_and_bench_tlb_print_their_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(root.join("docs/study/2026-11-28-chase.db.xz"))
        .output()
        .unwrap();
    let db = dir.path().join("chase.db");
    std::fs::write(&db, out.stdout).unwrap();
    for id in ["1", "2"] {
        let doc = show_json(&db, id);
        let text = bench_text(&doc).unwrap();
        holds(&doc, &text, &bench_text);
    }
}

/// An estimated time is read in its unit and found as the seconds the record stores.
#[test]
fn an_estimated_time_is_read_as_the_seconds_stored() {
    use common::printed::{is_stored, numbers};
    let p = &numbers("needs ~2,971 more blocks, about 9.9 h at this run's pace")[1];
    assert_eq!((p.value, p.unit.as_str()), (9.9, "h"));
    assert!(is_stored(p, &[(9.9 * 3600.0 + 60.0, None)]));
    assert!(!is_stored(p, &[(7.0, None)]));
    let d = &numbers("about 3.2 days")[0];
    assert!(is_stored(d, &[(3.2 * 86_400.0, None)]));
}
