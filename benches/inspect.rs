//! `hugelab inspect` speed and memory (run as root: `cargo bench --bench inspect`):
//! a process with 16 GiB on 16K mTHP folios is inspected in ≤ 0.5 s with ≤ 64 MB of hugelab
//! memory; a 100 GiB mapping with few resident pages costs what is resident, not its size.
//! `HUGELAB_BENCH_GIB` sets the mTHP process size (default 16).

use hugelab::control::{Guard, Knob};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

fn bin() -> std::path::PathBuf {
    // target/release/deps/inspect-… → target/release/hugelab
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("hugelab")
}

fn helper(args: &[&str]) -> std::process::Child {
    let mut c = Command::new(bin())
        .arg("hold-memory")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = BufReader::new(c.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    assert!(line.starts_with("ready"), "{line}");
    c
}

/// Wall time and peak RSS (KiB) of one `hugelab inspect PID`.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which also reports its peak RSS
fn inspect_once(pid: u32) -> (f64, i64) {
    let t = Instant::now();
    let child = Command::new(bin())
        .args(["inspect", &pid.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter; we reap our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    (t.elapsed().as_secs_f64(), ru.ru_maxrss)
}

fn report(what: &str, pid: u32, limit_s: f64) {
    let runs: Vec<(f64, i64)> = (0..5).map(|_| inspect_once(pid)).collect();
    let mut times: Vec<f64> = runs.iter().map(|r| r.0).collect();
    times.sort_by(f64::total_cmp);
    let rss = runs.iter().map(|r| r.1).max().unwrap();
    let ok = times[2] <= limit_s && rss <= 64 * 1024;
    println!(
        "{what}: median {:.3} s (min {:.3}, max {:.3}), peak hugelab RSS {} MB (targets ≤ {limit_s} s, ≤ 64 MB) {}",
        times[2],
        times[0],
        times[4],
        rss / 1024,
        if ok { "PASS" } else { "MISS" }
    );
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root (mTHP knob and /proc/kpageflags)");
        return;
    }
    let gib: u64 = std::env::var("HUGELAB_BENCH_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let mut guard = Guard::system().unwrap();
    guard
        .set(Knob::MthpEnabled { size: 16384 }, "always")
        .unwrap();
    let mthp = helper(&["--backing", "mthp-16k", "--size", &format!("{gib}G")]);
    drop(guard); // restores the knob; the folios stay
    report(&format!("inspect {gib} GiB of 16K mTHP"), mthp.id(), 0.5);
    let mut mthp = mthp;
    mthp.kill().unwrap();
    mthp.wait().unwrap();
    let mut sparse = helper(&["--backing", "plain", "--size", "100G", "--sparse"]);
    report(
        "inspect a 100 GiB mapping with 100 pages resident",
        sparse.id(),
        0.05,
    );
    sparse.kill().unwrap();
    sparse.wait().unwrap();
}
