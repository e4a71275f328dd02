//! `bench`'s arguments: parsed by clap in the command, read by the engine's planner.

use crate::units::parse_positive_duration;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Workloads: touch, chase, pretouch, stream, fault [default: touch chase pretouch]; or tlb
    /// alone: the TLB's reach and miss cost, from spans of 64K to 256M one line a page
    pub workloads: Vec<String>,
    /// Region sizes, comma-separated (K/M/G suffixes) [default: 4K,64K,1M,16M,256M,1G, capped by MemAvailable]
    #[arg(short = 's', long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Page backings, comma-separated (every one: --help) [default: 4k,thp,hugetlb-2m, plus
    /// hugetlb-1g when a 1 GiB page can be had]
    #[arg(short = 'b', long, value_delimiter = ',', long_help = concat!(
        "Page backings, comma-separated: ", crate::backing_names!(),
        " [default: 4k,thp,hugetlb-2m, plus hugetlb-1g when a 1 GiB page can be had]"))]
    pub backings: Vec<String>,
    /// Measured rounds; each round runs every backing once, in random order (≥ 11 for a 99.9% ratio interval)
    #[arg(short = 'r', long, default_value_t = 12, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub rounds: usize,
    /// Target duration of one touch/chase iteration
    #[arg(long, default_value = "20ms", value_parser = parse_positive_duration)]
    pub iteration_time: Duration,
    /// Threads for touch and stream
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub threads: usize,
    /// Confidence level of intervals
    #[arg(long, default_value_t = crate::model::decision::BENCH_CONFIDENCE, allow_negative_numbers = true, value_parser = crate::options::parse_confidence)]
    pub confidence: f64,
    #[command(flatten)]
    pub order: crate::options::Seed,
    /// Do not grow hugetlb pools, even as root (skip hugetlb backings the pool cannot serve)
    #[arg(long)]
    pub no_grow: bool,
    #[command(flatten)]
    pub settings: crate::options::SettingsWait,
    #[command(flatten)]
    pub out: crate::options::Json,
    #[command(flatten)]
    pub progress: crate::options::Quiet,
    #[command(flatten)]
    pub store: crate::options::Database,
    /// Do not save the run in the results database
    #[arg(long, conflicts_with = "db")]
    pub no_save: bool,
}
