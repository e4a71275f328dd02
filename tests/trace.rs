//! `hugelab trace` on the live kernel: a command's process tree is traced from exec to exit and
//! its huge-page allocations are counted exactly; a traced pid that exits ends the trace;
//! tracefs is left as it was found; bad kinds list the valid ones.

use crate::common;
use std::process::{Command, Stdio};

fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: tracepoints")]
fn a_commands_thp_faults_are_counted_exactly_and_tracefs_is_left_as_found() {
    require_root!();
    // One trace at a time, and none beside another test's settings or kernel-wide counts: each
    // may mount and unmount tracefs, and the kernel's events it counts are the whole machine's.
    let _one = common::knob_lock();
    let was_mounted = tracefs_mounted();
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let v = common::hugelab_json([
        "trace",
        "-e",
        "alloc,compaction",
        "--json",
        "--",
        bin.to_str().unwrap(),
        "hold-memory",
        "--backing",
        "thp",
        "--size",
        "64M",
        "--seconds",
        "0",
    ]);
    assert_eq!(v["schema"], "hugelab.trace/1");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["ended"], "the command exited with 0");
    assert_eq!(v["lost"], 0, "no record may be lost for an exact count");
    let w = &v["windows"][0];
    let alloc = w["counts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["event"] == "kmem:mm_page_alloc")
        .unwrap();
    // 64 MiB of 2 MiB-aligned THP is 32 order-9 allocations, all by the command; the kernel-side
    // filter (order > 0) kept every order-0 fault out.
    assert_eq!(alloc["by_key"]["9"], 32, "{alloc}");
    assert_eq!(alloc["total"], 32, "{alloc}");
    assert_eq!(alloc["by_process"][0]["comm"], "hugelab", "{alloc}");
    // Only the command's tree: no kcompactd or other process in any row.
    for l in w["latencies"].as_array().unwrap() {
        for p in l["by_process"].as_array().unwrap() {
            assert_eq!(p["comm"], "hugelab", "{l}");
        }
    }
    assert_eq!(
        tracefs_mounted(),
        was_mounted,
        "tracefs left as it was found"
    );
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: tracepoints")]
fn a_traced_pid_that_exits_ends_the_trace_with_what_was_collected() {
    require_root!();
    // One trace at a time, and none beside another test's settings or kernel-wide counts: each
    // may mount and unmount tracefs, and the kernel's events it counts are the whole machine's.
    let _one = common::knob_lock();
    let mut sleeper = Command::new("sleep").arg("1").spawn().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["trace", "--duration", "10m", "--pid"])
        .arg(sleeper.id().to_string())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    sleeper.wait().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("exited: the trace ends with it"), "{text}");
    assert!(text.contains("direct compaction:"), "{text}");
}

#[test]
fn bad_input_names_the_fix() {
    for (args, want) in [
        (
            &["trace", "-e", "compact"][..],
            "possible values: compaction, reclaim",
        ),
        (&["trace", "--interval", "10ms"][..], "at least 100ms"),
        (&["trace", "--pid", "999999999"][..], "no such process"),
    ] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: tracepoints")]
fn a_missing_event_or_bad_filter_is_named_and_the_rest_still_works() {
    require_root!();
    // One trace at a time, and none beside another test's settings or kernel-wide counts: each
    // may mount and unmount tracefs, and the kernel's events it counts are the whole machine's.
    let _one = common::knob_lock();
    use hugelab::collect::tracepoints::{Tracefs, Tracer};
    let tfs = Tracefs::open().unwrap();
    let t = Tracer::open(
        &tfs,
        &[
            ("kmem:mm_page_alloc", Some("order > 0")),
            ("nosuchgroup:nosuchevent", None),
            ("kmem:mm_page_free", Some("nosuchfield > 1")),
        ],
    );
    assert_eq!(t.sources.len(), 1);
    assert_eq!(t.sources[0].format.field("order").unwrap().size, 4);
    let kernel = common::read_trim("/proc/sys/kernel/osrelease");
    let m = |e: &str| {
        t.missing
            .iter()
            .find(|m| m.event == e)
            .unwrap()
            .reason
            .clone()
    };
    assert!(
        m("nosuchgroup:nosuchevent").contains(&format!("not in this kernel ({kernel})")),
        "{:?}",
        t.missing
    );
    assert!(m("kmem:mm_page_free").contains("filter \"nosuchfield > 1\" refused"));
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: tracepoints")]
fn run_trace_stores_each_trials_events_of_its_own_process_tree() {
    require_root!();
    // One trace at a time, and none beside another test's settings or kernel-wide counts: each
    // may mount and unmount tracefs, and the kernel's events it counts are the whole machine's.
    let _one = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let v = common::hugelab_json([
        "run",
        "--trace",
        "alloc",
        "--arm",
        "small=env.X=1",
        "--arm",
        "big=env.X=2",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        dir.path().join("r.db").to_str().unwrap(),
        "--shell",
        "--",
        &format!(
            "exec {} hold-memory --backing thp --size $((X*16))M --seconds 0",
            bin.display()
        ),
    ]);
    // Each trial's order-9 allocations are its own: 8 for 16 MiB, 16 for 32 MiB (the run's other
    // trials, and every other process, are not in its tree).
    let out = Command::new(&bin)
        .args(["results", "export", "1", "--format", "json", "--db"])
        .arg(dir.path().join("r.db"))
        .output()
        .unwrap();
    let export: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen = 0;
    for (arm, want) in [(0, 8), (1, 16)] {
        for t in export["results"][arm]["hugelab"]["trials"]
            .as_array()
            .unwrap()
        {
            seen += 1;
            let alloc = t["evidence"]["trace"]["counts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["event"] == "kmem:mm_page_alloc")
                .unwrap()
                .clone();
            assert_eq!(alloc["by_key"]["9"], want, "{alloc}");
            assert_eq!(t["evidence"]["trace_lost"], 0);
        }
    }
    assert_eq!(seen, 4);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    // The note counts every order ≥ 1 allocation of the trial's tree: the order-9 ones above,
    // plus now and then an incidental one (a kernel stack, a pipe buffer; CI saw small 8.5).
    let note = notes
        .iter()
        .find_map(|n| n.strip_prefix("trace, mean per trial: page allocations (order ≥ 1): small "))
        .unwrap_or_else(|| panic!("{notes:?}"));
    let (small, big) = note.split_once(" · big ").unwrap();
    let (small, big): (f64, f64) = (small.parse().unwrap(), big.parse().unwrap());
    assert!(
        (8.0..9.0).contains(&small) && (16.0..17.0).contains(&big),
        "{notes:?}"
    );
}

/// The events a system-wide trace sees equal the deltas of the kernel's own /proc/vmstat
/// counters over the same window: MADV_COLLAPSE of 64 MiB makes 32 anonymous collapses
/// (thp_collapse_alloc), and direct compaction and reclaim stalls (compact_stall,
/// allocstall_*) match whatever else the machine did meanwhile — exactly, with no record lost.
#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: tracepoints, MADV_COLLAPSE of another process"
)]
fn traced_counts_equal_the_kernels_own_counters() {
    require_root!();
    // One trace at a time, and none beside another test's settings or kernel-wide counts: each
    // may mount and unmount tracefs, and the kernel's events it counts are the whole machine's.
    let _one = common::knob_lock();
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let holder = common::hold_memory(&["--backing", "plain", "--size", "64M", "--seconds", "60"]);
    let trace = Command::new(&bin)
        .args([
            "trace",
            "--duration",
            "6s",
            "-e",
            "compaction,reclaim,khugepaged",
            "--json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The trace is on well before this (it opens its events in milliseconds).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let c = common::hugelab_json(["collapse", &holder.id().to_string(), "--json"]);
    drop(holder);
    let out = trace.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lost"], 0, "an exact comparison needs every record");
    let w = &v["windows"][0];
    let checks = w["kernel"].as_array().unwrap();
    let names: Vec<&str> = checks
        .iter()
        .map(|k| k["counter"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "compact_stall",
            "allocstall_* (sum)",
            "thp_collapse_alloc",
            "thp_collapse_alloc_failed"
        ]
    );
    for k in checks {
        assert_eq!(k["vmstat_delta"], k["traced"], "{k}");
        assert_eq!(k["equal"], true, "{k}");
    }
    let collapsed = checks[2]["traced"].as_u64().unwrap();
    assert!(
        collapsed >= 32,
        "MADV_COLLAPSE of 64 MiB allocates 32 huge pages: {collapsed}; collapse said {c}"
    );
}
