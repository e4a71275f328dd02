//! The statistics engine's simulation study at CI size (deterministic seeds): interval
//! coverage, A/A false positives under sequential stopping (with and without drift), runs to a
//! verdict versus the fixed designs, and power lost to outliers. The full table:
//! `cargo test --release --test stats_simulation -- --nocapture`.

#[test]
fn simulation_study_meets_its_targets() {
    let rows = hugelab::analyze::simulate::study(4000);
    for r in &rows {
        println!(
            "{:<78} {:>10.4}  {:<12} {}",
            r.study,
            r.measured,
            r.target,
            if r.pass { "ok" } else { "MISSED" }
        );
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.study.as_str())
        .collect();
    assert!(missed.is_empty(), "missed: {missed:?}");
    assert!(rows.len() >= 14);
}
