//! The measured loops. Each is a tight native loop over a slice, kept opaque to the optimizer
//! with `black_box`, and shared with the harness-overhead benchmark so both run the same code.

use std::hint::black_box;

pub use crate::rng::XorShift;

/// Independent random byte reads (the JVM article's ByteArrayTouch). Returns a checksum.
#[inline(never)]
pub fn touch(data: &[u8], ops: u64, seed: u64) -> u64 {
    let mut rng = XorShift::new(seed);
    let n = data.len();
    let mut sum = 0u64;
    for _ in 0..ops {
        // SAFETY-free: `below(n)` < n, so indexing never fails; the bounds check is predictable.
        sum = sum.wrapping_add(data[rng.below(n)] as u64);
    }
    black_box(sum)
}

pub const LINE_WORDS: usize = 8;

/// Link every 64-byte line of `words` into one random cycle: each line's first word holds the
/// word index of the next line. A random order defeats the prefetchers, so each load waits.
/// Sattolo's algorithm on the links themselves: a uniformly random single cycle, built in
/// place (no index array, so no 32-bit index limit on the region's size).
pub fn build_chase(words: &mut [u64], seed: u64) {
    let lines = words.len() / LINE_WORDS;
    if lines == 0 {
        return;
    }
    for i in 0..lines {
        words[i * LINE_WORDS] = (i * LINE_WORDS) as u64;
    }
    let mut rng = XorShift::new(seed);
    for i in (1..lines).rev() {
        let j = rng.below(i);
        words.swap(i * LINE_WORDS, j * LINE_WORDS);
    }
}

/// Follow the chain for `loads` dependent loads; returns where it ended.
#[inline(never)]
pub fn chase(words: &[u64], loads: u64) -> u64 {
    let mut p = 0usize;
    for _ in 0..loads {
        p = words[p] as usize;
    }
    black_box(p as u64)
}

pub use crate::backing::first_touch;

/// Sequential read of every word.
pub fn stream_read(words: &[u64]) -> u64 {
    black_box(words.iter().fold(0u64, |a, &w| a.wrapping_add(w)))
}

/// Sequential write of every word.
pub fn stream_write(words: &mut [u64], v: u64) {
    words.fill(v);
    black_box(&words);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chase_is_one_cycle_over_all_lines() {
        let mut w = vec![0u64; 64 * LINE_WORDS];
        build_chase(&mut w, 7);
        let mut seen = [false; 64];
        let mut p = 0usize;
        for _ in 0..64 {
            assert!(
                !seen[p / LINE_WORDS],
                "line visited twice before the cycle closed"
            );
            seen[p / LINE_WORDS] = true;
            p = w[p] as usize;
        }
        assert_eq!(p, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn below_is_in_range_and_spread() {
        let mut r = XorShift::new(1);
        let mut hist = [0u32; 10];
        for _ in 0..100_000 {
            hist[r.below(10)] += 1;
        }
        assert!(
            hist.iter().all(|&h| (9_000..11_000).contains(&h)),
            "{hist:?}"
        );
    }

    #[test]
    fn touch_and_stream_compute() {
        let d = vec![1u8; 4096];
        assert_eq!(touch(&d, 1000, 3), 1000);
        let mut w = vec![0u64; 512];
        stream_write(&mut w, 2);
        assert_eq!(stream_read(&w), 1024);
        let mut b = vec![0u8; 10_000];
        first_touch(&mut b, 4096);
        assert_eq!(b.iter().filter(|&&x| x == 1).count(), 3);
    }
}
