//! hugetlb pools: /sys/kernel/mm/hugepages per size and /sys/devices/system/node per node.

use super::{Root, parse_hugepages_dir};
use crate::error::ProbeError;

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

fn node_pools(root: &Root, dir_name: &str) -> Result<Vec<NodePool>, ProbeError> {
    let mut out = Vec::new();
    for node_name in root.list_dir(NODE_DIR)? {
        let Some(node) = node_name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = format!("{NODE_DIR}/{node_name}/hugepages/{dir_name}");
        let Some(total) = root.read_u64(format!("{dir}/nr_hugepages"))? else {
            continue;
        };
        out.push(NodePool {
            node,
            total,
            free: root.read_u64(format!("{dir}/free_hugepages"))?.unwrap_or(0),
            surplus: root
                .read_u64(format!("{dir}/surplus_hugepages"))?
                .unwrap_or(0),
        });
    }
    out.sort_by_key(|n| n.node);
    Ok(out)
}

/// Every hugetlb page size the kernel offers, smallest first. Empty without hugetlb support.
/// Free bytes per hugetlb page size (HugePages_Free), empty where unreadable.
pub fn free_bytes(root: &Root) -> std::collections::BTreeMap<u64, u64> {
    read(root)
        .unwrap_or_default()
        .iter()
        .map(|p| (p.page_size, p.bytes(p.free)))
        .collect()
}

pub fn read(root: &Root) -> Result<Vec<Pool>, ProbeError> {
    let mut pools = Vec::new();
    for name in root.list_dir(HUGEPAGES_DIR)? {
        let Some(page_size) = parse_hugepages_dir(&name) else {
            continue;
        };
        let dir = format!("{HUGEPAGES_DIR}/{name}");
        let n = |f: &str| root.read_u64(format!("{dir}/{f}"));
        pools.push(Pool {
            page_size,
            total: n("nr_hugepages")?.unwrap_or(0),
            free: n("free_hugepages")?.unwrap_or(0),
            reserved: n("resv_hugepages")?.unwrap_or(0),
            surplus: n("surplus_hugepages")?.unwrap_or(0),
            overcommit: n("nr_overcommit_hugepages")?.unwrap_or(0),
            nodes: node_pools(root, &name)?,
        });
    }
    pools.sort_by_key(|p| p.page_size);
    Ok(pools)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pool_states_add_up_to_the_pool_with_reservations_and_surplus() {
        let p = super::Pool {
            page_size: 2 << 20,
            total: 10,
            free: 6,
            reserved: 2,
            surplus: 1,
            overcommit: 4,
            nodes: Vec::new(),
        };
        let states = p.states();
        assert_eq!(
            states,
            [("in_use", 4), ("reserved_free", 2), ("free_unreserved", 4)]
        );
        assert_eq!(states.iter().map(|s| s.1).sum::<u64>(), p.total);
    }

    use super::*;

    #[test]
    fn derived_counts() {
        let p = Pool {
            page_size: 2 << 20,
            total: 10,
            free: 6,
            reserved: 2,
            surplus: 0,
            overcommit: 0,
            nodes: vec![],
        };
        assert_eq!(p.faulted(), 4);
        assert_eq!(p.in_use(), 4, "reserved-free pages are not in use");
        assert_eq!(p.reserved_free(), 2);
        assert_eq!(p.available(), 4);
    }
}
