//! exporter: the engine of `hugelab exporter` — Prometheus metrics for huge pages on this host, served over HTTP
//! (or printed once). Read-only: it never changes a setting.
//!
//! Each scrape probes the machine (the same probes as `status`), reads the watched processes'
//! smaps_rollup (less often for a process whose walk costs more than `--budget`) and, as root,
//! advances each one's folio-size pass by at most `--budget` of page-table walking.
//!
//! * this module — the options (the serving loop is the command itself);
//! * `scrape` — one scrape: the machine's status, the watched processes (smaps_rollup and
//!   folio passes under the budget), the exporter's own health;
//! * `http` — answering a request (`/metrics` in either exposition format, `/`, 404);
//! * `stalls` — `--trace`: the trace thread and the stall histograms it keeps.

pub mod http;
mod scrape;
pub mod stalls;

pub use scrape::Exporter;
pub use stalls::Stalls;

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
    /// Export the N cgroups with the most memory (pods, containers, systemd units): their
    /// memory and huge pages as the kernel accounts them (memory.stat, the hugetlb
    /// controller), labelled with the path and what it says (pod_uid, qos, container_id,
    /// unit); 0 for none
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub cgroups: usize,
    /// How many levels below the root the cgroups are read (kubelet's containers sit 4 deep)
    #[arg(long, value_name = "LEVELS", default_value_t = 4)]
    pub cgroup_depth: usize,
    /// Print one scrape on stdout and exit (e.g. for node_exporter's textfile collector)
    #[arg(long)]
    pub once: bool,
    /// With --once: OpenMetrics text instead of the classic Prometheus format
    #[arg(long)]
    pub openmetrics: bool,
    /// Write the Kubernetes DaemonSet that runs this exporter on every node (these options,
    /// less --manifest and --image; --listen beyond loopback) to FILE, and exit
    #[arg(long, value_name = "FILE", conflicts_with_all = ["once", "pid"])]
    pub manifest: Option<std::path::PathBuf>,
    /// With --manifest: the container image the DaemonSet runs
    #[arg(long, value_name = "IMAGE", requires = "manifest", default_value = crate::render::advice::IMAGE)]
    pub image: String,
}

/// `--manifest`: the exporter's own command line for a pod (`args`, from `exporter` on, less
/// the options that write the manifest) and the DaemonSet that runs it. A pod's loopback is its
/// own, so the exporter must listen beyond it (`addr`) to be scraped.
pub fn manifest(
    a: &ExporterArgs,
    addr: std::net::SocketAddr,
    args: impl Iterator<Item = String>,
) -> Result<(Vec<String>, String), crate::error::UsageError> {
    if addr.ip().is_loopback() || addr.port() == 0 {
        return Err(crate::error::UsageError(format!(
            "--manifest: --listen {addr} cannot be scraped in a pod (its loopback is its own, and port 0 is none): give --listen 0.0.0.0:{}",
            if addr.port() == 0 { 9717 } else { addr.port() }
        )));
    }
    let pod = crate::options::without(&args.collect::<Vec<_>>(), &["--manifest", "--image"], &[]);
    let text = crate::render::manifest::exporter(&a.image, &pod, addr.port());
    Ok((pod, text))
}
