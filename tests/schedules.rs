//! The warm design's burst schedules: duet (every arm's burst of a block at the same moment)
//! and alternating (one after another), seen in the stored trials' own start and end
//! timestamps; a schedule the run cannot honour is a usage error.

use crate::common;
use hugelab::store::{Store, TrialRow};

/// The arguments of a run of two arms' fake servers (a shell that sleeps `tag` seconds, so
/// each test's servers are told apart) with `extra`, and `load` as the load.
fn fake_run(tag: &str, extra: &[&str], load: &str) -> Vec<String> {
    let server = format!("echo up {{port}}; exec sleep {tag}");
    let mut args: Vec<String> = ["run", "--shell", "--server", &server, "--ready", "log:^up"]
        .into_iter()
        .chain(["-a", "a=", "-a", "b=env.X=1"])
        .chain(extra.iter().copied())
        .map(String::from)
        .collect();
    args.extend(["--".to_string(), load.to_string()]);
    args
}

/// A stored run of [`fake_run`]'s servers over `blocks` blocks: its JSON answer, stored plan
/// and trials.
fn stored_run(
    tag: &str,
    blocks: &str,
    extra: &[&str],
    load: &str,
    db: &std::path::Path,
) -> (serde_json::Value, serde_json::Value, Vec<TrialRow>) {
    let db_s = db.display().to_string();
    let mut all = vec!["--blocks", blocks, "--json", "--db", &db_s];
    all.extend(extra);
    let v = common::hugelab_json(fake_run(tag, &all, load));
    let (meta, _, trials) = Store::open(db).unwrap().load(1).unwrap();
    (v, serde_json::to_value(&meta.plan).unwrap(), trials)
}

/// Six blocks of 0.3 s loads, no warm-up, with `extra`.
fn run(extra: &[&str], db: &std::path::Path) -> (serde_json::Value, Vec<TrialRow>) {
    let mut all = vec!["--warmup", "0"];
    all.extend(extra);
    let (v, _, trials) = stored_run("321", "6", &all, "sleep 0.3", db);
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
        let o = &t.evidence.outcome;
        by.entry(t.block)
            .or_default()
            .push((o.start_mono_ns, o.end_mono_ns));
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
    // Duet (a warm run's default where the machine has room; here asked for, since beside a
    // busy machine the default is alternating): each block's two loads overlap in time (one
    // replica: replicas have a test of their own).
    let (v, trials) = run(
        &["--replicas", "1", "--schedule", "duet"],
        &dir.path().join("duet.db"),
    );
    assert_eq!(v["plan"]["server"]["design"], "warm");
    assert_eq!(v["plan"]["server"]["warm"]["schedule"], "duet");
    let blocks = spans(&trials);
    assert_eq!(blocks.len(), 6);
    for [a, b] in &blocks {
        assert!(a.0 < b.1 && b.0 < a.1, "not at once: {a:?} {b:?}");
    }
    for t in &trials {
        assert!(t.evidence.duet);
        // The other arm's load and server are not counted as the machine's noise.
        assert!(t.evidence.gathered.noise.is_some(), "{:?}", t.evidence);
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("duet: the arms' bursts used"), "{notes}");
    // The answer says which schedule ran and why (lines wrapped at 100 columns, joined).
    // The design is behind --verbose in a service run's answer.
    let shown = words(&common::hugelab_stdout(fake_run(
        "321",
        &["--blocks", "2", "--no-save", "--verbose"],
        "sleep 0.1",
    )));
    // Duet by default; alternating where the rest of the machine leaves no room for both
    // bursts at once (a busy machine), which the answer says with the figures.
    assert!(
        shown.contains("every arm's burst of a block at the same moment (duet: the default")
            || shown.contains(
                "(alternating: duet would oversubscribe the machine: one arm's burst alone kept"
            ),
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
    assert!(trials.iter().all(|t| !t.evidence.duet));
}

#[test]
fn replicas_run_every_replicas_pair_at_once_each_in_lifetimes_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("replicas.db");
    let extra = ["--warmup", "0", "--replicas", "3", "--lifetime-blocks", "2"];
    let (v, stored, trials) = stored_run("327", "4", &extra, "sleep 0.3", &db);
    assert_eq!(v["plan"]["server"]["warm"]["replicas"], 3);
    assert_eq!(stored["server"]["warm"]["replicas"], 3);
    // Lifetimes given, not sized: nothing was forecast.
    assert!(
        stored["server"]["warm"].get("forecast").is_none(),
        "{stored}"
    );
    // 4 blocks of 3 replicas: 12 stored blocks of two arms.
    assert_eq!(trials.len(), 4 * 3 * 2);
    let mut rounds: std::collections::BTreeMap<i64, Vec<&TrialRow>> = Default::default();
    for t in &trials {
        rounds.entry(t.block / 3).or_default().push(t);
    }
    assert_eq!(rounds.len(), 4);
    for (round, ts) in &rounds {
        // Every replica's every arm's burst at once.
        let start = ts.iter().map(|t| t.evidence.outcome.start_mono_ns);
        let end = ts.iter().map(|t| t.evidence.outcome.end_mono_ns);
        assert!(start.max() < end.min(), "round {round} not at once");
        let mut seats: Vec<(i64, i64, usize, usize, i32)> = ts
            .iter()
            .map(|t| {
                let e = &t.evidence;
                (
                    t.block,
                    t.arm_idx,
                    e.replica.unwrap(),
                    e.lifetime.unwrap(),
                    e.server.as_ref().unwrap().pid.unwrap(),
                )
            })
            .collect();
        seats.sort_unstable();
        for (i, (block, _, replica, lifetime, _)) in seats.iter().enumerate() {
            // Blocks numbered apart per replica, each replica its own lifetime: the lifetime
            // restarted every 2 blocks is numbered replica by replica.
            let r = i / 2;
            assert_eq!((*block, *replica), (round * 3 + r as i64, r), "{seats:?}");
            assert_eq!(*lifetime, (*round as usize / 2) * 3 + r, "{seats:?}");
        }
        // Six servers, one per arm and replica.
        let pids: std::collections::BTreeSet<i32> = seats.iter().map(|s| s.4).collect();
        assert_eq!(pids.len(), 6, "{seats:?}");
    }
    // The intervals are over the restarts, each its replicas' lifetimes together (what a
    // restart did falls on all of them): 2 restarts; the components count every replica's 6
    // lifetimes and say the replicas.
    let m = &v["report"]["metrics"][0];
    assert_eq!(m["lifetimes"], 2, "{}", v["report"]);
    let c = &m["components"][0][1];
    assert_eq!(
        (&c["lifetimes"], &c["replicas"]),
        (&6.into(), &3.into()),
        "{c}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("replicas 3: as asked (--replicas)"),
        "{notes}"
    );
    // Without --replicas, a load that leaves the machine idle gets as many as it has room for,
    // with the reason: one where the rest of the machine left no room (a busy machine).
    let (v, _, _) = stored_run(
        "328",
        "2",
        &["--warmup", "0"],
        "sleep 0.2",
        &dir.path().join("auto.db"),
    );
    let n = v["plan"]["server"]["warm"]["replicas"].as_u64().unwrap();
    let notes = v["notes"].to_string();
    // On a machine the rest keeps busy (CI's compiles beside the suite) the arms alternate
    // instead, one replica, and the answer says why.
    let alternates = n == 1
        && notes.contains("replicas 1: the run alternates")
        && notes.contains("duet would oversubscribe the machine");
    assert!(
        notes.contains(&format!("replicas {n}: bound by")) || alternates,
        "{notes}"
    );
    assert!(
        n > 1 || alternates || notes.contains("CPUs the rest of the machine left hold 1 ("),
        "{notes}"
    );
    // --server-data: every server (each arm's, each replica's) starts on a copy of its own
    // in {dir}/data — here it needs the marker and then overwrites it — and the original is
    // only read.
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("marker"), "original").unwrap();
    let server = "grep -q original {dir}/data/marker && echo mine > {dir}/data/marker && echo up {port} && exec sleep 330";
    let args: Vec<String> = ["run", "--shell", "--server", server, "--ready", "log:^up"]
        .into_iter()
        .chain([
            "--server-data",
            &data.display().to_string(),
            "--replicas",
            "2",
        ])
        .chain(["-a", "a=", "-a", "b=env.X=1", "--blocks", "2", "--json"])
        .chain(["--no-save", "--warmup", "0", "--", "sleep 0.1"])
        .map(String::from)
        .collect();
    let v = common::hugelab_json(args);
    assert_eq!(v["plan"]["server"]["warm"]["replicas"], 2);
    assert_eq!(v["blocks_done"], 2, "{}", v["stop_reason"]);
    assert_eq!(
        std::fs::read_to_string(data.join("marker")).unwrap(),
        "original"
    );
    // A server whose path is built from {arm} alone (here a lock file per arm) would share it
    // with the arm's other replicas: one replica, said before any server starts, naming it.
    let lock = dir.path().join("lock");
    let fake = |server: &str, extra: &[&str]| -> Vec<String> {
        ["run", "--shell", "--server", server, "--ready", "log:^up"]
            .into_iter()
            .chain(["-a", "a=", "-a", "b=env.X=1", "--blocks", "2", "--json"])
            .chain(extra.iter().copied())
            .chain(["--no-save", "--warmup", "0", "--", "sleep 0.1"])
            .map(String::from)
            .collect()
    };
    let by_arm = format!(
        "exec flock -n {}-{{arm}} sh -c 'echo up {{port}}; exec sleep 328'",
        lock.display()
    );
    let v = common::hugelab_json(fake(&by_arm, &[]));
    assert_eq!(v["plan"]["server"]["warm"]["replicas"], 1);
    let notes = words(&v["notes"].to_string());
    let path = format!("{}-a", lock.display());
    assert!(
        notes.contains(&format!(
            "replicas 1: arm a's server or load names {path} for every replica"
        )) && notes.contains("write {replica} or {dir}"),
        "{notes}"
    );
    // Asked for, it is bad input: refused before anything runs, naming the path and the fix.
    let err = common::hugelab_stderr(fake(&by_arm, &["--replicas", "2"]), 2);
    assert!(
        err.contains("--replicas 2") && err.contains(&path) && err.contains("{replica}"),
        "{err}"
    );
    // With {replica}, several run at once (three, asked for: the machine's room is another
    // test's), and no two servers share a lock: each left its own.
    let by_replica = format!(
        "exec flock -n {}-{{arm}}-{{replica}} sh -c 'echo up {{port}}; exec sleep 328'",
        lock.display()
    );
    let v = common::hugelab_json(fake(&by_replica, &["--replicas", "3"]));
    let n = v["plan"]["server"]["warm"]["replicas"].as_u64().unwrap();
    assert_eq!(n, 3, "{}", v["notes"]);
    let locks: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| f.starts_with("lock-") && f.matches('-').count() == 2)
        .collect();
    assert_eq!(locks.len() as u64, 2 * n, "{locks:?}");
    // A further replica's server that does not come up for its own reason: one replica, and
    // the note quotes the server's own words (which replica's came first: they start at once).
    let fails = "test {replica} = 1 || { echo 'refusing replica {replica}: disk full' >&2; exit 3; }; echo up {port}; exec sleep 327";
    let v = common::hugelab_json(fake(fails, &[]));
    assert_eq!(v["plan"]["server"]["warm"]["replicas"], 1);
    let notes = v["notes"].to_string();
    if notes.contains("replicas 1: the run alternates") {
        // A machine the rest keeps busy: the arms alternate and no further replica is tried.
        common::skipped_core(
            "schedules::replicas_run_every_replicas_pair_at_once_each_in_lifetimes_of_its_own",
            "the machine was busy, so the arms alternated and no further replica was tried",
        );
    } else {
        assert!(
            notes.contains("but a further replica's server of arm")
                && notes.contains("its last line: refusing replica ")
                && notes.contains(": disk full; the run goes on with one"),
            "{notes}"
        );
    }
    // Asked for, they are not given up: the run fails, saying which server did not come up.
    let out = common::hugelab_exits(fake(fails, &["--replicas", "2"]), 4);
    assert!(out.contains("did not come up"), "{out}");
    // Replicas run at once: not with an alternating schedule.
    let err = common::hugelab_stderr(
        fake_run(
            "329",
            &["--replicas", "2", "--schedule", "alternating", "--no-save"],
            "true",
        ),
        2,
    );
    assert!(
        err.contains("--replicas runs every replica's burst"),
        "{err}"
    );
}

/// The lifetime sizing's forecasts of the half-width — after the pilot, with the range its
/// few degrees of freedom allow, and at the last sizing — are kept in the run's record and
/// said beside the half-width the run reached.
#[test]
fn the_sizings_forecasts_are_kept_and_said_beside_the_half_width_reached() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("forecast.db");
    let db_s = db.display().to_string();
    let extra = [
        "--blocks",
        "16",
        "--warmup",
        "0",
        "--replicas",
        "1",
        "--verbose",
    ];
    let extra: Vec<&str> = extra.into_iter().chain(["--db", &db_s]).collect();
    // Loads of 0.10–0.18 s (by the shell's pid): a spread to forecast from.
    let out = common::hugelab_stdout(fake_run("329", &extra, "sleep 0.1$(($$ % 9))"));
    let (meta, _, _) = Store::open(&db).unwrap().load(1).unwrap();
    let plan = serde_json::to_value(&meta.plan).unwrap();
    let f = &plan["server"]["warm"]["forecast"];
    let (pilot, last) = (&f["pilot"], &f["last"]);
    // The pilot: three lifetimes of two blocks, so a range around it on Satterthwaite's
    // degrees of freedom, which lie between the fewer of its two parts' (2 between lifetimes,
    // 3 within them) and their sum, as the spread splits between them.
    assert_eq!(
        (pilot["lifetimes"].as_u64(), pilot["blocks"].as_u64()),
        (Some(3), Some(6)),
        "{f}"
    );
    let df = pilot["df"].as_u64().unwrap();
    assert!((2..=5).contains(&df), "{f}");
    let h = pilot["half_width"].as_f64().unwrap();
    let (lo, hi) = (
        pilot["range"][0].as_f64().unwrap(),
        pilot["range"][1].as_f64().unwrap(),
    );
    assert!(0.0 < lo && lo < h && h < hi, "{f}");
    assert!(last["blocks"].as_u64() >= pilot["blocks"].as_u64(), "{f}");
    let said = words(&out);
    let line = said
        .split("precision (wall_s): reached ")
        .nth(1)
        .unwrap_or_else(|| panic!("no precision line: {out}"));
    assert!(line.starts_with("b ±"), "{line}");
    assert!(
        line.contains(&format!("±{:.1}% after the pilot", h * 100.0))
            && line.contains(&format!(
                "±{:.1}–{:.1}% as {df} degrees of freedom allow a normal spread, 90%",
                lo * 100.0,
                hi * 100.0
            )),
        "{line}"
    );
    // The stored run says it too, with its design and the notes the run printed.
    let shown = words(&common::hugelab_stdout([
        "results", "show", "--db", &db_s, "1",
    ]));
    assert!(
        shown.contains("design: warm — every arm's server up at once"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("±{:.1}% after the pilot", h * 100.0)),
        "{shown}"
    );
    assert!(shown.contains("note: lifetimes of "), "{shown}");
    // And each arm's server, from the stored trials.
    assert!(
        shown.contains("server a 0% huge of") && shown.contains("server b 0% huge of"),
        "{shown}"
    );
    // The markdown report (and the HTML one, from the same lines) says the same.
    let md_path = dir.path().join("report.md");
    let md_s = md_path.display().to_string();
    common::hugelab_stdout(["report", "--db", &db_s, "1", "--format", "md", "-o", &md_s]);
    let md = words(&std::fs::read_to_string(&md_path).unwrap());
    assert!(
        md.contains("design: warm — every arm's server up at once"),
        "{md}"
    );
    assert!(
        md.contains(&format!("±{:.1}% after the pilot", h * 100.0)),
        "{md}"
    );
}

#[test]
fn an_operator_event_makes_the_schedule_alternating_and_says_why() {
    // A schedule the run cannot honour, asked for, is exit 2 (tests/bad_input.rs).
    let shown = words(&common::hugelab_stdout(fake_run(
        "322",
        &[
            "--during",
            "true",
            "--during-at",
            "50ms",
            "--blocks",
            "2",
            "--no-save",
            "--verbose",
        ],
        "sleep 0.2",
    )));
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
    let run_with =
        |extra: &[&str], name: &str| stored_run("323", "3", extra, burn, &dir.path().join(name));
    let (v, stored, trials) = run_with(&[], "default.db");
    let w = &v["plan"]["server"]["warm"];
    assert_eq!(w["schedule"], "alternating", "{w}");
    // The stored plan says what ran, and why, not what was planned.
    for field in ["schedule", "schedule_reason"] {
        assert_eq!(stored["server"]["warm"][field], w[field], "{field}");
    }
    let why = w["schedule_reason"].as_str().unwrap();
    assert!(
        why.contains("duet would oversubscribe the machine: one arm's burst alone kept"),
        "{why}"
    );
    for [a, b] in spans(&trials) {
        assert!(a.1 <= b.0 || b.1 <= a.0, "overlap: {a:?} {b:?}");
    }
    // Asked for, the duet runs, and the run says the machine was saturated.
    let (v, _, trials) = run_with(&["--schedule", "duet"], "asked.db");
    assert_eq!(v["plan"]["server"]["warm"]["schedule"], "duet");
    for [a, b] in spans(&trials) {
        assert!(a.0 < b.1 && b.0 < a.1, "not at once: {a:?} {b:?}");
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("the machine is saturated"), "{notes}");
}

#[test]
fn an_event_that_never_ran_or_always_failed_is_counted_and_fails_the_run() {
    // The load (0.1 s) ends before the event's moment (5 s): it never runs.
    let late = words(&common::hugelab_exits(
        fake_run(
            "324",
            &[
                "--during",
                "true",
                "--during-at",
                "5s",
                "--blocks",
                "2",
                "--no-save",
            ],
            "sleep 0.1",
        ),
        4,
    ));
    for arm in ["a", "b"] {
        assert!(
            late.contains(&format!(
                "--during did not run in 2 of 2 trials of {arm}: the load ended at"
            )),
            "{late}"
        );
    }
    assert!(
        late.contains("the --during event ran successfully in no trial of a, b"),
        "{late}"
    );
    // The event's command fails every time: counted with its own words.
    let failing = "echo Could not connect to 127.0.0.1:1; exit 1";
    let failed = words(&common::hugelab_exits(
        fake_run(
            "325",
            &[
                "--during",
                failing,
                "--during-at",
                "50ms",
                "--blocks",
                "2",
                "--no-save",
            ],
            "sleep 0.2",
        ),
        4,
    ));
    assert!(
        failed.contains("--during failed in 2 of 2 trials of a: Could not connect to 127.0.0.1:1"),
        "{failed}"
    );
    // --keep-going analyses such a run anyway, and still says so.
    let kept = words(&common::hugelab_stdout(fake_run(
        "326",
        &[
            "--during",
            failing,
            "--during-at",
            "50ms",
            "--blocks",
            "2",
            "--no-save",
            "--keep-going",
        ],
        "sleep 0.2",
    )));
    assert!(
        kept.contains("--during failed in 2 of 2 trials of b"),
        "{kept}"
    );
}

/// With room for a second burst length (`--max-time` long enough for 30 lifetimes at it), the
/// pilot's three lifetimes run bursts of the fixed cost's length and of the second (3× it, or
/// a third of it past 3 s: 1, 3, 3, 1 s here), every trial stores its length, and the run goes
/// on at the length the noise chose, with the choice in its record and its design line;
/// without that room the run keeps one length and says why.
#[test]
fn the_pilot_measures_two_burst_lengths_where_a_longer_burst_could_be_chosen() {
    let dir = tempfile::tempdir().unwrap();
    // A rate whose noise a longer burst averages (8%/√burst), after a burst of sleep.
    let load = r#"sleep {burst}; awk -v s=$(date +%N) -v b={burst} 'BEGIN{srand(s); u=rand(); v=rand(); z=sqrt(-2*log(u+1e-12))*cos(6.283185*v); printf "tps=%f\n", 1000*exp(0.08*z/sqrt(b))}'"#;
    let extra = [
        "--warmup",
        "0",
        "--replicas",
        "1",
        "--metric",
        "tps=tps=([0-9.]+),higher",
    ];
    // Room for 30 lifetimes at the longer length also on a host slow enough to spend 2.5 s
    // starting the load (bursts of 10 s, lifetimes of about 25 s): 10m was not, once.
    let long: Vec<&str> = extra.iter().copied().chain(["--max-time", "30m"]).collect();
    let db = dir.path().join("two.db");
    let (v, plan, trials) = stored_run("331", "13", &long, load, &db);
    assert_eq!(v["blocks_done"], 13, "{}", v["stop_reason"]);
    let choice = &plan["server"]["warm"]["burst_choice"];
    // The base length is the one the load's fixed cost chose (1 s here; longer on a host slow
    // enough to spend over 50 ms starting `awk`: 8 s where a loaded CI host spent 350 ms),
    // and the pilot's second is 3× it, or a third of it past 3 s.
    let base = choice["by_fixed_cost"].as_u64().unwrap();
    let second = hugelab::analyze::lifetimes::design::second_length(base);
    let lengths = &choice["pilot"]["lengths"];
    assert_eq!(
        (&lengths[0]["secs"], &lengths[1]["secs"]),
        (&base.into(), &second.into()),
        "{choice}"
    );
    assert_eq!(
        (&lengths[0]["blocks"], &lengths[1]["blocks"]),
        (&6.into(), &6.into()),
        "{choice}"
    );
    // Per pilot lifetime, in block order: base, 3×, 3×, base; after it, the length chosen.
    let mut by: std::collections::BTreeMap<(usize, i64), u64> = Default::default();
    for t in trials.iter().filter(|t| t.block >= 0) {
        let l = t.evidence.lifetime.unwrap();
        by.insert((l, t.block), t.evidence.burst_s.unwrap());
    }
    for l in 0..3 {
        let run: Vec<u64> = by
            .iter()
            .filter(|((lt, _), _)| *lt == l)
            .map(|(_, s)| *s)
            .collect();
        assert_eq!(run, [base, second, second, base], "lifetime {l}: {by:?}");
    }
    let chosen = choice["secs"].as_u64().unwrap();
    let after: Vec<u64> = by
        .iter()
        .filter(|((l, _), _)| *l >= 3)
        .map(|(_, s)| *s)
        .collect();
    assert!(
        !after.is_empty() && after.iter().all(|s| *s == chosen),
        "{chosen}: {by:?}"
    );
    let notes = v["notes"].to_string();
    let (first_s, second_s) = (format!("{base} s"), format!("{second} s"));
    assert!(
        notes.contains(&format!(
            "the pilot's 3 lifetimes run bursts of {first_s} and {second_s}"
        )),
        "{notes}"
    );
    let shown = words(&common::hugelab_stdout([
        "results",
        "show",
        "--db",
        &db.display().to_string(),
        "1",
    ]));
    assert!(
        shown.contains(&format!("bursts of {chosen} s ("))
            && shown.contains(&format!(
                "from the noise the pilot measured at {first_s} and {second_s}"
            )),
        "{shown}"
    );
    // 20 seconds cannot hold 30 lifetimes at the longer length: one length, and why.
    let short: Vec<&str> = extra.iter().copied().chain(["--max-time", "20s"]).collect();
    let (_, plan, trials) = stored_run("332", "2", &short, load, &dir.path().join("one.db"));
    let choice = &plan["server"]["warm"]["burst_choice"];
    assert!(choice["pilot"].is_null(), "{choice}");
    assert!(
        choice["one_length"]
            .as_str()
            .is_some_and(|w| w.contains("fewer than the 30 lifetimes")),
        "{choice}"
    );
    let base = choice["by_fixed_cost"].as_u64();
    assert!(
        trials.iter().all(|t| t.evidence.burst_s == base),
        "{:?}",
        trials
            .iter()
            .map(|t| t.evidence.burst_s)
            .collect::<Vec<_>>()
    );
}
