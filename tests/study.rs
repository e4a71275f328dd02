//! The docs' study tables that say they are regenerated: `scripts/study/rows.sh` (services) and
//! `scripts/study/chase.sh rows` (the TLB model against `bench chase`) print them from the
//! stored runs in `docs/study/`, and every row they print is in the docs as it is, so a figure
//! there is the record's, read back by this version.

use std::path::Path;

#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn every_study_row_is_printed_from_its_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let mut stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".db.xz") && !is_chase(p))
        .collect();
    stored.sort();
    assert!(!stored.is_empty(), "no stored runs in docs/study");
    for db in stored {
        let text = script(root, "rows.sh", &[db.as_os_str()], &[]);
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert!(!rows.is_empty(), "{}: no rows", db.display());
        for row in rows {
            assert!(
                docs.contains(row),
                "{}: this row is not in docs/services-study.md as printed:\n{row}",
                db.display()
            );
        }
    }
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
        &[("SCALE", "1")],
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
