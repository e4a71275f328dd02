//! The statistics engine's simulation study at CI size (deterministic seeds): interval
//! coverage, A/A false positives under sequential stopping (with and without drift), runs to a
//! verdict versus the fixed designs, and power lost to outliers. The full table:
//! `cargo test --release --test stats_simulation -- --nocapture`.

#[test]
fn simulation_study_meets_its_targets() {
    let rows = hugelab::analyze::simulate::study(4000);
    for r in &rows {
        println!("{}", table_line(r));
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.study.as_str())
        .collect();
    assert!(missed.is_empty(), "missed: {missed:?}");
    assert!(rows.len() >= 14);
}

/// One row as the study tables print it: the claim, what was measured, the target, ok/MISSED.
fn table_line(r: &hugelab::analyze::simulate::Row) -> String {
    format!(
        "{:<78} {:>10.4}  {:<12} {}",
        r.study,
        r.measured,
        r.target,
        if r.pass { "ok" } else { "MISSED" }
    )
}

/// The forecast study at its full size: `scripts/study/forecast.sh` runs this and stores the
/// table in docs/study/forecast.txt (HUGELAB_FORECAST_RUNS runs a process, 1,000 unless set).
#[test]
#[ignore = "the full forecast study (1,000 runs a process), stored by scripts/study/forecast.sh"]
fn forecast_study_at_full_size() {
    let runs = std::env::var("HUGELAB_FORECAST_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    for r in hugelab::analyze::simulate::forecast_study(runs) {
        println!("{}", table_line(&r));
    }
}

/// The stored forecast study: every process's half-way range held at the printed 90% by the
/// one-sided test, in 1,000 runs or more each, and docs/statistics.md's table between its
/// markers is exactly the stored one: a row typed by hand or one left out fails.
#[test]
fn the_stored_forecast_study_holds_its_level_and_the_docs_quote_it_whole() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let stored = std::fs::read_to_string(root.join("docs/study/forecast.txt")).unwrap();
    let rows: Vec<&str> = stored
        .lines()
        .filter(|l| l.starts_with("forecast study"))
        .collect();
    assert_eq!(rows.len(), 6, "one row per process:\n{stored}");
    for row in &rows {
        assert!(row.ends_with(" ok"), "a row that missed its level:\n{row}");
        let runs: usize = row
            .split(" of ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no run count in {row}"));
        assert!(runs >= 1000, "too few runs to tell 85% from 90%: {row}");
    }
    let docs = std::fs::read_to_string(root.join("docs/statistics.md")).unwrap();
    let quoted = docs
        .split("<!-- forecast-study: docs/study/forecast.txt -->\n")
        .nth(1)
        .and_then(|s| s.split("<!-- /forecast-study -->").next())
        .expect("docs/statistics.md quotes the forecast study between its markers");
    assert_eq!(
        quoted.trim_matches(['\n', '`']),
        stored.trim_end(),
        "docs/statistics.md's forecast table is not docs/study/forecast.txt as stored"
    );
}
