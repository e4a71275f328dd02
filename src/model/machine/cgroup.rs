//! A cgroup as read: its version, its memory figures and the labels its path gives.

use std::collections::BTreeMap;

/// Which cgroup version a controller is mounted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Version {
    #[serde(rename = "v1")]
    V1,
    #[serde(rename = "v2")]
    V2,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }
}

/// One cgroup's memory and huge pages, hierarchical (the group with its descendants).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Group {
    /// Its path from the hierarchy's root, `/` for the root itself.
    pub path: String,
    /// Memory charged to it (v2 `memory.current`, v1 `memory.usage_in_bytes`); hugetlb pages
    /// are not in it.
    pub memory: Option<u64>,
    /// Anonymous memory (v2 `anon`, v1 `total_rss`).
    pub anon: Option<u64>,
    /// Anonymous THP (v2 `anon_thp`, v1 `total_rss_huge`).
    pub anon_thp: Option<u64>,
    /// File-backed and shared-memory THP (v2 `file_thp`, `shmem_thp`; v1 does not count them).
    pub file_thp: Option<u64>,
    pub shmem_thp: Option<u64>,
    /// hugetlb pages in use, bytes by page size.
    pub hugetlb: BTreeMap<u64, u64>,
    /// Which version each figure came from.
    pub memory_from: Option<Version>,
    pub hugetlb_from: Option<Version>,
    /// `memory` already holds the hugetlb pages (`memory_hugetlb_accounting`): they are not
    /// added to it again.
    #[serde(default)]
    pub memory_counts_hugetlb: bool,
}

impl Group {
    /// Bytes on huge pages of every kind the kernel counted.
    pub fn huge(&self) -> u64 {
        self.anon_thp.unwrap_or(0)
            + self.file_thp.unwrap_or(0)
            + self.shmem_thp.unwrap_or(0)
            + self.hugetlb_bytes()
    }

    pub fn hugetlb_bytes(&self) -> u64 {
        self.hugetlb.values().sum()
    }

    /// Its whole memory, each byte once: what memory charged plus its hugetlb pages, unless
    /// memory already charged them (`memory_hugetlb_accounting`).
    pub fn total(&self) -> u64 {
        match self.memory {
            Some(m) if self.memory_counts_hugetlb => m.max(self.hugetlb_bytes()),
            m => m.unwrap_or(0) + self.hugetlb_bytes(),
        }
    }

    /// The share of [`Group::total`] on huge pages; `None` for a group with no memory.
    pub fn share(&self) -> Option<f64> {
        let t = self.total();
        (t > 0).then(|| (self.huge() as f64 / t as f64).min(1.0))
    }
}
