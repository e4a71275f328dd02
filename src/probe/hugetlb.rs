//! hugetlb pools: /sys/kernel/mm/hugepages per size and /sys/devices/system/node per node.

pub use crate::model::machine::hugetlb::{HUGEPAGES_DIR, NODE_DIR, NodePool, Pool};

use super::{Root, parse_hugepages_dir};
use crate::error::ProbeError;

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
