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

/// Words in a 4 KiB page.
pub const PAGE_WORDS: usize = 512;

/// Link one cache line of every 4 KiB page of `words` into one random cycle over the pages
/// (Sattolo's algorithm): each access is to a new page, so once the pages outnumber the TLB's
/// entries most accesses miss it, while the lines touched stay few (64 B a page). The line
/// within each page is drawn at random, so the lines spread over every cache set instead of
/// aliasing onto the sets of one page offset (the same offset in every page would fill one
/// L1 set, and on physically contiguous huge pages a few L2 sets).
pub fn build_page_chase(words: &mut [u64], seed: u64) {
    let pages = words.len() / PAGE_WORDS;
    if pages == 0 {
        return;
    }
    let mut rng = XorShift::new(seed);
    let line: Vec<usize> = (0..pages)
        .map(|p| p * PAGE_WORDS + rng.below(PAGE_WORDS / LINE_WORDS) * LINE_WORDS)
        .collect();
    let mut order: Vec<usize> = (0..pages).collect();
    for i in (1..pages).rev() {
        let j = rng.below(i);
        order.swap(i, j);
    }
    // `order` is a random permutation; visiting it in sequence and closing the loop is a
    // single cycle through every page.
    for k in 0..pages {
        words[line[order[k]]] = line[order[(k + 1) % pages]] as u64;
    }
    // The chase starts at word 0: when page 0's line is elsewhere, word 0 is free and leads
    // into the cycle at that line.
    if line[0] != 0 {
        words[0] = line[0] as u64;
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
    fn page_chase_visits_every_page_once_per_cycle_one_line_each() {
        let pages = 300;
        let mut w = vec![0u64; pages * PAGE_WORDS];
        build_page_chase(&mut w, 11);
        let mut seen = vec![false; pages];
        let mut offsets = std::collections::BTreeSet::new();
        // Word 0 leads into the cycle (it may itself be a page's line).
        let mut p = w[0] as usize;
        for _ in 0..pages {
            assert!(!seen[p / PAGE_WORDS], "page visited twice in one cycle");
            seen[p / PAGE_WORDS] = true;
            assert_eq!(p % LINE_WORDS, 0, "a line's first word");
            offsets.insert(p % PAGE_WORDS);
            p = w[p] as usize;
        }
        assert!(seen.iter().all(|&s| s));
        // Lines spread over the page offsets (64 possible).
        assert!(offsets.len() > 40, "{}", offsets.len());
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
