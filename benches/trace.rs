//! `hugelab trace` overhead (root; `cargo bench --bench trace`): a page-fault-heavy child
//! (`hold-memory --backing 4k --size 512M`: 131,072 first-touch faults, each an order-0 page
//! allocation that the enabled `kmem:mm_page_alloc` tracepoint must filter out in the kernel)
//! timed with a system-wide `hugelab trace` (default kinds) running and without, in pairs whose
//! order is alternated. Prints the Hodges–Lehmann estimate of traced/untraced wall time with its
//! 95% interval, for the default kinds and for the default kinds without `alloc` (whose filtered
//! mm_page_alloc fires on every page allocation). `HUGELAB_BENCH_PAIRS` sets the number of
//! pairs (default 30).

use hugelab::analyze::verdict::to_percent;
use hugelab::stats::hodges_lehmann;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

fn bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_hugelab"))
}

/// A system-wide trace, running once its header is printed (its tracepoints are enabled then).
fn tracer(kinds: &str) -> Child {
    let mut c = Command::new(bin())
        .args(["trace", "--duration", "1h", "-e", kinds])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0
        && !line.starts_with("──")
        && !line.starts_with("note: kinds")
    {
        line.clear();
    }
    std::thread::spawn(move || out.lines().for_each(drop));
    c
}

fn child_seconds() -> f64 {
    let t = Instant::now();
    let st = Command::new(bin())
        .args([
            "hold-memory",
            "--backing",
            "4k",
            "--size",
            "512M",
            "--seconds",
            "0",
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    t.elapsed().as_secs_f64()
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: tracing needs root");
        return;
    }
    let pairs: usize = std::env::var("HUGELAB_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    for kinds in [
        "compaction,reclaim,migrate,khugepaged,alloc",
        "compaction,reclaim,migrate,khugepaged",
    ] {
        overhead(kinds, pairs);
    }
}

fn overhead(kinds: &str, pairs: usize) {
    let mut logs = Vec::new();
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        let one = |traced: bool| {
            if traced {
                let mut t = tracer(kinds);
                let s = child_seconds();
                // SIGINT: it stops cleanly and unmounts tracefs if it mounted it.
                // SAFETY: signalling our own child.
                unsafe { libc::kill(t.id() as i32, libc::SIGINT) };
                t.wait().ok();
                s
            } else {
                child_seconds()
            }
        };
        let (a, b) = if i % 2 == 0 {
            let b = one(false);
            (one(true), b)
        } else {
            let a = one(true);
            (a, one(false))
        };
        on.push(a);
        off.push(b);
        logs.push((a / b).ln());
    }
    let e = to_percent(hodges_lehmann(&logs, 0.95).unwrap());
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "-e {kinds}: {pairs} pairs · untraced median {:.1} ms · traced median {:.1} ms · traced/untraced {:+.2}% [{:+.2}, {:+.2}] (95%, Hodges–Lehmann of paired log-ratios)",
        med(&mut off) * 1e3,
        med(&mut on) * 1e3,
        e.point,
        e.lo.unwrap_or(f64::NAN),
        e.hi.unwrap_or(f64::NAN)
    );
}
