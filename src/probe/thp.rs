//! Transparent huge pages: /sys/kernel/mm/transparent_hugepage, khugepaged and mTHP sizes.

pub use crate::model::machine::thp::{Khugepaged, MthpSize, THP_DIR, Thp};

use super::kv::{Selector, parse_selector};
use super::{Root, parse_hugepages_dir};
use crate::error::ProbeError;
use std::collections::BTreeMap;

fn selector(root: &Root, path: &str) -> Result<Option<Selector>, ProbeError> {
    root.parse_opt(path, parse_selector)
}

pub fn read(root: &Root) -> Result<Thp, ProbeError> {
    let k = |name: &str| root.read_u64(format!("{THP_DIR}/khugepaged/{name}"));
    let khugepaged = Khugepaged {
        pages_to_scan: k("pages_to_scan")?,
        scan_sleep_millisecs: k("scan_sleep_millisecs")?,
        alloc_sleep_millisecs: k("alloc_sleep_millisecs")?,
        max_ptes_none: k("max_ptes_none")?,
        max_ptes_swap: k("max_ptes_swap")?,
        max_ptes_shared: k("max_ptes_shared")?,
        defrag: k("defrag")?,
        full_scans: k("full_scans")?,
        pages_collapsed: k("pages_collapsed")?,
    };
    let mut mthp = Vec::new();
    for name in root.list_dir(THP_DIR)? {
        let Some(size_bytes) = parse_hugepages_dir(&name) else {
            continue;
        };
        let dir = format!("{THP_DIR}/{name}");
        let mut stats = BTreeMap::new();
        for stat in root.list_dir(format!("{dir}/stats"))? {
            if let Some(v) = root.read_u64(format!("{dir}/stats/{stat}"))? {
                stats.insert(stat, v);
            }
        }
        mthp.push(MthpSize {
            size_bytes,
            enabled: selector(root, &format!("{dir}/enabled"))?,
            shmem_enabled: selector(root, &format!("{dir}/shmem_enabled"))?,
            stats,
        });
    }
    mthp.sort_by_key(|m| m.size_bytes);
    Ok(Thp {
        enabled: selector(root, &format!("{THP_DIR}/enabled"))?,
        defrag: selector(root, &format!("{THP_DIR}/defrag"))?,
        shmem_enabled: selector(root, &format!("{THP_DIR}/shmem_enabled"))?,
        use_zero_page: root.read_u64(format!("{THP_DIR}/use_zero_page"))?,
        shrink_underused: root.read_u64(format!("{THP_DIR}/shrink_underused"))?,
        hpage_pmd_size: root.read_u64(format!("{THP_DIR}/hpage_pmd_size"))?,
        khugepaged,
        mthp,
    })
}

/// Whether an mTHP stat is a gauge (a count of folios now: `nr_anon`,
/// `nr_anon_partially_mapped`) rather than an event counter since boot.
pub fn is_gauge(stat: &str) -> bool {
    stat.starts_with("nr_")
}

/// Every mTHP size's gauges now, as `mthp.<size>.<stat>`: the `nr_*` files its `stats/`
/// directory holds (read from the directory, whatever this kernel offers).
pub fn mthp_gauges(root: &Root) -> Result<BTreeMap<String, u64>, ProbeError> {
    let mut out = BTreeMap::new();
    for name in root.list_dir(THP_DIR)? {
        let Some(size) = parse_hugepages_dir(&name) else {
            continue;
        };
        let dir = format!("{THP_DIR}/{name}/stats");
        for stat in root.list_dir(&dir)?.into_iter().filter(|s| is_gauge(s)) {
            if let Some(v) = root.read_u64(format!("{dir}/{stat}"))? {
                out.insert(format!("mthp.{}.{stat}", crate::units::Bytes(size)), v);
            }
        }
    }
    Ok(out)
}

/// /proc/vmstat counters that describe THP and compaction activity (`thp_*`, `compact_*`).
pub fn huge_counters(vmstat: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    vmstat
        .iter()
        .filter(|(k, _)| {
            [
                "thp_",
                "compact_",
                "allocstall_",
                "pgscan_direct",
                "pgsteal_direct",
            ]
            .iter()
            .any(|p| k.starts_with(p))
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

pub fn read_vmstat(root: &Root) -> Result<BTreeMap<String, u64>, ProbeError> {
    Ok(root
        .parse_opt("/proc/vmstat", super::kv::parse_key_values)?
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::kv::parse_key_values;

    #[test]
    fn counters_filtered() {
        let v = parse_key_values("thp_fault_alloc 1\nnr_free_pages 2\ncompact_stall 3\n").unwrap();
        let c = huge_counters(&v);
        assert_eq!(c.len(), 2);
        assert_eq!(c["compact_stall"], 3);
    }
}
