//! One author per claim: every view of a stored result — `results show`, `report` (HTML and
//! Markdown), `results export --format md` — draws the same record, so they give the same
//! verdicts; a bench is read as the bench it was (its headline, its reach, every span), an
//! import says at which decision it was analysed, an export comes back through `import` whole,
//! and a refusal says why wherever the answer is read.

use crate::common;
use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The stored study benches (docs/study), decompressed into `dir`.
fn study_benches(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(root.join("docs/study/2026-11-28-chase.db.xz"))
        .output()
        .expect("xz (apt-get install xz-utils; .ci/run does)");
    assert!(out.status.success());
    let db = dir.join("chase.db");
    std::fs::write(&db, out.stdout).unwrap();
    db
}

fn hugelab(db: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn report(db: &Path, id: &str, format: &str, dir: &Path) -> String {
    let out = dir.join(format!("r{id}.{format}"));
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["report", id, "--format", format, "--db"])
        .arg(db)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    std::fs::read_to_string(out).unwrap()
}

/// The benches behind the TLB-model table: `results show`, `report` and `results export
/// --format md` print the bench's own headline, its reach and every span (1.5M included), and
/// the same cells — never the run analysis of its rounds; its own level given again reads as
/// its own decision.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_study_benches_read_the_same_in_every_view() {
    use hugelab::model::bench::BenchResult;
    let dir = tempfile::tempdir().unwrap();
    let db = study_benches(dir.path());
    for id in ["1", "2"] {
        let v: serde_json::Value =
            serde_json::from_str(&hugelab(&db, &["results", "show", id, "--json"])).unwrap();
        assert!(v["decided"]["reanalysed"].is_null(), "{}", v["decided"]);
        let bench: BenchResult = serde_json::from_value(v["bench"].clone()).unwrap();
        let show = hugelab(&db, &["results", "show", id]);
        let md = report(&db, id, "md", dir.path());
        let export = hugelab(&db, &["results", "export", id, "--format", "md"]);
        let html = report(&db, id, "html", dir.path());
        let answer = hugelab::render::bench::answer_lines(&bench);
        assert!(!answer.is_empty());
        for line in &answer {
            for (view, text) in [("show", &show), ("report md", &md), ("export md", &export)] {
                assert!(
                    text.contains(line.as_str()),
                    "{view} lacks {line:?}:\n{text}"
                );
            }
            assert!(html.contains(&hugelab::render::html::esc(line)), "{line}");
        }
        for g in hugelab::render::bench::grids(&bench) {
            for row in &g.rows {
                let md_row = format!("| {} |", row.join(" | "));
                assert!(md.contains(&md_row) && export.contains(&md_row), "{md_row}");
                assert!(show.contains(&row[0]) && show.contains(&row[1]));
            }
        }
        // Never the run analysis of its rounds (Holm over the backings at each size).
        for text in [&show, &md, &export] {
            assert!(
                !text.contains("INCONCLUSIVE") && !text.contains("Holm"),
                "{text}"
            );
        }
        // Its own level again is its own decision: the same bench, no note.
        let again: serde_json::Value = serde_json::from_str(&hugelab(
            &db,
            &["results", "show", id, "--confidence", "0.999", "--json"],
        ))
        .unwrap();
        assert!(again["decided"]["reanalysed"].is_null());
        assert_eq!(again["bench"], v["bench"]);
    }
    // bench tlb: the reach, and every span the bench measured, 1.5M (384 pages) among them.
    let md = report(&db, "1", "md", dir.path());
    assert!(md.contains("reach: about"), "{md}");
    assert!(md.contains("| 1.5M | 384 |"), "{md}");
    // The chase bench's 128M verdicts, as the bench printed them, in every view.
    let md = report(&db, "2", "md", dir.path());
    assert!(md.contains("thp         chase -40% (faster)"), "{md}");
    assert!(md.contains("| 128M | thp | 185 ± 3.10 | 100.0% | 0.603× [0.488, 0.651] better |"));
}

/// A hyperfine file imported is analysed once, at the defaults, and says so in every view;
/// `compare` reads a hyperfine file as `import` does (the same arm names).
#[test]
fn an_import_says_it_was_analysed_at_the_defaults_and_compares_as_imported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let hf = dir.path().join("hf.json");
    let other = dir.path().join("hf2.json");
    std::fs::write(&hf, r#"{"results":[{"command":"sleep 0.1","times":[0.101,0.102,0.1,0.103,0.1],"exit_codes":[0,0,0,0,0]},{"command":"sleep 0.2","times":[0.2,0.21,0.2,0.201,0.202],"exit_codes":[0,0,0,0,0]}]}"#).unwrap();
    std::fs::write(&other, r#"{"results":[{"command":"sleep 0.1","times":[0.111,0.112,0.11,0.113,0.11],"exit_codes":[0,0,0,0,0]},{"command":"sleep 0.2","times":[0.22,0.23,0.22,0.221,0.222],"exit_codes":[0,0,0,0,0]}]}"#).unwrap();
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["import", "--db"])
        .arg(&db)
        .arg(&hf)
        .assert()
        .success();
    let show = hugelab(&db, &["results", "show", "1"]);
    let note = "note: analysed at the defaults, 99%, δ = 1%";
    assert!(show.contains(note), "{show}");
    assert!(!show.contains("earlier version"), "{show}");
    let md = report(&db, "1", "md", dir.path());
    assert!(md.contains(note), "{md}");
    let v: serde_json::Value =
        serde_json::from_str(&hugelab(&db, &["results", "show", "1", "--json"])).unwrap();
    assert_eq!(v["decided"]["origin"]["kind"], "defaults");
    assert_eq!(v["record"]["decision"]["origin"]["kind"], "defaults");
    // The file names no host: the import does not take the importer's.
    assert_eq!(v["run"]["host"], hugelab::store::UNKNOWN_HOST);
    // Another decision re-analyses and says whose the stored one was.
    let again = hugelab(&db, &["results", "show", "1", "--confidence", "0.95"]);
    assert!(again.contains("note: re-analysed at 95%"), "{again}");
    // compare reads the other file as an import would: the arms are shared by name.
    for (a, b) in [
        ("1", other.to_str().unwrap()),
        (hf.to_str().unwrap(), other.to_str().unwrap()),
    ] {
        let c: serde_json::Value =
            serde_json::from_str(&hugelab(&db, &["compare", "--json", a, b])).unwrap();
        let arms: Vec<&str> = c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["arm"].as_str().unwrap())
            .collect();
        assert_eq!(arms, ["sleep 0.1", "sleep 0.2"], "{c}");
    }
}

/// `results export` then `import` then `results show`: the same answer lines, the same time and
/// advice, the run's host and time kept.
#[test]
fn an_export_imported_reads_back_as_the_run_printed_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    common::run_json(
        &[
            "--arm",
            "a=env.X=1",
            "--arm",
            "b=env.X=2",
            "--blocks",
            "10",
            "--warmup",
            "0",
        ],
        &["true"],
        &db,
    );
    let export = dir.path().join("e.json");
    hugelab(
        &db,
        &["results", "export", "1", "-o", export.to_str().unwrap()],
    );
    let other = dir.path().join("other.db");
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["import", "--db"])
        .arg(&other)
        .arg(&export)
        .assert()
        .success();
    let body = |t: &str| t.split_once('\n').unwrap().1.to_string();
    let first = hugelab(&db, &["results", "show", "1"]);
    let again = hugelab(&other, &["results", "show", "1"]);
    assert_eq!(body(&first), body(&again));
    assert!(
        first.contains(" in "),
        "the run line keeps the time: {first}"
    );
    let a: serde_json::Value =
        serde_json::from_str(&hugelab(&db, &["results", "show", "1", "--json"])).unwrap();
    let b: serde_json::Value =
        serde_json::from_str(&hugelab(&other, &["results", "show", "1", "--json"])).unwrap();
    assert_eq!(a["record"], b["record"]);
    assert_eq!(a["run"]["host"], b["run"]["host"]);
    assert_eq!(a["run"]["created"], b["run"]["created"]);
    assert_eq!(b["run"]["status"], "imported");
}

/// A service run refused because `--max-time` is too short for an interval, by estimate says why in its brief
/// answer, as a command run's run line does, and again in `results show`.
#[test]
fn a_refusal_says_why_in_the_answer_and_in_results_show() {
    use hugelab::model::record::{RECORD_SCHEMA, RunFacts, RunRecord};
    let why = "--max-time 20 s is too short for an interval, by estimate: a block took 9.1 s";
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran.db");
    common::run_json(
        &[
            "--arm",
            "a=env.X=1",
            "--arm",
            "b=env.X=2",
            "--blocks",
            "4",
            "--warmup",
            "0",
        ],
        &["true"],
        &ran,
    );
    let stored: serde_json::Value =
        serde_json::from_str(&hugelab(&ran, &["results", "show", "1", "--json"])).unwrap();
    let mut record: RunRecord = serde_json::from_value(stored["record"].clone()).unwrap();
    record.schema = RECORD_SCHEMA.into();
    record.facts = RunFacts {
        blocks: 0,
        elapsed_s: Some(9.1),
        stop_reason: Some(why.into()),
        ..Default::default()
    };
    for service in [true, false] {
        record.service = service;
        let text = hugelab::render::run::answer_lines(&record).join(" ");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains(&format!("(stopped: {why})")),
            "{service}: {text}"
        );
    }
    // A time-up is no refusal: the brief answer leaves it out, the run line keeps it.
    record.facts.stop_reason = Some("--max-time 300 s reached after 40 blocks".into());
    record.service = true;
    assert!(
        !hugelab::render::run::answer_lines(&record)
            .join(" ")
            .contains("stopped")
    );
    // Stored, `results show` prints the same line.
    let db = dir.path().join("r.db");
    record.facts.stop_reason = Some(why.into());
    let mut s = hugelab::store::Store::open(&db).unwrap();
    let plan =
        serde_json::json!({"baseline": 0, "metrics": [{"name": "wall_s", "better": "lower"}]});
    let arms: Vec<hugelab::store::ArmRow> = ["a", "b"]
        .iter()
        .enumerate()
        .map(|(i, n)| hugelab::store::ArmRow {
            idx: i as i64,
            name: n.to_string(),
            spec: String::new(),
        })
        .collect();
    let id = s
        .create_run(
            None,
            &["x".into()],
            None,
            "running",
            &serde_json::from_value(plan).unwrap(),
            &arms,
        )
        .unwrap();
    s.finish_run(id, "failed", Some(&record)).unwrap();
    let show = hugelab(&db, &["results", "show", &id.to_string()]);
    let flat = show.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&format!("(stopped: {why})")), "{show}");
}

/// The default level and the arithmetic of a level are written in one module: the check fails
/// on a planted second copy anywhere else in src/, and passes on this tree.
#[test]
fn a_second_author_of_the_level_fails_the_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = |tree: &Path| {
        std::process::Command::new("bash")
            .arg(root.join("scripts/check-levels.sh"))
            .arg(tree)
            .output()
            .unwrap()
    };
    let here = check(root);
    assert!(
        here.status.success(),
        "{}",
        String::from_utf8_lossy(&here.stdout)
    );
    for planted in [
        "pub fn f(confidence: f64) -> f64 { 1.0 - confidence }",
        "pub fn f(level: f64) -> f64 { (1.0 - level) / 2.0 }",
        "pub fn f(o: Option<f64>) -> f64 { o.unwrap_or(0.99) }",
        "pub struct A { #[arg(long, default_value_t = 0.99)] pub confidence: f64 }",
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/stats")).unwrap();
        std::fs::copy(
            root.join("src/stats/level.rs"),
            dir.path().join("src/stats/level.rs"),
        )
        .unwrap();
        std::fs::write(dir.path().join("src/planted.rs"), format!("{planted}\n")).unwrap();
        let out = check(dir.path());
        assert!(!out.status.success(), "not caught: {planted}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("src/planted.rs:1"),
            "{planted}"
        );
    }
}

/// `run --calibrate --verbose` prints the noise floor, the A/A verdict and every table;
/// `results show` prints every one of its lines again, from the record alone.
#[test]
fn results_show_prints_every_line_a_verbose_calibrating_run_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args([
            "run",
            "--calibrate",
            "3s",
            "--warmup",
            "0",
            "--verbose",
            "--db",
        ])
        .arg(&db)
        .args(["--", "sleep", "0.01"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let (run, last) = printed.trim_end().rsplit_once('\n').unwrap();
    assert!(last.starts_with("stored as run 1 in"), "{printed}");
    assert!(run.contains("noise floor of this machine"), "{run}");
    assert!(run.contains("contrast itself:"), "{run}");
    let show = hugelab(&db, &["results", "show", "1"]);
    let (_, body) = show.split_once('\n').unwrap();
    assert_eq!(body.trim_end(), run, "results show:\n{show}");
}

/// `results show` prints the answer the run stored without reading one trial: with the trials'
/// evidence unreadable it prints the same lines; decided again at another level it needs the
/// trials, and the error says what it could not read.
#[test]
fn results_show_reads_the_trials_only_to_decide_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    Command::cargo_bin("hugelab")
        .unwrap()
        .args(["run", "-a", "a=env.X=1", "-a", "b=env.X=2", "--blocks", "6"])
        .args(["--warmup", "0", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .assert()
        .success();
    let shown = hugelab(&db, &["results", "show", "1"]);
    let again = hugelab(&db, &["results", "show", "1", "--confidence", "0.95"]);
    assert!(again.contains("95%"), "{again}");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("ALTER TABLE trials RENAME COLUMN evidence TO moved")
        .unwrap();
    assert_eq!(hugelab(&db, &["results", "show", "1"]), shown);
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["results", "show", "1", "--confidence", "0.95", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such column: evidence"), "{err}");
}
