//! Begin → end events of one thread become a latency; other events are counted by a field.

use super::hist::Hist;
use super::{Count, Latency, ProcessRow, TraceWindow};
use crate::collect::tracepoints::Event;
use crate::probe::tracefs::Format;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
struct PerProcess {
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

#[derive(Debug, Default)]
struct LatencyAgg {
    hist: Hist,
    by_pid: BTreeMap<u32, PerProcess>,
    by_order: BTreeMap<i64, (u64, u64)>,
    outcomes: BTreeMap<String, u64>,
}

impl LatencyAgg {
    fn add(&mut self, pid: u32, ns: u64, order: Option<i64>, outcome: Option<String>) {
        self.hist.add(ns);
        let p = self.by_pid.entry(pid).or_default();
        p.count += 1;
        p.total_ns += ns;
        p.max_ns = p.max_ns.max(ns);
        if let Some(o) = order {
            let e = self.by_order.entry(o).or_insert((0, 0));
            e.0 += 1;
            e.1 += ns;
        }
        if let Some(o) = outcome {
            *self.outcomes.entry(o).or_insert(0) += 1;
        }
    }
}

#[derive(Debug, Default)]
struct CountAgg {
    by_key: BTreeMap<String, u64>,
    by_pid: BTreeMap<u32, u64>,
}

/// The latency kinds: a begin event and an end event of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stall {
    DirectCompaction,
    BackgroundCompaction,
    DirectReclaim,
    MemcgReclaim,
    Migration,
}

impl Stall {
    const ALL: [Stall; 5] = [
        Stall::DirectCompaction,
        Stall::BackgroundCompaction,
        Stall::DirectReclaim,
        Stall::MemcgReclaim,
        Stall::Migration,
    ];

    fn name(self) -> &'static str {
        match self {
            Stall::DirectCompaction => "direct compaction",
            Stall::BackgroundCompaction => "background compaction",
            Stall::DirectReclaim => "direct reclaim",
            Stall::MemcgReclaim => "memcg reclaim",
            Stall::Migration => "page migration",
        }
    }

    fn begin(self) -> &'static str {
        match self {
            Stall::DirectCompaction | Stall::BackgroundCompaction => {
                "compaction:mm_compaction_begin"
            }
            Stall::DirectReclaim => "vmscan:mm_vmscan_direct_reclaim_begin",
            Stall::MemcgReclaim => "vmscan:mm_vmscan_memcg_reclaim_begin",
            Stall::Migration => "migrate:mm_migrate_pages_start",
        }
    }

    fn end(self) -> &'static str {
        match self {
            Stall::DirectCompaction | Stall::BackgroundCompaction => "compaction:mm_compaction_end",
            Stall::DirectReclaim => "vmscan:mm_vmscan_direct_reclaim_end",
            Stall::MemcgReclaim => "vmscan:mm_vmscan_memcg_reclaim_end",
            Stall::Migration => "migrate:mm_migrate_pages",
        }
    }

    /// How the time is derived, in words (printed with the histogram).
    fn how(self) -> &'static str {
        match self {
            Stall::DirectCompaction => {
                "mm_compaction_begin → mm_compaction_end of a thread that has entered try_to_compact_pages (an allocating task compacting one zone; one stall can compact several zones); order from mm_compaction_try_to_compact_pages"
            }
            Stall::BackgroundCompaction => {
                "mm_compaction_begin → mm_compaction_end of kcompactd or proactive compaction (no try_to_compact_pages before it)"
            }
            Stall::DirectReclaim => {
                "mm_vmscan_direct_reclaim_begin → _end of one thread; order from the begin event"
            }
            Stall::MemcgReclaim => {
                "mm_vmscan_memcg_reclaim_begin → _end of one thread (a cgroup over its limit)"
            }
            Stall::Migration => {
                "mm_migrate_pages_start → mm_migrate_pages of one thread; reason from the start event"
            }
        }
    }
}

/// A counted kind: every `event`, keyed by its `field` (shown as `key`; no field: one key).
struct Counted {
    kind: &'static str,
    event: &'static str,
    field: &'static str,
    key: &'static str,
}

const fn counted(
    kind: &'static str,
    event: &'static str,
    field: &'static str,
    key: &'static str,
) -> Counted {
    Counted {
        kind,
        event,
        field,
        key,
    }
}

const COUNTS: [Counted; 7] = [
    counted(
        "khugepaged scans",
        "huge_memory:mm_khugepaged_scan_pmd",
        "status",
        "result",
    ),
    counted(
        "khugepaged collapses",
        "huge_memory:mm_collapse_huge_page",
        "status",
        "result",
    ),
    counted(
        "khugepaged isolations",
        "huge_memory:mm_collapse_huge_page_isolate",
        "status",
        "result",
    ),
    counted(
        "page allocations (order ≥ 1)",
        "kmem:mm_page_alloc",
        "order",
        "order",
    ),
    counted(
        "fallbacks to another migratetype (extfrag)",
        "kmem:mm_page_alloc_extfrag",
        "alloc_order",
        "alloc order",
    ),
    counted("TLB flushes", "tlb:tlb_flush", "reason", "reason"),
    counted("user page faults", "exceptions:page_fault_user", "", "all"),
];

/// An open begin: when, the order it carried, and (migration) its reason by name.
#[derive(Debug, Clone)]
struct Open {
    at: u64,
    key: Option<i64>,
    reason: Option<String>,
}

pub struct Aggregator {
    names: Vec<String>,
    formats: Vec<Format>,
    lat: Vec<LatencyAgg>,
    counts: Vec<CountAgg>,
    /// (kind, tid) → open begin.
    open: BTreeMap<(Stall, u32), Open>,
    /// tid → the order of its last try_to_compact_pages and whether that call has stalled yet.
    /// kcompactd never calls it, so a thread in this map is an allocating task.
    direct: BTreeMap<u32, (i64, bool)>,
    stalls: u64,
    seen: BTreeMap<String, u64>,
    unpaired: u64,
}

impl Aggregator {
    /// `names[i]` and `formats[i]` describe the events of source `i`.
    pub fn new(names: Vec<String>, formats: Vec<Format>) -> Aggregator {
        Aggregator {
            names,
            formats,
            lat: Stall::ALL.iter().map(|_| LatencyAgg::default()).collect(),
            counts: COUNTS.iter().map(|_| CountAgg::default()).collect(),
            open: BTreeMap::new(),
            direct: BTreeMap::new(),
            stalls: 0,
            seen: BTreeMap::new(),
            unpaired: 0,
        }
    }

    pub fn add(&mut self, e: &Event) {
        let (Some(name), Some(f)) = (self.names.get(e.source), self.formats.get(e.source)) else {
            return;
        };
        let name = name.as_str();
        let raw = &e.raw;
        match self.seen.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.seen.insert(name.to_string(), 1);
            }
        }
        if name == "compaction:mm_compaction_try_to_compact_pages" {
            self.direct
                .insert(e.tid, (f.int(raw, "order").unwrap_or(-1), false));
            return;
        }
        let is_direct = self.direct.contains_key(&e.tid);
        // A try_to_compact_pages call stalls (compact_stall) once a zone compacts or is deferred.
        if is_direct
            && matches!(
                name,
                "compaction:mm_compaction_begin" | "compaction:mm_compaction_deferred"
            )
            && let Some((_, stalled)) = self.direct.get_mut(&e.tid)
            && !*stalled
        {
            *stalled = true;
            self.stalls += 1;
        }
        for s in Stall::ALL {
            if (s == Stall::DirectCompaction && !is_direct)
                || (s == Stall::BackgroundCompaction && is_direct)
            {
                continue;
            }
            if name == s.begin() {
                let key = match s {
                    Stall::DirectCompaction => self.direct.get(&e.tid).map(|d| d.0),
                    Stall::DirectReclaim | Stall::MemcgReclaim => f.int(raw, "order"),
                    _ => None,
                };
                let reason = (s == Stall::Migration)
                    .then(|| f.symbol(raw, "reason"))
                    .flatten();
                self.open.insert(
                    (s, e.tid),
                    Open {
                        at: e.time_ns,
                        key,
                        reason,
                    },
                );
            } else if name == s.end() {
                let Some(o) = self.open.remove(&(s, e.tid)) else {
                    self.unpaired += 1;
                    continue;
                };
                let ns = e.time_ns.saturating_sub(o.at);
                let outcome = match s {
                    Stall::DirectCompaction | Stall::BackgroundCompaction => {
                        f.symbol(raw, "status")
                    }
                    Stall::DirectReclaim | Stall::MemcgReclaim => {
                        f.int(raw, "nr_reclaimed").map(|n| {
                            if n > 0 {
                                "reclaimed pages"
                            } else {
                                "reclaimed nothing"
                            }
                            .into()
                        })
                    }
                    Stall::Migration => match (f.int(raw, "succeeded"), f.int(raw, "failed")) {
                        (Some(_), Some(x)) if x > 0 => Some("some pages failed".into()),
                        (Some(_), Some(_)) => Some("all migrated".into()),
                        _ => None,
                    },
                };
                let outcome = match o.reason {
                    Some(r) => Some(format!("{} ({r})", outcome.unwrap_or_default())),
                    None => outcome,
                };
                self.lat[s as usize].add(e.pid, ns, o.key, outcome);
            }
        }
        for (i, k) in COUNTS.iter().enumerate() {
            if name == k.event {
                let key = if k.field.is_empty() {
                    "all".to_string()
                } else if f.symbols.contains_key(k.field) {
                    f.symbol(raw, k.field).unwrap_or_default()
                } else if k.event == "kmem:mm_page_alloc_extfrag" {
                    format!(
                        "{} → {}",
                        f.int(raw, "alloc_order").unwrap_or(-1),
                        f.int(raw, "fallback_order").unwrap_or(-1)
                    )
                } else {
                    f.int(raw, k.field)
                        .map(|v| v.to_string())
                        .unwrap_or_default()
                };
                let c = &mut self.counts[i];
                *c.by_key.entry(key).or_insert(0) += 1;
                *c.by_pid.entry(e.pid).or_insert(0) += 1;
            }
        }
    }

    /// The window so far, with process names from `comm`; counts start again, open begins stay.
    pub fn take(
        &mut self,
        start_s: f64,
        seconds: f64,
        comm: &dyn Fn(u32) -> String,
    ) -> TraceWindow {
        let rows = |m: &BTreeMap<u32, PerProcess>| {
            let mut v: Vec<ProcessRow> = m
                .iter()
                .map(|(pid, p)| ProcessRow {
                    pid: *pid,
                    comm: comm(*pid),
                    count: p.count,
                    total_ns: p.total_ns,
                    max_ns: p.max_ns,
                })
                .collect();
            v.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.count.cmp(&a.count)));
            v.truncate(10);
            v
        };
        let present = |e: &str| self.names.iter().any(|n| n == e);
        let latencies = Stall::ALL
            .iter()
            .zip(std::mem::take(&mut self.lat))
            .filter(|(s, _)| present(s.begin()) && present(s.end()))
            .map(|(s, a)| Latency {
                kind: s.name().to_string(),
                how: s.how().to_string(),
                hist: a.hist.summary(),
                by_process: rows(&a.by_pid),
                by_order: a.by_order,
                outcomes: a.outcomes,
            })
            .collect();
        self.lat = Stall::ALL.iter().map(|_| LatencyAgg::default()).collect();
        let counts = COUNTS
            .iter()
            .zip(std::mem::take(&mut self.counts))
            .filter(|(k, _)| present(k.event))
            .map(|(k, c)| {
                let mut by: Vec<ProcessRow> = c
                    .by_pid
                    .iter()
                    .map(|(pid, n)| ProcessRow {
                        pid: *pid,
                        comm: comm(*pid),
                        count: *n,
                        total_ns: 0,
                        max_ns: 0,
                    })
                    .collect();
                by.sort_by_key(|p| std::cmp::Reverse(p.count));
                by.truncate(10);
                Count {
                    kind: k.kind.to_string(),
                    event: k.event.to_string(),
                    key: k.key.to_string(),
                    total: c.by_key.values().sum(),
                    by_key: c.by_key,
                    by_process: by,
                }
            })
            .collect();
        self.counts = COUNTS.iter().map(|_| CountAgg::default()).collect();
        TraceWindow {
            start_s,
            seconds,
            latencies,
            counts,
            unpaired: std::mem::take(&mut self.unpaired),
            open_at_end: self.open.len() as u64,
            direct_compaction_stalls: std::mem::take(&mut self.stalls),
            events_seen: {
                // Every opened event has a row, so a count of 0 is a count, not an absence.
                let mut seen = std::mem::take(&mut self.seen);
                for n in &self.names {
                    seen.entry(n.clone()).or_insert(0);
                }
                seen
            },
            kernel: Vec::new(),
        }
    }
}
