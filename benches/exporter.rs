//! `hugelab exporter` under load (`cargo bench --bench exporter`): 1,000 scrapes over loopback,
//! one after another, without and with watched processes (`--top 5`, and a 1 GiB THP process by
//! `--pid`). Prints the scrape time p50/p99/max seen by the client and the exporter's RSS after
//! 10 and after 1,000 scrapes (flat means no per-scrape growth). `HUGELAB_BENCH_SCRAPES` sets
//! the count.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

fn bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_hugelab"))
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn scrape(addr: &str) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = Vec::new();
    s.read_to_end(&mut body).unwrap();
    assert!(body.starts_with(b"HTTP/1.1 200"), "scrape failed");
    body.len()
}

fn run(label: &str, extra: &[String], n: usize) {
    let mut c = Command::new(bin())
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    // Keep reading its stderr, so that later notes never hit a closed pipe.
    std::thread::spawn(move || err.lines().for_each(drop));
    let ex = Killed(c);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap()
        .to_string();
    let mut times = Vec::with_capacity(n);
    let mut rss_10 = 0;
    let mut bytes = 0;
    for i in 0..n {
        let t = Instant::now();
        bytes = scrape(&addr);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if i == 9 {
            rss_10 = rss_kib(ex.0.id());
        }
    }
    let rss_n = rss_kib(ex.0.id());
    times.sort_by(f64::total_cmp);
    let q = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!(
        "{label:<34} {n:>5} scrapes  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms  {:>6} B/scrape  RSS {} → {} KiB",
        q(0.5),
        q(0.99),
        times[times.len() - 1],
        bytes,
        rss_10,
        rss_n
    );
}

fn main() {
    let n: usize = std::env::var("HUGELAB_BENCH_SCRAPES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    run("no watched processes", &[], n);
    run("--top 5", &["--top".into(), "5".into()], n);
    let mut holder = Command::new(bin())
        .args(["hold-memory", "--backing", "thp", "--size", "1G"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let holder = Killed(holder);
    run(
        "--pid (1 GiB THP process)",
        &["--pid".into(), holder.0.id().to_string()],
        n,
    );
}
