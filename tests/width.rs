//! Every human output fits in 100 columns at the default width (stdout not a terminal): each
//! command's `--help`, `status` and `status --explain` on this machine and on the fixture
//! kernels, a run's answer and its stored tables, `results list`, `advise`'s plan and `inspect`.

use crate::common;
use std::process::Command;

const WIDTH: usize = 100;

fn assert_fits(what: &str, text: &str) {
    let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > WIDTH).collect();
    assert!(
        long.is_empty(),
        "{what}: {} lines over {WIDTH} columns, e.g.\n{}",
        long.len(),
        long.iter().take(3).copied().collect::<Vec<_>>().join("\n")
    );
}

fn output(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn every_commands_help_fits() {
    let commands = [
        "status",
        "bench",
        "run",
        "results",
        "compare",
        "import",
        "report",
        "advise",
        "inspect",
        "top",
        "collapse",
        "trace",
        "exporter",
        "judge",
        "hold-memory",
        "restore",
        "man",
        "completions",
    ];
    assert_fits("hugelab --help", &output(&["--help"]));
    for c in commands {
        let help = output(&[c, "--help"]);
        assert!(help.contains("Usage:"), "{c}: {help}");
        assert_fits(&format!("hugelab {c} --help"), &help);
    }
    for c in ["list", "show", "export"] {
        assert_fits(
            &format!("results {c} --help"),
            &output(&["results", c, "--help"]),
        );
    }
}

#[test]
fn status_fits_here_and_on_the_fixture_kernels() {
    assert_fits("status", &output(&["status"]));
    assert_fits("status --explain", &output(&["status", "--explain"]));
    for kernel in ["linux-6.18", "linux-4.19-old"] {
        let root = common::fixture(kernel);
        let root = root.to_str().unwrap();
        let text = output(&["status", "--explain", "--root", root]);
        assert!(text.contains("khugepaged"), "{kernel}: {text}");
        assert_fits(&format!("status --explain on {kernel}"), &text);
    }
}

#[test]
fn a_run_its_stored_tables_the_list_advice_and_inspect_fit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let db = db.to_str().unwrap();
    let run = output(&[
        "run",
        "--arm",
        "4k=process.thp=off",
        "--arm",
        "thp=malloc=thp",
        "--blocks",
        "3",
        "--db",
        db,
        "--",
        "python3",
        "-c",
        "b = bytearray(64 << 20)",
    ]);
    assert!(run.contains("stored as run 1"), "{run}");
    assert_fits("run", &run);
    assert_fits(
        "results show",
        &output(&["results", "show", "1", "--db", db]),
    );
    assert_fits("results list", &output(&["results", "list", "--db", db]));
    assert_fits("advise", &output(&["advise", "--db", db]));
    let held = common::hold_memory(&["--backing", "thp", "--size", "16M", "--seconds", "30"]);
    let inspect = output(&["inspect", &held.id().to_string()]);
    drop(held);
    assert!(inspect.contains("hugelab"), "{inspect}");
    assert_fits("inspect", &inspect);
}
