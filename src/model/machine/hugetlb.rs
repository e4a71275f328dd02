//! hugetlb pools and hugetlbfs mounts as read.

pub const HUGEPAGES_DIR: &str = "/sys/kernel/mm/hugepages";
pub const NODE_DIR: &str = "/sys/devices/system/node";

/// A pool's per-NUMA-node share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodePool {
    pub node: u32,
    pub total: u64,
    pub free: u64,
    pub surplus: u64,
}

/// One hugetlb page size's pool. Counts are pages, not bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    pub page_size: u64,
    /// `nr_hugepages`: pages in the pool (persistent + surplus).
    pub total: u64,
    /// `free_hugepages`: not mapped by anyone; includes reserved-but-free pages.
    pub free: u64,
    /// `resv_hugepages`: promised to a mapping but not yet faulted in (still counted in `free`).
    pub reserved: u64,
    pub surplus: u64,
    pub overcommit: u64,
    /// Empty without NUMA sysfs (or on older layouts).
    pub nodes: Vec<NodePool>,
}

impl Pool {
    /// Pages faulted in by some mapping: total − free.
    pub fn faulted(&self) -> u64 {
        self.total.saturating_sub(self.free)
    }
    /// Pages in use: faulted in by some mapping (total − free). With
    /// [`reserved_free`](Self::reserved_free) and [`available`](Self::available) it adds up to
    /// the pool: see [`states`](Self::states).
    pub fn in_use(&self) -> u64 {
        self.faulted()
    }
    /// The one split of a pool every output uses: in use + reserved-free + free-unreserved =
    /// total (surplus pages are part of the total, shown apart).
    pub fn states(&self) -> [(&'static str, u64); 3] {
        [
            ("in_use", self.in_use()),
            ("reserved_free", self.reserved_free()),
            ("free_unreserved", self.available()),
        ]
    }
    /// Pages reserved by a mapping but not yet touched: memory no one else can have.
    pub fn reserved_free(&self) -> u64 {
        self.reserved.min(self.free)
    }
    /// Pages a new mapping can still get: free − reserved.
    pub fn available(&self) -> u64 {
        self.free.saturating_sub(self.reserved)
    }
    pub fn bytes(&self, pages: u64) -> u64 {
        pages.saturating_mul(self.page_size)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HugetlbfsMount {
    pub mount_point: String,
    /// From the `pagesize=` option; `None` means the default hugetlb page size.
    pub page_size: Option<u64>,
    pub options: String,
}
