//! A pointer chase written apart from hugelab's own (`bench chase`), to check its answer against
//! one it did not compute: every 64-byte line of an anonymous region a node, the lines in one
//! random cycle, so that a step lands on a page the last one did not and its page-table entries
//! are as far from the caches as its data: what a TLB and a page walk see of a large working
//! set. The huge side asks THP for the region (`MADV_HUGEPAGE`, which THP's `madvise` mode
//! grants) and reports how much of it the kernel backed with huge pages (its `AnonHugePages` in
//! `/proc/self/smaps`).

use std::time::Instant;

const LINE: usize = 64;
const HUGE: usize = 2 << 20;

/// One region, mapped 2 MiB-aligned and linked into its cycle.
struct Region {
    map: *mut libc::c_void,
    len: usize,
    start: *mut u8,
    bytes: usize,
}

impl Region {
    /// `bytes` of anonymous memory, THP asked for (`huge`) or refused, every page written.
    fn new(bytes: usize, huge: bool, seed: u64) -> Region {
        let len = bytes + HUGE;
        // SAFETY: an anonymous private mapping of our own; checked against MAP_FAILED.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED, "mmap {len} bytes");
        let start = (map as usize).next_multiple_of(HUGE) as *mut u8;
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: advice on a range inside our own mapping.
        let rc = unsafe { libc::madvise(start.cast(), bytes, advice) };
        assert_eq!(rc, 0, "madvise");
        let r = Region {
            map,
            len,
            start,
            bytes,
        };
        r.link(seed);
        r
    }

    /// The node of line `i`.
    fn node(&self, i: usize) -> *mut usize {
        // SAFETY: i < lines, so the address is inside the region.
        unsafe { self.start.add(i * LINE).cast() }
    }

    /// Every line's node points at the next line of one random cycle (Fisher–Yates, xorshift).
    fn link(&self, seed: u64) {
        let lines = self.bytes / LINE;
        let mut order: Vec<u32> = (0..lines as u32).collect();
        let mut x = seed | 1;
        for i in (1..lines).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for k in 0..lines {
            let next = self.node(order[(k + 1) % lines] as usize) as usize;
            // SAFETY: a node inside the region, written before any read.
            unsafe { self.node(order[k] as usize).write(next) };
        }
    }

    /// Nanoseconds a step over `steps` steps of the cycle.
    fn chase(&self, steps: usize) -> f64 {
        let mut p = self.node(0) as usize;
        let t = Instant::now();
        for _ in 0..steps {
            // SAFETY: every node holds the address of another node of the region.
            p = unsafe { (p as *const usize).read_volatile() };
        }
        let ns = t.elapsed().as_nanos() as f64;
        std::hint::black_box(p);
        ns / steps as f64
    }

    /// The region's bytes the kernel backs with transparent huge pages (`AnonHugePages` of
    /// its mapping in `/proc/self/smaps`).
    fn anon_huge_bytes(&self) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((a, b)) = range.split_once('-')
                && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            {
                inside = a <= self.start as usize && (self.start as usize) < b;
            } else if inside && let Some(kb) = line.strip_prefix("AnonHugePages:") {
                let kb: u64 = kb.trim().trim_end_matches(" kB").trim().parse().unwrap();
                return kb * 1024;
            }
        }
        0
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this region made.
        unsafe { libc::munmap(self.map, self.len) };
    }
}

/// What the independent chase measured over `bytes`: the huge region's time a step over the
/// 4 KiB one's (the median of `rounds` rounds, the two regions alternating in each), and the
/// share of the huge region the kernel backed with huge pages.
pub struct Chased {
    pub ratio: f64,
    pub huge_share: f64,
}

pub fn thp_over_4k(bytes: usize, rounds: usize) -> Chased {
    let small = Region::new(bytes, false, 0x9e37_79b9_7f4a_7c15);
    let huge = Region::new(bytes, true, 0x9e37_79b9_7f4a_7c15);
    let huge_share = huge.anon_huge_bytes() as f64 / bytes as f64;
    // About a second a round at a few hundred nanoseconds a step.
    let steps = 1 << 21;
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|_| huge.chase(steps) / small.chase(steps))
        .collect();
    ratios.sort_by(f64::total_cmp);
    Chased {
        ratio: ratios[rounds / 2],
        huge_share,
    }
}
