//! `hugelab exporter`: Prometheus metrics for huge pages on this host, served over HTTP
//! (or printed once). Read-only: it never changes a setting.
//!
//! Each scrape probes the machine (the same probes as `status`), reads the watched processes'
//! smaps_rollup (less often for a process whose walk costs more than `--budget`) and, as root,
//! advances each one's folio-size pass by at most `--budget` of page-table walking.

use super::UsageError;
use crate::collect::folio_scan::{FolioScan, ScanError};
use crate::model::exporter::{ExporterHealth, Scrape, WatchedProcess};
use crate::probe::Root;
use crate::probe::process::{Rollup, comm};
use crate::probe::status;
use crate::render::prometheus;
use crate::units::parse_positive_duration;
use clap::Args;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve /metrics on (loopback by default; anything else exposes the metrics to the network)
    #[arg(long, default_value = "127.0.0.1:9717")]
    pub listen: String,
    /// Watch these processes (repeat or comma-separate)
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Watch processes with this command name (/proc/PID/comm, exact; repeat or comma-separate)
    #[arg(long, value_delimiter = ',')]
    pub name: Vec<String>,
    /// Watch the N processes with the most resident memory (re-chosen every scrape)
    #[arg(long)]
    pub top: Option<usize>,
    /// Page-table walk time allowed per watched process per scrape
    #[arg(long, default_value = "50ms", value_parser = parse_positive_duration)]
    pub budget: Duration,
    /// Start a new folio-size pass over a watched process this long after the last one ended
    #[arg(long, default_value = "60s", value_parser = parse_positive_duration)]
    pub folio_every: Duration,
    /// Also export kernel stall histograms from tracepoints (root): compaction, reclaim, migrate,
    /// comma-separated (e.g. `compaction,reclaim`)
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub trace: Vec<crate::analyze::trace::TraceKind>,
    /// Print one scrape on stdout and exit (e.g. for node_exporter's textfile collector)
    #[arg(long)]
    pub once: bool,
    /// With --once: OpenMetrics text instead of the classic Prometheus format
    #[arg(long)]
    pub openmetrics: bool,
}

/// What the exporter remembers of one watched process between scrapes.
struct Watch {
    comm: String,
    rollup: Option<(Rollup, Instant)>,
    /// Scrapes to skip before the next smaps_rollup read (its last read cost more than the budget).
    skip: u64,
    scan: Option<FolioScan>,
}

pub struct Exporter {
    root: Root,
    pids: Vec<u32>,
    names: Vec<String>,
    top: Option<usize>,
    budget: Duration,
    folio_every: Duration,
    watched: BTreeMap<u32, Watch>,
    /// Why folio sizes are off (not root), said once in the errors and never retried.
    folios_unavailable: Option<String>,
    pub health: ExporterHealth,
    /// `--trace`: the stall histograms the trace thread keeps.
    stalls: Option<std::sync::Arc<std::sync::Mutex<Stalls>>>,
}

/// Stall histograms since start, filled by the trace thread.
#[derive(Debug, Default)]
pub struct Stalls {
    /// kind → (sum ns, count, count per power-of-two bucket by its lower edge in ns).
    kinds: BTreeMap<String, (u64, u64, BTreeMap<u64, u64>)>,
    lost: u64,
}

/// Bucket upper bounds: 1 µs to 16 s in powers of two, then +Inf.
fn bounds() -> Vec<f64> {
    let mut v: Vec<f64> = (10..=34).map(|k| (1u64 << k) as f64 / 1e9).collect();
    v.push(f64::INFINITY);
    v
}

impl Stalls {
    fn add(&mut self, w: &crate::analyze::trace::TraceWindow) {
        for l in &w.latencies {
            let e = self.kinds.entry(l.kind.clone()).or_default();
            e.0 += l.hist.total_ns;
            e.1 += l.hist.count;
            for (lo, n) in &l.hist.log2 {
                *e.2.entry(*lo).or_insert(0) += n;
            }
        }
    }

    fn histograms(&self) -> Vec<crate::model::exporter::StallHistogram> {
        let b = bounds();
        self.kinds
            .iter()
            .map(|(kind, (sum, count, log2))| {
                let mut buckets: Vec<(f64, u64)> = b.iter().map(|u| (*u, 0)).collect();
                for (lo, n) in log2 {
                    // A log2 row [lo, 2·lo) falls under the first bound ≥ 2·lo.
                    let hi = (*lo).max(1) as f64 * 2.0 / 1e9;
                    let i = b.iter().position(|u| *u >= hi).unwrap_or(b.len() - 1);
                    buckets[i].1 += n;
                }
                crate::model::exporter::StallHistogram {
                    kind: kind.clone(),
                    sum_s: *sum as f64 / 1e9,
                    count: *count,
                    buckets,
                }
            })
            .collect()
    }
}

/// The trace thread: stops (and unmounts tracefs if it mounted it) when told.
struct TraceThread {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl TraceThread {
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.handle.join().ok();
    }
}

/// Trace `kinds` system-wide until stopped, adding each half second's stalls.
fn start_trace(
    kinds: &[crate::analyze::trace::TraceKind],
) -> anyhow::Result<(std::sync::Arc<std::sync::Mutex<Stalls>>, TraceThread)> {
    use crate::analyze::trace::{Aggregator, tracepoints};
    use crate::collect::tracepoints::{Tracefs, Tracer};
    let tfs = Tracefs::open()?;
    let wanted: Vec<(&str, Option<&str>)> = tracepoints(kinds);
    let mut tracer = Tracer::open(&tfs, &wanted);
    for m in &tracer.missing {
        crate::eprintln_safe!("note: --trace: {} not traced: {}", m.event, m.reason);
    }
    if tracer.sources.is_empty() {
        anyhow::bail!("--trace: no tracepoint could be opened");
    }
    if let Some(n) = &tfs.note {
        crate::eprintln_safe!("note: {n}");
    }
    tracer.enable()?;
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Stalls::default()));
    let out = shared.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let handle = std::thread::Builder::new()
        .name("hugelab-trace".into())
        .spawn(move || {
            let _tfs = tfs; // mounted for as long as the exporter runs
            let names: Vec<String> = tracer.sources.iter().map(|s| s.name.clone()).collect();
            let mut agg = Aggregator::new(names, tracer.formats());
            while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
                for e in tracer.poll(Duration::from_millis(500)) {
                    agg.add(&e);
                }
                let w = agg.take(0.0, 0.0, &|_| String::new());
                let mut s = out.lock().unwrap_or_else(|e| e.into_inner());
                s.add(&w);
                s.lost = tracer.lost;
            }
            drop(tracer);
        })?;
    Ok((shared, TraceThread { stop, handle }))
}

impl Exporter {
    pub fn new(a: &ExporterArgs) -> Result<Exporter, UsageError> {
        Exporter::with_root(a, Root::system())
    }

    /// An exporter reading the machine under `root` (fixtures in tests; processes are always
    /// this machine's).
    pub fn with_root(a: &ExporterArgs, root: Root) -> Result<Exporter, UsageError> {
        if a.budget.is_zero() || a.budget > Duration::from_secs(10) {
            return Err(UsageError(format!(
                "--budget {:?} must be between 1ms and 10s",
                a.budget
            )));
        }
        {
            use crate::analyze::trace::TraceKind;
            let stalls = [
                TraceKind::Compaction,
                TraceKind::Reclaim,
                TraceKind::Migrate,
            ];
            if let Some(x) = a.trace.iter().find(|k| !stalls.contains(k)) {
                return Err(UsageError(format!(
                    "--trace {}: the exporter keeps stall histograms only: compaction, reclaim, migrate",
                    x.name()
                )));
            }
        }
        if a.top == Some(0) {
            return Err(UsageError("--top 0 watches nothing; give N ≥ 1".into()));
        }
        Ok(Exporter {
            root,
            pids: a.pid.clone(),
            names: a.name.clone(),
            top: a.top,
            budget: a.budget,
            folio_every: a.folio_every,
            watched: BTreeMap::new(),
            folios_unavailable: None,
            stalls: None,
            health: ExporterHealth {
                budget_s: a.budget.as_secs_f64(),
                ..Default::default()
            },
        })
    }

    fn error(&mut self, source: &str) {
        *self.health.errors.entry(source.into()).or_insert(0) += 1;
    }

    /// The processes to watch this scrape: named pids that still exist, processes by name, and
    /// the largest by VmRSS.
    fn selection(&self) -> Vec<(u32, String)> {
        let mut out: BTreeMap<u32, String> = BTreeMap::new();
        for &pid in &self.pids {
            if let Some(c) = comm(pid) {
                out.insert(pid, c);
            }
        }
        if self.names.is_empty() && self.top.is_none() {
            return out.into_iter().collect();
        }
        let mut by_rss = Vec::new();
        for pid in crate::probe::process::all_pids(&Root::system()) {
            let Some(c) = comm(pid) else { continue };
            if self.names.contains(&c) {
                out.insert(pid, c.clone());
            }
            if self.top.is_some()
                && let Ok(st) = crate::probe::process::Proc::system(pid).status()
                && let Some(rss) = st.vm_rss
            {
                by_rss.push((rss, pid, c));
            }
        }
        if let Some(n) = self.top {
            by_rss.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, pid, c) in by_rss.into_iter().take(n) {
                out.insert(pid, c);
            }
        }
        out.into_iter().collect()
    }

    /// One watched process's numbers, or `None` when it is gone (its series drop).
    fn process(&mut self, pid: u32, comm: String) -> Option<WatchedProcess> {
        let root_folios = self.folios_unavailable.is_none();
        let (budget, every) = (self.budget, self.folio_every);
        let w = self.watched.entry(pid).or_insert_with(|| Watch {
            comm: comm.clone(),
            rollup: None,
            skip: 0,
            scan: None,
        });
        if w.comm != comm {
            // The pid was reused by another program.
            *w = Watch {
                comm: comm.clone(),
                rollup: None,
                skip: 0,
                scan: None,
            };
        }
        let mut walked = Duration::ZERO;
        let mut errors: Vec<&str> = Vec::new();
        if w.skip > 0 && w.rollup.is_some() {
            w.skip -= 1;
        } else {
            let t = Instant::now();
            match crate::probe::process::Proc::system(pid).rollup() {
                Ok(r) => w.rollup = Some((r, Instant::now())),
                Err(crate::probe::process::ProcError::Gone { .. }) => return None,
                Err(_) => errors.push("process"),
            }
            let cost = t.elapsed();
            walked += cost;
            // Skip as many scrapes as this read cost budgets: the mean walk per scrape stays
            // within --budget.
            w.skip = (cost.as_secs_f64() / budget.as_secs_f64()).ceil() as u64 - 1;
        }
        let mut unavailable = None;
        if root_folios && walked < budget {
            if w.scan.is_none() {
                match FolioScan::new(pid) {
                    Ok(s) => w.scan = Some(s),
                    Err(ScanError::Gone(_)) => return None,
                    Err(_) => errors.push("folios"),
                }
            }
            if let Some(scan) = w.scan.as_mut() {
                match scan.advance(budget - walked, every) {
                    Ok(d) => walked += d,
                    Err(ScanError::Gone(_)) => return None,
                    Err(ScanError::Unavailable(why)) => {
                        unavailable = Some(why);
                        w.scan = None;
                    }
                    Err(ScanError::Io { .. }) => {
                        errors.push("folios");
                        w.scan = None;
                    }
                }
            }
        }
        let (r, at) = w.rollup?;
        let folios = w.scan.as_ref().and_then(|s| s.last.clone());
        let out = WatchedProcess {
            pid,
            comm,
            resident: r.resident(),
            huge: BTreeMap::from([
                ("anon_thp".to_string(), r.anon_huge),
                ("shmem_pmd".to_string(), r.shmem_pmd),
                ("file_pmd".to_string(), r.file_pmd),
                ("hugetlb".to_string(), r.hugetlb),
            ]),
            coverage: (r.resident() > 0).then(|| r.huge() as f64 / r.resident() as f64),
            rollup_age_s: at.elapsed().as_secs_f64(),
            folios_age_s: folios.as_ref().map(|(_, t)| t.elapsed().as_secs_f64()),
            folios: folios.map(|(f, _)| f),
        };
        self.health.max_walk_s = self.health.max_walk_s.max(walked.as_secs_f64());
        for e in errors {
            self.error(e);
        }
        if let Some(why) = unavailable {
            self.folios_unavailable = Some(why);
            self.error("folios");
        }
        Some(out)
    }

    /// Collect one scrape.
    pub fn scrape(&mut self) -> anyhow::Result<Scrape> {
        let t = Instant::now();
        let status = match status::probe(&self.root) {
            Ok(s) => s,
            Err(e) => {
                self.error("status");
                return Err(anyhow::Error::new(e).context("probing the machine"));
            }
        };
        let selection = self.selection();
        let mut processes = Vec::new();
        for (pid, comm) in selection {
            if let Some(p) = self.process(pid, comm) {
                processes.push(p);
            }
        }
        let live: Vec<u32> = processes.iter().map(|p| p.pid).collect();
        self.watched.retain(|pid, _| live.contains(pid));
        self.health.scrapes += 1;
        self.health.last_duration_s = t.elapsed().as_secs_f64();
        let (stalls, trace_lost) = match &self.stalls {
            Some(s) => {
                let s = s.lock().unwrap_or_else(|e| e.into_inner());
                (s.histograms(), Some(s.lost))
            }
            None => (Vec::new(), None),
        };
        Ok(Scrape {
            status,
            processes,
            health: self.health.clone(),
            version: env!("CARGO_PKG_VERSION"),
            stalls,
            trace_lost,
        })
    }

    /// Why folio sizes are not exported, if they are not.
    pub fn folio_note(&self) -> Option<&str> {
        self.folios_unavailable.as_deref()
    }
}

fn wants_openmetrics(req: &tiny_http::Request) -> bool {
    req.headers().iter().any(|h| {
        h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
    })
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

const INDEX: &str = "<!doctype html><title>hugelab exporter</title><h1>hugelab exporter</h1><p><a href=\"/metrics\">/metrics</a>: huge-page metrics of this host (hugetlb pools by state, THP and mTHP, compaction, fragmentation, watched processes).</p>";

/// Answer one request: `/metrics`, `/` or 404.
fn respond(ex: &mut Exporter, req: tiny_http::Request) -> std::io::Result<()> {
    if *req.method() != tiny_http::Method::Get && *req.method() != tiny_http::Method::Head {
        return req.respond(tiny_http::Response::from_string("GET only\n").with_status_code(405));
    }
    match req.url().split('?').next().unwrap_or("") {
        "/metrics" => match ex.scrape() {
            Ok(s) => {
                let om = prometheus::openmetrics(&s);
                let (body, ctype) = if wants_openmetrics(&req) {
                    (om, prometheus::OPENMETRICS)
                } else {
                    (prometheus::classic(&om), prometheus::TEXT)
                };
                req.respond(
                    tiny_http::Response::from_string(body)
                        .with_header(header("Content-Type", ctype)),
                )
            }
            Err(e) => req.respond(
                tiny_http::Response::from_string(format!("{e:#}\n")).with_status_code(500),
            ),
        },
        "/" => req.respond(
            tiny_http::Response::from_string(INDEX)
                .with_header(header("Content-Type", "text/html; charset=utf-8")),
        ),
        _ => req.respond(
            tiny_http::Response::from_string("not found: try /metrics\n").with_status_code(404),
        ),
    }
}

fn parse_listen(s: &str) -> Result<SocketAddr, UsageError> {
    s.parse().map_err(|_| {
        UsageError(format!(
            "--listen {s:?} is not an address:port such as 127.0.0.1:9717 or [::1]:9717"
        ))
    })
}

pub fn run(a: ExporterArgs) -> anyhow::Result<i32> {
    // Checked first, --once or not: a typo is an error before anything is read.
    let addr = parse_listen(&a.listen)?;
    let mut ex = Exporter::new(&a)?;
    let mut trace_thread = None;
    if !a.trace.is_empty() {
        if a.once {
            return Err(UsageError(
                "--trace needs a running exporter (its histograms grow over time), not --once"
                    .into(),
            )
            .into());
        }
        let kinds = crate::analyze::trace::catalogue::distinct(&a.trace);
        let (stalls, thread) = start_trace(&kinds)?;
        ex.stalls = Some(stalls);
        trace_thread = Some(thread);
    }
    if a.once {
        let s = ex.scrape()?;
        let om = prometheus::openmetrics(&s);
        print!(
            "{}",
            if a.openmetrics {
                om
            } else {
                prometheus::classic(&om)
            }
        );
        return Ok(0);
    }
    let server = tiny_http::Server::http(addr).map_err(|e| {
        let in_use = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse);
        if in_use {
            anyhow::anyhow!(
                "{addr} is already in use (another hugelab exporter, or another service on that port): choose another with --listen"
            )
        } else {
            anyhow::anyhow!("cannot listen on {addr}: {e}")
        }
    })?;
    let addr = server.server_addr().to_ip().unwrap_or(addr); // the real port for --listen …:0
    if !addr.ip().is_loopback() {
        crate::eprintln_safe!(
            "note: listening on {addr}, beyond loopback: anyone who can reach it can read this host's memory layout metrics"
        );
    }
    crate::eprintln_safe!("hugelab exporter: http://{addr}/metrics (read-only; Ctrl-C stops)",);
    let mut said_folios = false;
    // Ctrl-C/SIGTERM end the loop, so that the trace thread can unmount tracefs.
    crate::control::defer_first_signal("stopping the exporter");
    while !crate::control::stop_requested() {
        let req = match server.recv_timeout(Duration::from_millis(250)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                crate::eprintln_safe!("hugelab exporter: {e}");
                continue;
            }
        };
        if let Err(e) = respond(&mut ex, req) {
            crate::eprintln_safe!("hugelab exporter: answering a request: {e}");
        }
        if !said_folios && let Some(why) = ex.folio_note() {
            crate::eprintln_safe!("note: folio sizes of watched processes are not exported: {why}");
            said_folios = true;
        }
    }
    if let Some(t) = trace_thread {
        t.stop();
    }
    Ok(0)
}
