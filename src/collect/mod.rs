//! Collect: evidence around a measurement — what backing a region really got (smaps, pagemap +
//! kpageflags), perf counters, kernel counter deltas, tracepoints, a server's process tree, load
//! generators' outputs — and a fleet's series read from Prometheus (`prometheus`, for `judge`).

pub mod coverage;
pub mod event;
pub mod folio_scan;
pub mod hot;
pub mod kubernetes;
pub mod load;
pub mod noise;
pub mod output;
pub mod perf;
pub mod prometheus;
pub mod sampler;
pub mod server;
pub mod snapshot;
pub mod tracepoints;
pub mod trial;

use crate::probe::Root;
use std::collections::BTreeMap;

/// Kernel counters that show huge-page activity: /proc/vmstat `thp_*`/`compact_*` and every
/// mTHP size's event stats (as `mthp.<size>.<stat>`; its gauges are [`huge_gauges`]). Raw
/// totals; deltas are computed by callers.
pub fn huge_counters(root: &Root) -> BTreeMap<String, u64> {
    let mut out = crate::probe::thp::read_vmstat(root)
        .map(|v| crate::probe::thp::huge_counters(&v))
        .unwrap_or_default();
    if let Ok(thp) = crate::probe::thp::read(root) {
        for m in thp.mthp {
            for (k, v) in m.stats {
                if !crate::probe::thp::is_gauge(&k) {
                    out.insert(format!("mthp.{}.{k}", crate::units::Bytes(m.size_bytes)), v);
                }
            }
        }
    }
    out
}

/// Every mTHP size's gauges now (`mthp.<size>.nr_anon`, `…nr_anon_partially_mapped`, …);
/// empty where the kernel has none.
pub fn huge_gauges(root: &Root) -> BTreeMap<String, u64> {
    crate::probe::thp::mthp_gauges(root).unwrap_or_default()
}

/// `after − before` for counters that changed.
pub fn deltas(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}
