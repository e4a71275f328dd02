//! Bad input across every subcommand: each case exits with its documented code (2 for usage
//! errors found before anything runs or is stored, 1 for errors met later) and a message that
//! names the value; none may panic (101) or pass (0). Nothing is stored for a usage error.

use assert_cmd::Command;

/// (arguments, exit code, a fragment of stderr). `DB` is replaced by a fresh database path,
/// `DIR` by a temporary directory.
const CASES: &[(&[&str], i32, &str)] = &[
    // run: arms
    (
        &["run", "--arm", "a=", "--", "true"],
        2,
        "at least two arms",
    ),
    (
        &["run", "--arm", "a=", "--arm", "a=", "--", "true"],
        2,
        "two arms are named \"a\"",
    ),
    (
        &[
            "run",
            "--arm",
            "a=thp=sometimes",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "invalid value \"sometimes\"",
    ),
    (
        &["run", "--arm", "a=swap=on", "--arm", "b=", "--", "true"],
        2,
        "unknown key \"swap\"",
    ),
    (
        &["run", "--arm", "noequals", "--arm", "b=", "--", "true"],
        2,
        "\"noequals\": expected NAME=SPEC",
    ),
    (
        &["run", "--arm", "a=collapse=2s", "--arm", "b=", "--", "true"],
        2,
        "after:<duration>",
    ),
    (
        &[
            "run",
            "--arm",
            "a=collapse=after:soon",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "soon",
    ),
    (
        &[
            "run",
            "--arm",
            "a=mthp.3k=always",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "mthp.3K: this kernel has no such mTHP size",
    ),
    (
        &[
            "run",
            "--arm",
            "a=hugetlb.3M=4",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "hugetlb.3M: this kernel has no hugetlb pool",
    ),
    (
        &[
            "run",
            "--arm",
            "a=hugetlb.2M=many",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "\"many\" is not a page count",
    ),
    (
        &[
            "run",
            "--arm",
            "a=malloc=jemalloc",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "\"jemalloc\"",
    ),
    (
        &["run", "--arm", "a=expect=2m", "--arm", "b=", "--", "true"],
        2,
        "valid: 4k, thp",
    ),
    (
        &[
            "run",
            "--arm",
            "a=shmem=sometimes",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "within_size",
    ),
    (
        &["run", "--arm", "a=server.arg=", "--arm", "b=", "--", "true"],
        2,
        "server.arg",
    ),
    (
        &[
            "run",
            "--arm",
            "a=qemu.prealloc=on",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "needs qemu.backing",
    ),
    (
        &[
            "run",
            "--arm",
            "a=qemu.backing=2m",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "valid: 4k, thp, hugetlb-2m",
    ),
    (
        &["run", "--arm", "a=watch=", "--arm", "b=", "--", "true"],
        2,
        "PID or a process name",
    ),
    (
        &["run", "--arm", "bad name=", "--arm", "b=", "--", "true"],
        2,
        "arm name \"bad name\"",
    ),
    (
        &["run", "--preset", "db", "--", "true"],
        2,
        "unknown preset \"db\"",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--baseline",
            "c",
            "--",
            "true",
        ],
        2,
        "--baseline \"c\" is not an arm",
    ),
    (
        &[
            "run",
            "--arm",
            "a=hugetlb.2M=99999999",
            "--arm",
            "b=",
            "--",
            "true",
        ],
        2,
        "more than this machine's memory",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--effect", "-0.5", "--", "true",
        ],
        2,
        "-0.5 is outside",
    ),
    // run: options
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--user",
            "no-such-user-xyz",
            "--",
            "true",
        ],
        2,
        "--user \"no-such-user-xyz\": no such user",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--cwd",
            "/no/such/dir",
            "--",
            "true",
        ],
        2,
        "--cwd /no/such/dir: not a directory",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--metric",
            "x=([0-9]+),sideways",
            "--",
            "true",
        ],
        2,
        "unknown direction \"sideways\"",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--metric", "x=[0-9]+", "--", "true",
        ],
        2,
        "capture group",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--metric", "x=(", "--", "true",
        ],
        2,
        "invalid regex",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--metric",
            "wall_s=(1)",
            "--",
            "true",
        ],
        2,
        "\"wall_s\" is empty or reserved",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--metric",
            "nosuchformat",
            "--",
            "true",
        ],
        2,
        "\"nosuchformat\": not NAME=REGEX",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--metric", "x=(1)", "--metric", "x=(2)", "--",
            "true",
        ],
        2,
        "two metrics are named \"x\"",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--env", "=x", "--", "true",
        ],
        2,
        "\"=x\" has no NAME",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--env", "novalue", "--", "true",
        ],
        2,
        "\"novalue\" is not NAME=VALUE",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--timeout",
            "0",
            "--",
            "true",
        ],
        2,
        "\"0\" is zero",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--max-time",
            "0s",
            "--",
            "true",
        ],
        2,
        "\"0s\" is zero",
    ),
    (
        &["run", "--arm", "a=", "--calibrate", "0", "--", "true"],
        2,
        "\"0\" is zero",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--timeout",
            "5x",
            "--",
            "true",
        ],
        2,
        "unknown unit \"x\"",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--sample-every",
            "0ms",
            "--",
            "true",
        ],
        2,
        "\"0ms\" is zero",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--blocks", "1", "--", "true",
        ],
        2,
        "--blocks must be at least 2",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--blocks", "-1", "--", "true",
        ],
        2,
        "-1 is not a count",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--warmup", "-2", "--", "true",
        ],
        2,
        "-2 is negative",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--confidence",
            "1.5",
            "--",
            "true",
        ],
        2,
        "1.5 is outside 0.5–0.9999",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--effect", "0", "--", "true",
        ],
        2,
        "0 is outside 0.0001–0.5",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--effect", "abc", "--", "true",
        ],
        2,
        "\"abc\" is not a number",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--looks", "3", "--", "true",
        ],
        2,
        "--looks needs --blocks",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--looks", "5", "--blocks", "6", "--", "true",
        ],
        2,
        "at least 10",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--sequential",
            "--blocks",
            "3",
            "--",
            "true",
        ],
        2,
        "--sequential needs --blocks of at least",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--pin", "4095", "--", "true",
        ],
        2,
        "--pin 4095",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--fail-on",
            "faster",
            "--",
            "true",
        ],
        2,
        "'faster'",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--trace",
            "nosuchkind",
            "--",
            "true",
        ],
        2,
        "nosuchkind",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--no-save",
            "--db",
            "DB",
            "--",
            "true",
        ],
        2,
        "cannot be used with",
    ),
    (&["run", "--arm", "a=", "--arm", "b="], 2, "required"),
    // run --server
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--server",
            "no-such-server-xyz",
            "--ready",
            "tcp:127.0.0.1:1",
            "--",
            "true",
        ],
        2,
        "\"no-such-server-xyz\" not found",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--server", "true", "--", "true",
        ],
        2,
        "--server needs --ready",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--server", "true", "--ready", "http://x", "--",
            "true",
        ],
        2,
        "unknown kind \"http\"",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--server",
            "true",
            "--ready",
            "tcp:h:99999",
            "--",
            "true",
        ],
        2,
        "port 1–65535",
    ),
    (
        &[
            "run", "--arm", "a=", "--arm", "b=", "--server", "true", "--ready", "log:(", "--",
            "true",
        ],
        2,
        "invalid regex",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--ready",
            "tcp:127.0.0.1:1",
            "--",
            "true",
        ],
        2,
        "need --server",
    ),
    (
        &["run", "--preset", "postgres", "--", "true"],
        2,
        "give --server",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--server",
            "true",
            "--ready",
            "tcp:127.0.0.1:1",
            "--ready-timeout",
            "0",
            "--",
            "true",
        ],
        2,
        "\"0\" is zero",
    ),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--server",
            "true",
            "--ready",
            "tcp:127.0.0.1:1",
            "--",
            "redis-benchmark",
            "-t",
            "set",
        ],
        2,
        "--csv",
    ),
    // bench
    (&["bench", "--backings", ""], 2, "--backings is empty"),
    (&["bench", "--backings", "nosuch"], 2, "nosuch"),
    (&["bench", "nosuchworkload"], 2, "nosuchworkload"),
    (
        &[
            "bench",
            "touch",
            "--sizes",
            "18446744073709551615",
            "--backings",
            "4k",
        ],
        2,
        "is more than MemAvailable",
    ),
    (
        &["bench", "touch", "--sizes", "1K", "--backings", "4k"],
        2,
        "below one 4 KiB page",
    ),
    (
        &["bench", "touch", "--sizes", "12Q", "--backings", "4k"],
        2,
        "12Q",
    ),
    (&["bench", "--iteration-time", "0"], 2, "\"0\" is zero"),
    (&["bench", "--rounds", "0"], 2, "0 is not a count"),
    (&["bench", "--threads", "-1"], 2, "-1 is not a count"),
    (&["bench", "--confidence", "2"], 2, "outside 0.5–0.9999"),
    // status, trace, top, exporter, inspect, collapse, hold-memory
    (&["status", "--interval", "0"], 2, "\"0\" is zero"),
    (&["status", "--count", "3"], 2, "--interval"),
    (
        &["status", "--interval", "1s", "--count", "0"],
        2,
        "0 is not a count",
    ),
    (&["trace", "--duration", "0"], 2, "\"0\" is zero"),
    (&["trace", "--interval", "-1s"], 2, "\"-1s\" is negative"),
    (
        &[
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--timeout",
            "-5s",
            "--",
            "true",
        ],
        2,
        "\"-5s\" is negative",
    ),
    (&["top", "-n", "0"], 2, "0 is not a count"),
    (&["top", "--sort", "speed"], 2, "'speed'"),
    (
        &["exporter", "--listen", "nonsense", "--once"],
        2,
        "--listen \"nonsense\" is not an address:port",
    ),
    (&["inspect"], 2, "give one or more PIDs"),
    (
        &["inspect", "--name", "no-such-process-xyz"],
        2,
        "no process named \"no-such-process-xyz\"",
    ),
    (&["inspect", "notapid"], 2, "notapid"),
    (&["collapse"], 2, "required"),
    (
        &[
            "hold-memory",
            "--backing",
            "4k",
            "--size",
            "18446744073709551615",
            "--seconds",
            "0",
        ],
        1,
        "overflows the address space",
    ),
    (
        &["hold-memory", "--backing", "4k", "--size", "lots"],
        2,
        "lots",
    ),
    // results, import, compare, report: read-only commands name the missing database
    (
        &["results", "list", "--db", "DIR/missing/none.db"],
        1,
        "no results database at DIR/missing/none.db",
    ),
    (
        &["results", "show", "1", "--db", "DIR/missing/none.db"],
        1,
        "no results database",
    ),
    (
        &["report", "1", "--db", "DIR/missing/none.db"],
        1,
        "no results database",
    ),
    (
        &["compare", "1", "2", "--effect", "2"],
        2,
        "outside 0.0001–0.5",
    ),
    (
        &["import", "DIR/no-such-file.json", "--db", "DB"],
        1,
        "cannot read DIR/no-such-file.json",
    ),
    (&["advise", "--for", "fleet"], 2, "invalid value 'fleet'"),
    (&["advise", "--format", "yaml"], 2, "invalid value 'yaml'"),
    (
        &["advise", "--db", "DIR/missing/none.db"],
        1,
        "no results database",
    ),
    (
        &["advise", "--check", "DIR/none.json"],
        2,
        "--check DIR/none.json",
    ),
    (
        &["advise", "--check", "DIR/none.json", "1"],
        2,
        "cannot be used with",
    ),
    (&["advise", "--effect", "0"], 2, "outside 0.0001–0.5"),
];

#[test]
fn every_bad_input_exits_with_its_code_and_names_the_value() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let db = dir.path().join("r.db").display().to_string();
    let mut failures = Vec::new();
    for (args, code, want) in CASES {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("DIR", &d).replace("DB", &db))
            .collect();
        let want = want.replace("DIR", &d);
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .env("XDG_DATA_HOME", dir.path())
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(*code) || !err.contains(&want) {
            failures.push(format!(
                "{args:?}: exit {:?} (want {code}), stderr: {}",
                out.status.code(),
                err.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
    assert!(
        !dir.path().join("r.db").exists(),
        "a usage error stored something"
    );
    assert!(
        !dir.path().join("hugelab").exists(),
        "nothing stored in the default database"
    );
}
