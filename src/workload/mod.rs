//! Stage 4, workload: the built-in memory kernels and what each one measures.

pub use crate::model::arm::workload::{WORKLOAD_NAMES, Workload};

pub mod child;
pub mod kernels;
pub mod server;

use crate::backing::Region;

use std::time::Instant;

pub use crate::metric::Metric;

/// One iteration's result for one metric: the value and how many operations it covered.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    pub metric: Metric,
    pub value: f64,
    pub ops: u64,
}

fn per_op_ns(elapsed: std::time::Duration, ops: u64) -> f64 {
    elapsed.as_nanos() as f64 / ops.max(1) as f64
}

fn gbs(bytes: usize, elapsed: std::time::Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64().max(1e-12) / 1e9
}

/// Random reads on a resident region; `threads` readers each do `ops` reads.
pub fn run_touch(region: &Region, ops: u64, threads: usize, seed: u64) -> Sample {
    let data = region.as_slice();
    let t = Instant::now();
    std::thread::scope(|s| {
        for i in 1..threads {
            s.spawn(move || kernels::touch(data, ops, seed.wrapping_add(i as u64 * 0x9e37)));
        }
        kernels::touch(data, ops, seed);
    });
    Sample {
        metric: Metric::TouchNs,
        value: per_op_ns(t.elapsed(), ops),
        ops: ops * threads as u64,
    }
}

/// Dependent loads through the chain built by [`kernels::build_chase`].
pub fn run_chase(region: &Region, loads: u64) -> Sample {
    let t = Instant::now();
    kernels::chase(region.as_words(), loads);
    Sample {
        metric: Metric::ChaseNs,
        value: per_op_ns(t.elapsed(), loads),
        ops: loads,
    }
}

/// Dependent loads through the one-line-per-page chain of [`kernels::build_page_chase`].
pub fn run_tlb(region: &Region, loads: u64) -> Sample {
    let t = Instant::now();
    kernels::chase(region.as_words(), loads);
    Sample {
        metric: Metric::TlbNs,
        value: per_op_ns(t.elapsed(), loads),
        ops: loads,
    }
}

/// Sequential read then write of the whole working set, split across `threads`.
pub fn run_stream(region: &mut Region, threads: usize) -> [Sample; 2] {
    let bytes = region.len();
    let words = region.as_words_mut();
    let chunk = words.len().div_ceil(threads.max(1)).max(1);
    let t = Instant::now();
    std::thread::scope(|s| {
        for c in words.chunks(chunk) {
            s.spawn(move || kernels::stream_read(c));
        }
    });
    let read = t.elapsed();
    let t = Instant::now();
    std::thread::scope(|s| {
        for c in words.chunks_mut(chunk) {
            s.spawn(move || kernels::stream_write(c, 3));
        }
    });
    let write = t.elapsed();
    let ops = (bytes / 8) as u64;
    [
        Sample {
            metric: Metric::ReadGbs,
            value: gbs(bytes, read),
            ops,
        },
        Sample {
            metric: Metric::WriteGbs,
            value: gbs(bytes, write),
            ops,
        },
    ]
}

/// First touch of every 4 KiB of a freshly mapped region, then unmap: commit and free speed.
/// Returns the samples and, before unmapping, lets `inspect` look at the committed region.
pub fn run_pretouch(
    mut region: Region,
    workload: Workload,
    inspect: impl FnOnce(&Region),
) -> Vec<Sample> {
    let bytes = region.len();
    let pages = bytes.div_ceil(4096) as u64;
    let t = Instant::now();
    kernels::first_touch(region.as_mut_slice(), 4096);
    if region.backing() == crate::backing::Backing::ThpCollapse {
        // Commit means "resident on huge pages" here; a failed collapse shows in the coverage.
        let _ = region.collapse();
    }
    let commit = t.elapsed();
    inspect(&region);
    let free = region.unmap_timed();
    match workload {
        Workload::Fault => vec![Sample {
            metric: Metric::FaultNs,
            value: per_op_ns(commit, pages),
            ops: pages,
        }],
        _ => vec![
            Sample {
                metric: Metric::CommitGbs,
                value: gbs(bytes, commit),
                ops: pages,
            },
            Sample {
                metric: Metric::FreeGbs,
                value: gbs(bytes, free),
                ops: pages,
            },
        ],
    }
}
