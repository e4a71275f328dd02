//! Performance targets of `hugelab bench` and the statistics engine (run: `cargo bench`).
//!
//! 1. Harness overhead: at an L1-resident size, `touch` through hugelab's workload runner costs
//!    at most 10% more per op than a plain loop with the same random-number generator.
//! 2. `pretouch` reaches at least 90% of a plain first-touch loop over the same backing.
//! 3. Hodges–Lehmann with its signed-rank interval over 10,000 blocks takes under a second.
//!
//! Rounds alternate the two sides so drift on this shared VM hits both alike; medians are shown.

use hugelab::backing::{Backing, Region};
use hugelab::stats::{hodges_lehmann, quantile_sorted, sorted};
use hugelab::workload::{self, kernels::XorShift};
use std::hint::black_box;
use std::time::Instant;

fn median(v: &[f64]) -> f64 {
    quantile_sorted(&sorted(v), 0.5)
}

/// The plain loop: same RNG, same reduction, no harness.
#[inline(never)]
fn plain_touch(data: &[u8], ops: u64, seed: u64) -> u64 {
    let mut rng = XorShift::new(seed);
    let mut sum = 0u64;
    for _ in 0..ops {
        sum = sum.wrapping_add(data[rng.below(data.len())] as u64);
    }
    black_box(sum)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

fn touch_overhead() {
    let mut region = Region::map(4096, Backing::Base).unwrap();
    region.prepare().unwrap();
    let ops = 20_000_000u64;
    let (mut plain, mut harness) = (Vec::new(), Vec::new());
    for round in 0..15 {
        let t = Instant::now();
        plain_touch(region.as_slice(), ops, round);
        plain.push(t.elapsed().as_nanos() as f64 / ops as f64);
        harness.push(workload::run_touch(&region, ops, 1, round).value);
    }
    let (p, h) = (median(&plain), median(&harness));
    println!(
        "touch at 4K (L1): plain loop {p:.3} ns/op, hugelab {h:.3} ns/op, overhead {:+.1}% (target ≤ +10%) {}",
        (h / p - 1.0) * 100.0,
        verdict(h <= p * 1.10)
    );
}

fn pretouch_vs_plain(backing: Backing) {
    let size = 256u64 << 20;
    let (mut plain, mut harness) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let mut r = Region::map(size, backing).unwrap();
        let t = Instant::now();
        let data = r.as_mut_slice();
        let mut i = 0;
        while i < data.len() {
            data[i] = 1;
            i += 4096;
        }
        black_box(&data);
        plain.push(size as f64 / t.elapsed().as_secs_f64() / 1e9);
        drop(r);
        let r = Region::map(size, backing).unwrap();
        harness.push(workload::run_pretouch(r, workload::Workload::Pretouch, |_| {})[0].value);
    }
    let (p, h) = (median(&plain), median(&harness));
    println!(
        "pretouch 256M {backing}: plain loop {p:.2} GB/s, hugelab {h:.2} GB/s, {:.0}% of plain (target ≥ 90%) {}",
        h / p * 100.0,
        verdict(h >= 0.9 * p)
    );
}

fn stats_speed() {
    let mut rng = XorShift::new(42);
    let d: Vec<f64> = (0..10_000)
        .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
        .collect();
    let t = Instant::now();
    let e = hodges_lehmann(&d, 0.9999).unwrap();
    let s = t.elapsed().as_secs_f64();
    black_box(e);
    println!(
        "Hodges–Lehmann + signed-rank interval, 10,000 blocks: {:.3} s (target < 1 s) {}",
        s,
        verdict(s < 1.0)
    );
}

fn main() {
    // `cargo bench` passes --bench; any filter argument is ignored.
    touch_overhead();
    pretouch_vs_plain(Backing::Base);
    pretouch_vs_plain(Backing::Thp);
    stats_speed();
}
