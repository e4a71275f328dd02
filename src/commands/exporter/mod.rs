//! `hugelab exporter`: Prometheus metrics for huge pages on this host, served over HTTP
//! (or printed once). Read-only: it never changes a setting.
//!
//! Each scrape probes the machine (the same probes as `status`), reads the watched processes'
//! smaps_rollup (less often for a process whose walk costs more than `--budget`) and, as root,
//! advances each one's folio-size pass by at most `--budget` of page-table walking.
//!
//! * this module — the options and the serving loop;
//! * `scrape` — one scrape: the machine's status, the watched processes (smaps_rollup and
//!   folio passes under the budget), the exporter's own health;
//! * `http` — answering a request (`/metrics` in either exposition format, `/`, 404);
//! * `stalls` — `--trace`: the trace thread and the stall histograms it keeps.

mod http;
mod scrape;
mod stalls;

pub use scrape::Exporter;
pub use stalls::Stalls;

use super::UsageError;
use crate::render::prometheus;
use crate::units::parse_positive_duration;
use clap::Args;
use std::time::Duration;

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

pub fn run(a: ExporterArgs) -> anyhow::Result<i32> {
    // Checked first, --once or not: a typo is an error before anything is read.
    let addr = http::parse_listen(&a.listen)?;
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
        let (stalls, thread) = stalls::start_trace(&kinds)?;
        ex.set_stalls(stalls);
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
    for p in a
        .pid
        .iter()
        .filter(|p| crate::probe::process::comm(**p).is_none())
    {
        eprintln!(
            "hugelab exporter: warning: --pid {p}: no such process; it is exported as hugelab_watched_up{{pid=\"{p}\"}} 0"
        );
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
        if let Err(e) = http::respond(&mut ex, req) {
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
