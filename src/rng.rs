//! The one pseudo-random generator (a utility below every stage): seeded, fast and
//! reproducible, for access patterns, block orders' tests, bootstrap and simulation.

/// xorshift64* (Vigna 2016): fast enough not to dominate an L1-resident `touch`.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        XorShift(seed | 1)
    }
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in 0..n without division (Lemire's multiply-high reduction).
    #[inline(always)]
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}
