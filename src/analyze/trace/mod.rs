//! What `hugelab trace` and `run --trace` make of tracepoint events, one idea per file:
//!
//! * this module — the records a window produces (re-exported by `model::trace`) and the check
//!   of traced counts against /proc/vmstat;
//! * [`catalogue`] — the kinds that can be traced and their events (`--trace KINDS`);
//! * [`pairing`] — begin → end events of one thread become a latency, other events are counted
//!   by a field; memory is bounded by the threads in flight and processes seen, never by the
//!   event count;
//! * [`hist`] — the bounded log-linear latency histogram;
//! * [`stalls`] — stall time per trial compared between arms.
//!
//! Pure: events in, records out.

pub mod catalogue;
pub mod hist;
pub mod pairing;
pub mod stalls;

pub use catalogue::{TraceKind, tracepoints};
pub use hist::Hist;
pub use pairing::Aggregator;
pub use stalls::{StallContrast, TrialStall, stall_contrasts};

pub use crate::model::trace::{Count, HistSummary, KernelCheck, Latency, ProcessRow, TraceWindow};
use std::collections::BTreeMap;

// The records a window produces (re-exported by `model::trace`). They read back from a stored
// trial's evidence (`store::TrialRow::trace`); a field a run did not store reads as its default.

/// The checks a window supports: compaction stalls against `compact_stall`, direct reclaim
/// against the `allocstall_*` sum, anonymous collapses against `thp_collapse_alloc[_failed]`.
/// `vmstat` holds the deltas over the window.
pub fn kernel_checks(w: &TraceWindow, vmstat: &BTreeMap<String, u64>) -> Vec<KernelCheck> {
    let mut out = Vec::new();
    let mut check = |counter: &str, delta: u64, traced: u64, how: &str| {
        out.push(KernelCheck {
            counter: counter.into(),
            vmstat_delta: delta,
            traced,
            traced_as: how.into(),
            equal: delta == traced,
        })
    };
    let seen = |e: &str| w.events_seen.get(e).copied();
    let has = |e: &str| w.events_seen.contains_key(e);
    if has("compaction:mm_compaction_try_to_compact_pages") {
        check(
            "compact_stall",
            vmstat.get("compact_stall").copied().unwrap_or(0),
            w.direct_compaction_stalls,
            "try_to_compact_pages calls followed by a zone's mm_compaction_begin or mm_compaction_deferred",
        );
    }
    if let Some(n) = seen("vmscan:mm_vmscan_direct_reclaim_begin") {
        let stalls = vmstat
            .iter()
            .filter(|(k, _)| k.starts_with("allocstall_"))
            .map(|(_, v)| v)
            .sum();
        check(
            "allocstall_* (sum)",
            stalls,
            n,
            "mm_vmscan_direct_reclaim_begin",
        );
    }
    if let Some(c) = w
        .counts
        .iter()
        .find(|c| c.event == "huge_memory:mm_collapse_huge_page")
    {
        let failed = c.by_key.get("alloc_huge_page_failed").copied().unwrap_or(0);
        check(
            "thp_collapse_alloc",
            vmstat.get("thp_collapse_alloc").copied().unwrap_or(0),
            c.total - failed,
            "mm_collapse_huge_page, status other than alloc_huge_page_failed (anonymous collapses: khugepaged and MADV_COLLAPSE)",
        );
        check(
            "thp_collapse_alloc_failed",
            vmstat
                .get("thp_collapse_alloc_failed")
                .copied()
                .unwrap_or(0),
            failed,
            "mm_collapse_huge_page, status alloc_huge_page_failed",
        );
    }
    out
}
#[cfg(test)]
mod tests {
    use super::hist::{bucket, upper};
    use super::*;
    use crate::collect::tracepoints::Event;
    use crate::probe::tracefs::Format;
    use crate::probe::tracefs::parse_format;

    fn fmt(name: &str, id: u64, fields: &[(&str, usize, usize, bool)], print: &str) -> Format {
        let mut t = format!("name: {name}\nID: {id}\nformat:\n");
        for (n, off, size, signed) in fields {
            t += &format!(
                "\tfield:int {n};\toffset:{off};\tsize:{size};\tsigned:{};\n",
                *signed as u8
            );
        }
        t += &format!("\nprint fmt: \"x\", {print}\n");
        parse_format(&t).unwrap()
    }

    fn ev(source: usize, t: u64, tid: u32, fields: &[(usize, i32)]) -> Event {
        let mut raw = vec![0u8; 32];
        for (off, v) in fields {
            raw[*off..*off + 4].copy_from_slice(&v.to_le_bytes());
        }
        Event {
            source,
            time_ns: t,
            pid: tid,
            tid,
            raw,
        }
    }

    #[test]
    fn direct_and_background_compaction_are_paired_per_thread() {
        let names = vec![
            "compaction:mm_compaction_try_to_compact_pages".to_string(),
            "compaction:mm_compaction_begin".to_string(),
            "compaction:mm_compaction_end".to_string(),
        ];
        let formats = vec![
            fmt("try", 1, &[("order", 8, 4, true)], "REC->order"),
            fmt("begin", 2, &[], "0"),
            fmt(
                "end",
                3,
                &[("status", 8, 4, true)],
                "__print_symbolic(REC->status, {1, \"skipped\"}, {8, \"success\"})",
            ),
        ];
        let mut a = Aggregator::new(names, formats);
        // Thread 10 allocates order 9 and compacts twice (two zones); thread 20 is kcompactd;
        // their events interleave.
        for e in [
            ev(0, 0, 10, &[(8, 9)]),
            ev(1, 100, 10, &[]),
            ev(1, 150, 20, &[]),
            ev(2, 1_100, 10, &[(8, 8)]),
            ev(0, 1_200, 10, &[(8, 9)]),
            ev(1, 1_300, 10, &[]),
            ev(2, 3_300, 10, &[(8, 1)]),
            ev(2, 5_150, 20, &[(8, 8)]),
            ev(2, 6_000, 30, &[(8, 8)]), // an end whose begin came before the trace
        ] {
            a.add(&e);
        }
        let w = a.take(0.0, 1.0, &|p| format!("p{p}"));
        let direct = &w.latencies[0];
        assert_eq!(direct.kind, "direct compaction");
        assert_eq!(
            (direct.hist.count, direct.hist.total_ns, direct.hist.max_ns),
            (2, 3_000, 2_000)
        );
        assert_eq!(direct.by_order[&9], (2, 3_000));
        assert_eq!(direct.outcomes["success"], 1);
        assert_eq!(direct.outcomes["skipped"], 1);
        assert_eq!(direct.by_process[0].comm, "p10");
        let bg = &w.latencies[1];
        assert_eq!((bg.hist.count, bg.hist.total_ns), (1, 5_000));
        assert_eq!(w.unpaired, 1);
        assert_eq!(
            w.direct_compaction_stalls, 2,
            "two try_to_compact_pages calls, each compacted"
        );
        assert_eq!(w.events_seen["compaction:mm_compaction_end"], 4);
        let checks = kernel_checks(&w, &BTreeMap::from([("compact_stall".to_string(), 2)]));
        assert_eq!(checks.len(), 1);
        assert!(checks[0].equal && checks[0].counter == "compact_stall");
        let checks = kernel_checks(&w, &BTreeMap::from([("compact_stall".to_string(), 3)]));
        assert!(!checks[0].equal, "a check can fail");
        // A new window starts empty.
        let w2 = a.take(1.0, 1.0, &|p| format!("p{p}"));
        assert_eq!(w2.latencies[0].hist.count, 0);
    }

    #[test]
    fn stall_time_is_compared_between_arms_by_paired_differences() {
        let names = vec!["never".to_string(), "always".to_string()];
        let mut stalls = Vec::new();
        let mut traced = Vec::new();
        for b in 0..12i64 {
            traced.push((b, 0));
            traced.push((b, 1));
            // `always` stalls 300–410 ms per trial; `never` never stalls (no row at all).
            stalls.push(TrialStall {
                block: b,
                arm: 1,
                kind: "direct compaction".into(),
                ms: 300.0 + 10.0 * b as f64,
            });
        }
        let c = stall_contrasts(&stalls, &traced, &names, 0, 0.99);
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(
            (c.arm.as_str(), c.baseline.as_str(), c.blocks),
            ("always", "never", 12)
        );
        assert_eq!((c.arm_mean_ms, c.baseline_mean_ms), (355.0, 0.0));
        assert_eq!(c.difference_ms.point, 355.0);
        let (lo, hi) = (c.difference_ms.lo.unwrap(), c.difference_ms.hi.unwrap());
        assert!(
            lo > 300.0 && hi < 410.0 && lo < 355.0 && hi > 355.0,
            "{lo} {hi}"
        );
        // A block whose baseline trial was not traced is left out of the pairs.
        traced.retain(|t| *t != (0, 0));
        assert_eq!(
            stall_contrasts(&stalls, &traced, &names, 0, 0.99)[0].blocks,
            11
        );
    }

    #[test]
    fn histogram_quantiles_are_within_a_ninth() {
        let mut h = Hist::default();
        for v in 1..=10_000u64 {
            h.add(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((5.0e6..=5.0e6 * 1.125).contains(&p50), "{p50}");
        assert!((9.9e6..=9.9e6 * 1.125).contains(&p99), "{p99}");
        assert_eq!(h.quantile(1.0), 10_000_000);
        let s = h.summary();
        assert_eq!(s.log2.iter().map(|r| r.1).sum::<u64>(), 10_000);
        assert!(s.log2.iter().all(|(lo, _)| lo.is_power_of_two()));
        // Every value falls in a bucket whose upper edge is at least the value.
        for v in [0u64, 1, 7, 8, 9, 15, 16, 1000, 1 << 40, u64::MAX / 3] {
            assert!(upper(bucket(v)) >= v, "{v}");
            assert!(upper(bucket(v)) as f64 <= (v as f64) * 1.125 + 1.0, "{v}");
        }
    }
}
