//! Stored runs: `results export` / `import` / `compare` round trips (JSON, CSV, hyperfine
//! JSON), and read-only commands that create nothing and name the path of every store error.

use crate::common;
use assert_cmd::Command;
use hugelab::store::Store;

#[test]
fn export_import_compare_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    common::run_json(
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
    // An import of an export is the same data: compare refuses it as a run against itself,
    // as it refuses the same id twice.
    for (a, b, why) in [("1", "2", "the same data"), ("1", "1", "the same run")] {
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(["compare", "--json", "--db"])
            .arg(&db)
            .args([a, b])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why) && err.contains("with itself"), "{err}");
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
        meta.plan.design(),
        hugelab::model::verdict::Design::Unpaired,
        "a hugelab export keeps its pairing"
    );
    assert!(meta.plan.run().is_some(), "and its whole plan");
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
fn an_export_keeps_hyperfines_arrays_aligned_when_trials_failed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // A failing arm (kept with --keep-going): hyperfine's arrays stay aligned — `times` and
    // `exit_codes` are the same trials — and the failures are kept under hugelab.trials.
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args([
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=env.X=1",
            "--blocks",
            "3",
            "--warmup",
            "0",
        ])
        .args(["--keep-going", "--shell", "--db"])
        .arg(&db)
        .args(["--", "test \"$X\" != 1"])
        .output()
        .unwrap();
    // Stored (a run whose arm failed every trial exits 4, but its trials are kept).
    assert_eq!(
        Store::open(&db).unwrap().runs().unwrap().len(),
        1,
        "{out:?}"
    );
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "--db"])
        .arg(&db)
        .args(["export", "1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in v["results"].as_array().unwrap() {
        assert_eq!(
            r["times"].as_array().unwrap().len(),
            r["exit_codes"].as_array().unwrap().len(),
            "{}",
            r["command"]
        );
    }
    let b = &v["results"][1];
    assert_eq!(b["times"].as_array().unwrap().len(), 0);
    let failed = b["hugelab"]["trials"].as_array().unwrap();
    assert!(
        failed.len() == 3
            && failed
                .iter()
                .all(|t| t["ok"] == false && t["evidence"]["exit_code"] == 1)
    );
    assert_eq!(v["results"][0]["times"].as_array().unwrap().len(), 3);
}

#[test]
fn every_record_and_stored_run_names_the_version_that_wrote_it() {
    let version = common::hugelab_stdout(["--version"]);
    assert!(
        version.starts_with(&format!("hugelab {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v.db");
    let v = common::run_json(
        &["--arm", "a=", "--arm", "b=env.X=1", "--blocks", "2"],
        &["true"],
        &db,
    );
    let this = v["hugelab_version"].as_str().unwrap().to_string();
    assert!(version.trim().ends_with(&this), "{version} vs {this}");
    let status = common::hugelab_json(["status", "--json"]);
    assert_eq!(status["hugelab_version"], this.as_str());
    // The stored run carries it; `results show` is silent about its own version...
    let store = Store::open(&db).unwrap();
    let (meta, _, _) = store.load(1).unwrap();
    assert_eq!(meta.written_by(), Some(this.as_str()));
    let db_s = db.display().to_string();
    let show = common::hugelab_stdout(["results", "show", "1", "--db", &db_s]);
    assert!(!show.contains("written by"), "{show}");
    // ...and says when another version wrote the run.
    let mut other = serde_json::to_value(&meta.plan).unwrap();
    other["hugelab_version"] = "0.0.9 (commit 0123456789ab)".into();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE runs SET plan = ?1 WHERE id = 1",
        [other.to_string()],
    )
    .unwrap();
    drop(conn);
    let show = common::hugelab_stdout(["results", "show", "1", "--db", &db_s]);
    assert!(
        show.contains("this run was written by hugelab 0.0.9 (commit 0123456789ab); this is"),
        "{show}"
    );
}

/// The verdict word of an answer line: `FASTER`, `SLOWER`, `EQUIVALENT` or `INCONCLUSIVE`.
fn verdict_of(line: &str) -> &'static str {
    ["FASTER", "SLOWER", "EQUIVALENT", "INCONCLUSIVE"]
        .into_iter()
        .find(|v| line.contains(v))
        .unwrap_or_else(|| panic!("no verdict in {line:?}"))
}

/// What a run said is what it keeps: a run decided at 95% and δ = 2% reads back at 95% and
/// δ = 2% in `results show` (text and JSON), `advise`, `report` and the Markdown export, with
/// the run's own answer lines; another decision asked for is a re-analysis that says so; and a
/// run an earlier version stored (its analysis alone) still opens and says how it was read.
#[test]
fn a_run_decided_at_95_percent_reads_back_at_its_own_decision_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let run = common::hugelab_stdout([
        "run",
        "-q",
        "-a",
        "a=env.X=1",
        "-a",
        "b=env.X=2",
        "--blocks",
        "12",
        "--confidence",
        "0.95",
        "--effect",
        "0.02",
        "--db",
        db,
        "--",
        "sleep",
        "0.01",
    ]);
    // The answer: the contrasts, the costs and the run line, up to what follows them.
    let answer: Vec<&str> = run
        .lines()
        .take_while(|l| {
            !["warnings:", "note:", "stored as", "why"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert!(
        answer.len() >= 2 && answer[0].starts_with("b vs a  wall_s  "),
        "{run}"
    );
    assert!(run.contains("verdicts at 95%, δ = 2%"), "{run}");

    let show = common::hugelab_stdout(["results", "show", "1", "--db", db]);
    let lines: Vec<&str> = show.lines().collect();
    assert_eq!(
        &lines[1..=answer.len()],
        &answer[..],
        "{show}\nthe run said:\n{run}"
    );
    assert!(!show.contains("re-analysed"), "{show}");

    let json = common::hugelab_json(["results", "show", "1", "--json", "--db", db]);
    assert_eq!(json["decided"]["confidence"], 0.95, "{json}");
    assert_eq!(json["decided"]["effect"], 0.02, "{json}");
    assert!(json["decided"]["reanalysed"].is_null(), "{json}");
    assert_eq!(json["record"]["report"]["confidence"], 0.95);
    assert_eq!(json["record"]["schema"], "hugelab.record/1");
    let c = &json["report"]["metrics"][0]["contrasts"][0][1];
    let verdict = c["verdict"].as_str().unwrap().to_ascii_uppercase();
    assert_eq!(verdict, verdict_of(answer[0]), "{c}");

    // advise weighs the run's own verdict, and reads nothing else into it.
    let advice = common::hugelab_stdout(["advise", "1", "--db", db]);
    let flat = advice.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("b vs a, wall_s ") && flat.contains(verdict_of(answer[0])),
        "{advice}"
    );
    assert!(!flat.contains("re-analysed"), "{advice}");

    // The report and the Markdown export open with the run's answer lines.
    let md = dir.path().join("r.md");
    common::hugelab_stdout([
        "report",
        "1",
        "--format",
        "md",
        "-o",
        md.to_str().unwrap(),
        "--db",
        db,
    ]);
    let md = std::fs::read_to_string(md).unwrap();
    let export = common::hugelab_stdout(["results", "export", "1", "--format", "md", "--db", db]);
    for text in [&md, &export] {
        for l in &answer {
            assert!(text.contains(l), "{l:?} not in:\n{text}");
        }
    }

    // Another decision asked for: re-analysed, and said.
    let again =
        common::hugelab_stdout(["results", "show", "1", "--confidence", "0.99", "--db", db]);
    assert!(
        again
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("note: re-analysed at 99%, δ = 2% (the run decided at 95%, δ = 2%)"),
        "{again}"
    );
    let json = common::hugelab_json([
        "results",
        "show",
        "1",
        "--confidence",
        "0.99",
        "--json",
        "--db",
        db,
    ]);
    assert_eq!(json["report"]["confidence"], 0.99, "{json}");
    assert!(json["decided"]["reanalysed"].is_string(), "{json}");

    // A run an earlier version stored: the analysis alone as its summary.
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute(
        "UPDATE runs SET summary = json_extract(summary, '$.report') WHERE id = 1",
        [],
    )
    .unwrap();
    drop(conn);
    let old = common::hugelab_stdout(["results", "show", "1", "--db", db]);
    let lines: Vec<&str> = old.lines().collect();
    assert!(
        lines[1].starts_with("note: stored by an earlier version with its analysis alone"),
        "{old}"
    );
    assert!(lines.contains(&answer[0]), "{old}");
}
