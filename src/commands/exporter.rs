//! `hugelab exporter`: Prometheus metrics for huge pages on this host, served over HTTP (or
//! printed once). Read-only: it never changes a setting. The scrape, the stall histograms and
//! the answer to a request are the exporter engine's (`crate::exporter`); this is the serving
//! loop.

use super::UsageError;
use crate::exporter::{Exporter, ExporterArgs, http, stalls};
use crate::render::prometheus;

pub fn run(a: ExporterArgs) -> anyhow::Result<i32> {
    // Checked first, --once or not: a typo is an error before anything is read.
    let addr = http::parse_listen(&a.listen)?;
    if let Some(path) = &a.manifest {
        // The DaemonSet running this exporter's command line on every node.
        let (args, text) = crate::exporter::manifest(&a, addr, std::env::args().skip(1))?;
        super::write_file(path, "--manifest", &text)?;
        let (args, image) = (args.join(" "), &a.image);
        println!(
            "wrote {}: a DaemonSet running `hugelab {args}` on every node, from {image}",
            path.display()
        );
        return Ok(0);
    }
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
    warn_missing(&a.pid);
    let server = http::listen(addr)?;
    let addr = server.server_addr().to_ip().unwrap_or(addr); // the real port for --listen …:0
    if !addr.ip().is_loopback() {
        crate::eprintln_safe!(
            "note: listening on {addr}, beyond loopback: anyone who can reach it can read this host's memory layout metrics"
        );
    }
    crate::eprintln_safe!("hugelab exporter: http://{addr}/metrics (read-only; Ctrl-C stops)",);
    http::serve(&server, &mut ex);
    if let Some(t) = trace_thread {
        t.stop();
    }
    Ok(0)
}

/// Each `--pid` that names no process: said once here, exported as not up at every scrape.
fn warn_missing(pids: &[u32]) {
    for p in pids
        .iter()
        .filter(|p| crate::probe::process::comm(**p).is_none())
    {
        eprintln!(
            "hugelab exporter: warning: --pid {p}: no such process; it is exported as hugelab_watched_up{{pid=\"{p}\"}} 0"
        );
    }
}
