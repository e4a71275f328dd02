//! The answer a reader gets: a service run's default output fits a screen and the person who
//! runs the service, and every number it prints is a field of the stored record.

mod common;

use common::postgres::{pg_bin, pg_cluster};

/// Every signed number the text prints (`+3.1%`, `[+0.3,`, `-4.3%`), with its decimals; a sign
/// inside a word (`hugetlb-2m`) is not one.
fn signed_numbers(text: &str) -> Vec<(f64, usize)> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| matches!(c, '[' | ']' | ',' | ';' | '(' | ')')))
        .filter_map(|w| {
            let w = w.strip_suffix('%').unwrap_or(w);
            let digits = w.strip_prefix(['+', '-'])?;
            if !digits.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len());
            Some((w.parse().ok()?, decimals))
        })
        .collect()
}

/// Every contrast's estimate and interval ends in a stored run's record, percent.
fn estimates(report: &serde_json::Value, out: &mut Vec<f64>) {
    for m in report["metrics"].as_array().into_iter().flatten() {
        for c in m["contrasts"].as_array().into_iter().flatten() {
            let p = &c[1]["percent"];
            out.extend(["point", "lo", "hi"].iter().filter_map(|k| p[k].as_f64()));
        }
    }
    for c in report["conditions"].as_array().into_iter().flatten() {
        estimates(&c["analysis"], out);
    }
}

#[test]
fn signed_numbers_are_read_with_their_decimals_and_arm_names_are_not_numbers() {
    assert_eq!(
        signed_numbers("hugetlb-2m vs off  tps +3.1% [+0.3, -5.80] @99.52% FASTER; ×15.6"),
        vec![(3.1, 1), (0.3, 1), (-5.8, 2)]
    );
}

#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: hugetlb pools, THP modes, runs PostgreSQL as postgres"
)]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn a_postgres_answer_fits_twelve_lines_and_prints_only_what_the_record_holds() {
    require_root!();
    let bin = pg_bin().expect("PostgreSQL is needed (.ci/run installs it)");
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let data = pg_cluster(&bin, dir.path(), port);
    let sock = dir.path().display().to_string();
    let server = format!(
        "{} -D {} -k {sock} -p {port} -c listen_addresses= -c shared_buffers=64MB",
        bin.join("postgres").display(),
        data.display()
    );
    let db = dir.path().join("r.db").display().to_string();
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "postgres",
        "--user",
        "postgres",
        "--server",
        &server,
        "--blocks",
        "6",
        "--db",
        &db,
        "--",
        "pgbench",
        "-S",
        "-T",
        "1",
        "-c",
        "2",
        "-h",
        &sock,
        "-p",
        &port.to_string(),
        "postgres",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() <= 12, "{} lines:\n{out}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
    }
    // One entry per arm, each naming its memory cost like with like; what advise would say.
    for arm in ["hugetlb-2m", "thp"] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(arm) && l.contains(" vs off  tps "))
            .unwrap_or_else(|| panic!("no line for {arm}:\n{out}"));
        let entry: String = lines[at..]
            .iter()
            .take_while(|l| l.starts_with(arm) || l.starts_with("  "))
            .flat_map(|l| l.split_whitespace())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(entry.contains("memory (segments whole) "), "{entry}");
        assert!(entry.contains("% huge"), "{entry}");
    }
    assert!(out.contains("advise (this run alone): "), "{out}");
    assert!(out.contains("hugelab results show 1"), "{out}");
    assert!(
        !out.contains("Kalibera") && !out.contains("design:") && !out.contains("note:"),
        "the design and the notes are behind --verbose:\n{out}"
    );
    // advise weighs the same like-with-like memory and says so.
    let advice = common::hugelab_stdout(["advise", "--for", "postgres", "--db", &db, "1"]);
    let words = advice.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("server memory (segments whole)"),
        "advise weighs the memory counted like with like:\n{advice}"
    );
    // Every signed percentage printed is a contrast's estimate in the stored record, to the
    // decimals printed.
    let record: serde_json::Value = serde_json::from_str(&common::hugelab_stdout([
        "results", "show", "1", "--json", "--db", &db,
    ]))
    .unwrap();
    let mut known = Vec::new();
    estimates(&record["report"], &mut known);
    assert!(!known.is_empty(), "{record}");
    let printed = signed_numbers(&out);
    assert!(printed.len() >= 4, "{out}");
    for (v, decimals) in printed {
        let tol = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
        assert!(
            known.iter().any(|k| (k - v).abs() <= tol),
            "{v} is printed but no contrast in the record is {v} (±{tol}):\n{out}"
        );
    }
}
