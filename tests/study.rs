//! The docs' study tables that say they are regenerated: `scripts/study/rows.sh` (services) and
//! `scripts/study/chase.sh rows` (the TLB model against `bench chase`) print them from the
//! stored runs in `docs/study/`; the services tables are exactly that output (both ways), and
//! every chase row is in the docs as it is, so a figure there is the record's, read back by
//! this version.

use crate::common;
use std::path::Path;

/// Each stored set of runs has its table in docs/services-study.md between `rows.sh` markers
/// naming it, and that table is exactly what `scripts/study/rows.sh` prints from it: a row typed
/// there by hand, one left out, or a marker naming no stored runs fails.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn every_study_table_is_printed_from_its_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let mut stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".db.xz") && !is_chase(p) && !is_tlb(p))
        .collect();
    stored.sort();
    assert!(!stored.is_empty(), "no stored runs in docs/study");
    for db in &stored {
        let text = script(root, "rows.sh", &[db.as_os_str()], &[]);
        assert!(text.lines().count() > 2, "{}: no rows", db.display());
        let source = format!("docs/study/{}", db.file_name().unwrap().to_string_lossy());
        if let Err(e) = common::quoted_exactly(&docs, "rows.sh", &source, &text) {
            panic!("docs/services-study.md: {e}");
        }
    }
    let marked = docs.matches("<!-- rows.sh: ").count();
    assert_eq!(
        marked,
        stored.len(),
        "a rows.sh marker naming no stored runs"
    );
    // No table stands outside the markers: a table no script prints is typed by hand.
    let mut inside = false;
    for (n, line) in docs.lines().enumerate() {
        inside = (inside || line.starts_with("<!-- rows.sh: ")) && line != "<!-- /rows.sh -->";
        assert!(
            inside || !line.starts_with('|'),
            "docs/services-study.md:{}: a table row outside the rows.sh markers: {line}",
            n + 1
        );
    }
}

/// The table check fails on a row typed into the docs by hand and on a printed row left out.
#[test]
fn a_study_table_with_a_row_typed_or_left_out_fails() {
    let printed = "| run | tps |\n|---|---|\n| 1 | +0.2% |\n| 2 | −0.1% |\n";
    let docs = |table: &str| {
        format!("text\n<!-- rows.sh: docs/study/x.db.xz -->\n{table}<!-- /rows.sh -->\n")
    };
    let check = |d: &str| common::quoted_exactly(d, "rows.sh", "docs/study/x.db.xz", printed);
    assert_eq!(check(&docs(printed)), Ok(()));
    let typed = check(&docs(
        "| run | tps |\n|---|---|\n| 1 | +0.2% |\n| 0 | −0.21% |\n| 2 | −0.1% |\n",
    ))
    .unwrap_err();
    assert!(typed.contains("| 0 | −0.21% |"), "{typed}");
    let left = check(&docs("| run | tps |\n|---|---|\n| 1 | +0.2% |\n")).unwrap_err();
    assert!(left.contains("| 2 | −0.1% |"), "{left}");
    assert!(check("no markers").is_err());
}

/// A study script's output, run with this build's hugelab; its failure fails the test.
fn script(root: &Path, name: &str, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/study").join(name))
        .args(args)
        .envs(env.iter().copied())
        .env("HUGELAB", env!("CARGO_BIN_EXE_hugelab"))
        .current_dir(root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn is_chase(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("-chase"))
}

fn is_tlb(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("-tlb"))
}

/// docs/bench.md's study of `bench tlb` across runs is exactly what `scripts/study/tlb.sh rows`
/// prints from the stored runs (both ways): each run's range and whether every range overlaps
/// every other, as the runs stored them.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_tlb_study_table_is_printed_from_its_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/bench.md")).unwrap();
    let stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_tlb(p))
        .collect();
    assert!(
        !stored.is_empty(),
        "no stored bench tlb study in docs/study"
    );
    for db in &stored {
        let text = script(root, "tlb.sh", &["rows".as_ref(), db.as_os_str()], &[]);
        // A heading, its rule, ten runs or more, and the overlap line.
        assert!(text.lines().count() >= 13, "{text}");
        let source = format!("docs/study/{}", db.file_name().unwrap().to_string_lossy());
        if let Err(e) = common::quoted_exactly(&docs, "tlb.sh", &source, &text) {
            panic!("docs/bench.md: {e}");
        }
    }
}

/// The stored study's runs, read back as a new `bench tlb` on their host reads them (the store's
/// runs of this host), set each against all the others by the code `bench tlb` runs: every
/// range overlaps the rest, in the common span docs/bench.md quotes, so the study supports its
/// level across runs; a planted range an hour away from them is named as apart.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs xz (apt-get install xz-utils; .ci/run does)"
)]
fn the_tlb_studys_ranges_all_overlap_as_bench_tlb_sets_them_against_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let study = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| is_tlb(p))
        .expect("a stored bench tlb study in docs/study");
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(&study)
        .output()
        .expect("xz (apt-get install xz-utils; .ci/run does)");
    let db = dir.path().join("tlb.db");
    std::fs::write(&db, out.stdout).unwrap();
    // Their host is this one: the store reads the runs of the host it runs on.
    let host = hugelab::probe::cpu::hostname(&hugelab::probe::Root::system()).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET host = ?1", [&host]).unwrap();
    drop(conn);
    let store = hugelab::store::Store::open_existing(&db).unwrap();
    let runs = store.measured_tlbs().unwrap();
    assert!(
        runs.len() >= hugelab::model::tlb::STUDY_RUNS,
        "{}",
        runs.len()
    );
    let (earlier, last) = runs.split_at(runs.len() - 1);
    let a = hugelab::analyze::tlb::across(earlier, &last[0].reach).unwrap();
    assert_eq!(a.runs.len(), runs.len());
    assert_eq!(
        (a.common, a.apart),
        (Some((1024, Some(1536))), None),
        "{a:#?}"
    );
    let docs = std::fs::read_to_string(root.join("docs/bench.md")).unwrap();
    assert!(
        docs.contains("all 12 hold 1,024–1,536 entries"),
        "docs/bench.md"
    );
    // A run whose range lies below all of theirs.
    let mut apart = last[0].reach.clone();
    let sweep = apart.headline.unwrap();
    apart.sweeps[sweep].located.as_mut().unwrap().between = (256, Some(512));
    let a = hugelab::analyze::tlb::across(&runs, &apart).unwrap();
    assert_eq!(a.common, None);
    let (i, j) = a.apart.unwrap();
    assert_eq!(a.runs[j].run, None, "{a:#?}");
    assert!(a.runs[i].between.0 >= 512, "{a:#?}");
}

#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_chase_table_is_printed_from_its_stored_benches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/measurements.md")).unwrap();
    let stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_chase(p))
        .collect();
    assert!(!stored.is_empty(), "no stored chase benches in docs/study");
    for db in stored {
        let text = script(root, "chase.sh", &["rows".as_ref(), db.as_os_str()], &[]);
        // The heading names the machine and the reach; eleven sizes follow.
        assert_eq!(text.lines().count(), 13, "{text}");
        for row in text.lines() {
            assert!(
                docs.contains(row),
                "{}: this row is not in docs/measurements.md as printed:\n{row}",
                db.display()
            );
        }
    }
}

/// `scripts/study/aa.sh` makes the A/A rows again: a short A/A on a small cluster, its row
/// printed from the stored run in the columns of docs/services-study.md's table.
#[test]
#[cfg_attr(
    any(unprivileged, missing_postgres, missing_jq),
    ignore = "needs root, PostgreSQL and jq (.ci/run installs them)"
)]
fn the_aa_script_measures_and_prints_its_rows() {
    require_root!();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("aa.db");
    let text = script(
        root,
        "aa.sh",
        &[db.as_os_str(), "90s".as_ref()],
        // A burst the run would calibrate from the client's start-up cost grows on a busy
        // machine past what 90 s holds (the run then refuses, rightly): fixed at 1 s here.
        &[("SCALE", "1"), ("BURST", "1")],
    );
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(docs.contains(lines[0]), "the table's heading: {}", lines[0]);
    assert_eq!(lines.len(), 3, "one A/A, one contrast: {text}");
    let row = lines[2];
    assert_eq!(row.matches('|').count(), 13, "{row}");
    assert!(
        row.contains(" | b vs a tps ") && row.contains(" CPUs, "),
        "{row}"
    );
}
