//! The docs' study tables that say they are regenerated: `scripts/study/rows.sh` prints them
//! from the stored runs in `docs/study/`, and every row it prints is in the docs as it is, so a
//! figure there is the record's, read back by this version.

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
        .filter(|p| p.to_string_lossy().ends_with(".db.xz"))
        .collect();
    stored.sort();
    assert!(!stored.is_empty(), "no stored runs in docs/study");
    for db in stored {
        let out = std::process::Command::new("bash")
            .arg(root.join("scripts/study/rows.sh"))
            .arg(&db)
            .env("HUGELAB", env!("CARGO_BIN_EXE_hugelab"))
            .current_dir(root)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}",
            db.display(),
            String::from_utf8_lossy(&out.stderr)
        );
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
