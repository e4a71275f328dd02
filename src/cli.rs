//! Command-line syntax only (clap derive). Planning and validation happen in `commands`.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hugelab",
    version = crate::VERSION,
    max_term_width = 100,
    about = "Measure what huge pages (THP, mTHP, hugetlbfs 2M/1G) do for a workload, and what they cost",
    long_about = "hugelab answers one question with evidence: what do huge pages do for this workload, \
on this machine, and what do they cost? It shows the machine's page-size state, configures page \
backings, verifies the backing really obtained, and reports effects with confidence intervals.",
    after_help = "Start with `hugelab status --explain`, then `hugelab bench`.\nSettings changed by hugelab are always restored; `hugelab restore` undoes an interrupted run."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the machine's page-size state: THP/mTHP knobs, hugetlb pools, fragmentation, counters
    Status(crate::commands::status::StatusArgs),
    /// Memory microbenchmarks across page backings (4k, thp, hugetlb-2m, hugetlb-1g, mthp-*), each verified
    Bench(crate::bench::BenchArgs),
    /// A/B/n experiment of any command under page configurations, with evidence and a verdict
    Run(Box<crate::experiment::plan::RunArgs>),
    /// From stored evidence to settings: what to set for the machine or a service, why, as a
    /// plan or an artefact (sysctl.d, tmpfiles.d, systemd, kernel command line, tuned,
    /// service config); --check verifies a machine against it
    Advise(crate::commands::advise::AdviseArgs),
    /// Put an advice's settings on this machine and hold them until stopped (SIGTERM restores
    /// them): the applier of a canary node's DaemonSet (advise --format daemonset)
    Apply(crate::commands::apply::ApplyArgs),
    /// A huge-page change on live hosts, judged from Prometheus: canary against baseline per
    /// metric with intervals, whether the canary really had huge pages, one verdict
    Judge(Box<crate::fleet::JudgeArgs>),
    /// Stored results: list, show (re-analyse), export (json, csv, md)
    Results(crate::commands::results::ResultsArgs),
    /// Import hyperfine --export-json results into the results database
    Import(crate::commands::import::ImportArgs),
    /// Compare two runs (stored ids or exported files), e.g. one benchmark on two machines
    Compare(crate::commands::compare::CompareArgs),
    /// One offline HTML file (inline SVG charts) or Markdown for stored runs, benches, or a comparison
    Report(crate::commands::report::ReportArgs),
    /// Page sizes a running process really has, per mapping, and why memory is not huge
    Inspect(crate::commands::inspect::InspectArgs),
    /// Processes by resident memory or huge-page coverage
    Top(crate::commands::top::TopArgs),
    /// Promote a running process's anonymous memory to huge pages (MADV_COLLAPSE) and report before/after
    Collapse(crate::commands::collapse::CollapseArgs),
    /// Kernel latency histograms of huge pages' costs (compaction, reclaim, migration, khugepaged) from tracepoints
    Trace(crate::commands::trace::TraceArgs),
    /// Prometheus metrics for huge pages on this host: pools by state, THP/mTHP, compaction, fragmentation, watched processes
    Exporter(crate::exporter::ExporterArgs),
    /// Undo system settings left changed by an interrupted hugelab run
    Restore(crate::commands::restore::RestoreArgs),
    /// Shell completions for bash, zsh, fish, elvish or PowerShell, on stdout
    Completions(crate::commands::completions::CompletionsArgs),
    /// The man page (hugelab.1 on stdout, or every page into a directory with --out)
    Man(crate::commands::completions::ManArgs),
    /// Hold settings changed until killed (for testing the restore path)
    #[command(hide = true)]
    Hold(crate::commands::restore::HoldArgs),
    /// Map memory with a known backing and hold it (examples and tests; --fragment fragments free memory)
    HoldMemory(crate::commands::hold_memory::HoldMemoryArgs),
}
