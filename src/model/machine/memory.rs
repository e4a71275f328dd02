//! Memory as read: /proc/meminfo and the buddy allocator's free blocks per zone.

/// Fields of /proc/meminfo in bytes. Fields a kernel lacks are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Meminfo {
    pub mem_total: Option<u64>,
    pub mem_free: Option<u64>,
    /// Since Linux 3.14.
    pub mem_available: Option<u64>,
    pub anon_huge_pages: Option<u64>,
    /// Since Linux 4.8.
    pub shmem_huge_pages: Option<u64>,
    /// Since Linux 5.4.
    pub file_huge_pages: Option<u64>,
    /// All hugetlb pools, every size, in bytes. Since Linux 4.16.
    pub hugetlb: Option<u64>,
    /// Default hugetlb page size.
    pub hugepagesize: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Zone {
    pub node: u32,
    pub zone: String,
    /// Free blocks of order 0, 1, 2, … (a block of order k is 2^k base pages).
    pub free_blocks: Vec<u64>,
}

impl Zone {
    pub fn free_pages(&self) -> u64 {
        self.free_blocks
            .iter()
            .enumerate()
            .map(|(o, n)| n.saturating_mul(1u64 << o.min(63)))
            .fold(0, u64::saturating_add)
    }

    /// Base pages free in blocks of at least `order`.
    pub fn free_pages_at_least(&self, order: usize) -> u64 {
        self.free_blocks
            .iter()
            .enumerate()
            .skip(order)
            .map(|(o, n)| n.saturating_mul(1u64 << o.min(63)))
            .fold(0, u64::saturating_add)
    }

    /// How many blocks of `order` could be handed out now without compaction.
    pub fn blocks_available(&self, order: usize) -> u64 {
        self.free_pages_at_least(order) >> order.min(63)
    }
}

/// Fragmentation seen at one allocation order across all zones.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fragmentation {
    pub order: usize,
    pub free_pages: u64,
    /// Blocks of `order` free now, summed over zones.
    pub blocks_available: u64,
    /// Fraction of free memory that cannot serve an allocation of `order` (0 = none, 1 = all).
    pub unusable_index: Option<f64>,
}
