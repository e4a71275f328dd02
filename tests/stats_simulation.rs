//! The statistics engine's simulation study (deterministic seeds): interval coverage, A/A false
//! positives under sequential stopping (with and without drift), runs to a verdict versus the
//! fixed designs, power lost to outliers, the warm services' sizing and forecast.
//!
//! The study's table is stored by `scripts/study/simulation.sh` (4,000 replications, about 7
//! CPU-minutes: run by the script, not by CI) in docs/study/simulation.txt, and the forecast
//! study's by `scripts/study/forecast.sh` (1,000 runs a process) in docs/study/forecast.txt;
//! docs/statistics.md quotes both whole, and the fast tests here fail on a stored row that
//! missed, a row typed into the docs by hand, or one left out. The study's code is the code
//! that stored it: CI reruns it at 100 replications (the same seeds, so the first 100 of the
//! stored run's) and compares every row with the check table the script stored beside it, so a
//! change to the statistics or the study fails until the script has run again. Each table:
//! `cargo test --release --test suite stats_simulation:: -- --ignored --nocapture`.

use crate::common;
use hugelab::analyze::simulate::{Row, forecast_study, study};

/// The study's size: what the stored study ran and docs/statistics.md's table claims. Its rows'
/// targets are two standard errors at this size (a smaller run misses rows by chance).
const FULL_REPS: usize = 4000;

/// The size CI reruns the study at, against the check table stored with the full one.
const CHECK_REPS: usize = 100;

#[test]
#[ignore = "the whole study (4,000 replications), stored by scripts/study/simulation.sh"]
fn simulation_study_meets_its_targets() {
    let rows = study(FULL_REPS);
    println!("{}", study_header());
    for r in &rows {
        println!("{}", table_line(r));
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.study.as_str())
        .collect();
    assert!(missed.is_empty(), "missed: {missed:?}");
    // The stored study has as many rows: a row added to the code is in the docs' table too.
    assert_eq!(rows.len(), stored_rows("simulation.txt", "").len());
}

/// The study rerun at `CHECK_REPS` prints exactly the check table `scripts/study/simulation.sh`
/// stored with the full study: the stored study is this code's. A row's number, name or order
/// changed by the statistics or the study fails here, naming the script to run.
#[test]
fn the_stored_study_is_the_current_codes_rerun_at_100_replications() {
    common::lowest_priority();
    let lines: Vec<String> = study(CHECK_REPS).iter().map(check_line).collect();
    println!("{}", check_header());
    for l in &lines {
        println!("{l}");
    }
    assert_eq!(
        stored_text("simulation-check.txt").lines().next(),
        Some(check_header().as_str())
    );
    let stored = stored_rows("simulation-check.txt", "");
    let differ: Vec<String> = lines
        .iter()
        .zip(&stored)
        .filter(|(now, then)| now != then)
        .map(|(now, then)| format!("now:    {now}\nstored: {then}"))
        .collect();
    assert!(
        differ.is_empty() && lines.len() == stored.len(),
        "the stored study is not this code's ({} rows now, {} stored); run scripts/study/simulation.sh:\n{}",
        lines.len(),
        stored.len(),
        differ.join("\n")
    );
    // As many rows as the full table: each row of the docs' table is checked here.
    assert_eq!(lines.len(), stored_rows("simulation.txt", "").len());
}

/// The check table's first line: the size it ran at.
fn check_header() -> String {
    format!(
        "# scripts/study/simulation.sh: the study at {CHECK_REPS} replications, which CI reruns"
    )
}

/// One row of the check table: the claim and what was measured (at this size a row's target
/// says nothing, so the table holds only the numbers).
fn check_line(r: &Row) -> String {
    format!("{:<78} {:>10.4}", r.study, r.measured)
}

/// The stored study's first line, which scripts/study/simulation.sh copies from this test's
/// output: the size it ran at, said by the code that ran it.
fn study_header() -> String {
    format!("# scripts/study/simulation.sh: {FULL_REPS} replications, every row against its target")
}

/// One row as the study tables print it: the claim, what was measured, the target, ok/MISSED.
fn table_line(r: &Row) -> String {
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
    for r in forecast_study(runs) {
        println!("{}", table_line(&r));
    }
}

/// The stored simulation study: run at 4,000 replications, every row met its target, and
/// docs/statistics.md's table between its markers is exactly the stored one.
#[test]
fn the_stored_simulation_study_holds_every_row_and_the_docs_quote_it_whole() {
    let stored = stored_rows("simulation.txt", "");
    assert!(stored.len() >= 30, "{stored:#?}");
    let header = stored_text("simulation.txt");
    assert!(
        header.lines().next() == Some(study_header().as_str()),
        "the stored study ran at the size the docs claim: {}",
        header.lines().next().unwrap_or("")
    );
    for row in &stored {
        assert!(row.ends_with(" ok"), "a row that missed its target:\n{row}");
    }
    quoted_whole("simulation-study", "simulation.txt");
}

/// The stored forecast study: every process's half-way range held at the printed 90% by the
/// one-sided test, in 1,000 runs or more each, and docs/statistics.md's table between its
/// markers is exactly the stored one: a row typed by hand or one left out fails.
#[test]
fn the_stored_forecast_study_holds_its_level_and_the_docs_quote_it_whole() {
    let rows = stored_rows("forecast.txt", "forecast study");
    assert_eq!(rows.len(), 6, "one row per process:\n{rows:#?}");
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
    quoted_whole("forecast-study", "forecast.txt");
}

/// A stored study's text, `docs/study/{file}`.
fn stored_text(file: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("docs/study").join(file)).unwrap()
}

/// A stored study's rows (its lines past the header) that begin with `prefix`.
fn stored_rows(file: &str, prefix: &str) -> Vec<String> {
    stored_text(file)
        .lines()
        .filter(|l| !l.starts_with('#') && l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// docs/statistics.md quotes `docs/study/{file}` between its `marker` comments exactly: a row
/// typed there by hand, or one of the study's left out, fails.
fn quoted_whole(marker: &str, file: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/statistics.md")).unwrap();
    if let Err(e) = common::quoted_exactly(
        &docs,
        marker,
        &format!("docs/study/{file}"),
        &stored_text(file),
    ) {
        panic!("docs/statistics.md: {e}");
    }
}
