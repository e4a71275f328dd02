//! The warm design's burst schedules: duet (every arm's burst of a block at the same moment)
//! and alternating (one after another), seen in the stored trials' own start and end
//! timestamps; a schedule the run cannot honour is a usage error.

mod common;

use hugelab::store::{Store, TrialRow};

/// A run of two arms' fake servers (a shell that sleeps) with `extra`; its stored trials.
fn run(extra: &[&str], db: &std::path::Path) -> (serde_json::Value, Vec<TrialRow>) {
    let mut args = vec![
        "run",
        "--shell",
        "--server",
        "echo up {port}; exec sleep 321",
        "--ready",
        "log:^up",
        "-a",
        "a=",
        "-a",
        "b=env.X=1",
        "--blocks",
        "6",
        "--warmup",
        "0",
        "--json",
        "--db",
    ];
    let db_s = db.display().to_string();
    args.push(&db_s);
    args.extend(extra);
    args.extend(["--", "sleep 0.3"]);
    let v = common::hugelab_json(args);
    let (_, _, trials) = Store::open(db).unwrap().load(1).unwrap();
    (v, trials)
}

/// Text with its line breaks and indentation as single spaces.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Per block, the two arms' trials' [start, end] on the monotonic clock.
fn spans(trials: &[TrialRow]) -> Vec<[(u64, u64); 2]> {
    let mut by: std::collections::BTreeMap<i64, Vec<(u64, u64)>> = Default::default();
    for t in trials.iter().filter(|t| t.block >= 0) {
        let e = &t.evidence;
        by.entry(t.block).or_default().push((
            e["start_mono_ns"].as_u64().unwrap(),
            e["end_mono_ns"].as_u64().unwrap(),
        ));
    }
    by.into_values()
        .map(|v| {
            assert_eq!(v.len(), 2, "{v:?}");
            [v[0], v[1]]
        })
        .collect()
}

#[test]
fn duet_runs_every_arms_burst_at_once_and_alternating_one_after_another() {
    let dir = tempfile::tempdir().unwrap();
    // The default for a warm run: duet. Each block's two loads overlap in time.
    let (v, trials) = run(&[], &dir.path().join("duet.db"));
    assert_eq!(v["plan"]["server"]["design"], "warm");
    assert_eq!(v["plan"]["server"]["warm"]["schedule"], "duet");
    let blocks = spans(&trials);
    assert_eq!(blocks.len(), 6);
    for [a, b] in &blocks {
        assert!(a.0 < b.1 && b.0 < a.1, "not at once: {a:?} {b:?}");
    }
    for t in &trials {
        assert_eq!(t.evidence["duet"], true);
        // The other arm's load and server are not counted as the machine's noise.
        assert!(
            t.evidence["noise"]["other_cpu_ns"].is_u64(),
            "{}",
            t.evidence
        );
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("duet: the arms' bursts used"), "{notes}");
    // The answer says which schedule ran and why (lines wrapped at 100 columns, joined).
    let shown = words(&common::hugelab_stdout([
        "run",
        "--shell",
        "--server",
        "echo up {port}; exec sleep 321",
        "--ready",
        "log:^up",
        "-a",
        "a=",
        "-a",
        "b=env.X=1",
        "--blocks",
        "2",
        "--no-save",
        "--",
        "sleep 0.1",
    ]));
    assert!(
        shown.contains("every arm's burst of a block at the same moment (duet: the default"),
        "{shown}"
    );
    // Alternating: one load ends before the other starts.
    let (v, trials) = run(
        &["--schedule", "alternating"],
        &dir.path().join("alternating.db"),
    );
    assert_eq!(v["plan"]["server"]["warm"]["schedule"], "alternating");
    assert_eq!(
        v["plan"]["server"]["warm"]["schedule_reason"],
        "as asked (--schedule)"
    );
    for [a, b] in spans(&trials) {
        assert!(a.1 <= b.0 || b.1 <= a.0, "overlap: {a:?} {b:?}");
    }
    assert!(trials.iter().all(|t| t.evidence.get("duet").is_none()));
}

#[test]
fn an_operator_event_makes_the_schedule_alternating_and_says_why() {
    // A schedule the run cannot honour, asked for, is exit 2 (tests/bad_input.rs).
    let shown = words(&common::hugelab_stdout([
        "run",
        "--shell",
        "--server",
        "echo up {port}; exec sleep 322",
        "--ready",
        "log:^up",
        "--during",
        "true",
        "--during-at",
        "50ms",
        "--blocks",
        "2",
        "-a",
        "a=",
        "-a",
        "b=env.X=1",
        "--no-save",
        "--",
        "sleep 0.2",
    ]));
    assert!(
        shown.contains(
            "one arm's burst after another in random order (alternating: --during: one arm's event must not disturb another arm's burst)"
        ),
        "{shown}"
    );
}

#[test]
fn a_load_that_fills_the_machine_alone_alternates_unless_duet_is_asked_for() {
    // Each burst keeps every CPU busy for 0.4 s: two arms at once would need twice the machine.
    let burn = "for i in $(seq $(nproc)); do timeout 0.4 sh -c 'while :; do :; done' & done; wait";
    let dir = tempfile::tempdir().unwrap();
    let run_with = |extra: &[&str], name: &str| {
        let db = dir.path().join(name);
        let mut args = vec![
            "run",
            "--shell",
            "--server",
            "echo up {port}; exec sleep 323",
            "--ready",
            "log:^up",
            "-a",
            "a=",
            "-a",
            "b=env.X=1",
            "--blocks",
            "3",
            "--json",
            "--db",
        ];
        let db_s = db.display().to_string();
        args.push(&db_s);
        args.extend(extra);
        args.extend(["--", burn]);
        let v = common::hugelab_json(args);
        let (_, _, trials) = Store::open(&db).unwrap().load(1).unwrap();
        (v, trials)
    };
    let (v, trials) = run_with(&[], "default.db");
    let w = &v["plan"]["server"]["warm"];
    assert_eq!(w["schedule"], "alternating", "{w}");
    let why = w["schedule_reason"].as_str().unwrap();
    assert!(
        why.contains("duet would oversubscribe the machine: one arm's burst alone kept"),
        "{why}"
    );
    for [a, b] in spans(&trials) {
        assert!(a.1 <= b.0 || b.1 <= a.0, "overlap: {a:?} {b:?}");
    }
    // Asked for, the duet runs, and the run says the machine was saturated.
    let (v, trials) = run_with(&["--schedule", "duet"], "asked.db");
    assert_eq!(v["plan"]["server"]["warm"]["schedule"], "duet");
    for [a, b] in spans(&trials) {
        assert!(a.0 < b.1 && b.0 < a.1, "not at once: {a:?} {b:?}");
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("the machine is saturated"), "{notes}");
}
