//! Pairing and histograms for `hugelab trace`: begin → end events of one thread become a
//! latency; other events are counted by a field. Pure: events in, records out; memory is
//! bounded by the number of threads in flight and processes seen, never by the event count.

use crate::collect::tracepoints::Event;
use crate::probe::tracefs::Format;
use std::collections::BTreeMap;

// The records a window produces (re-exported by `model::trace`).

/// A bounded latency histogram as printed: log2 rows plus quantiles from finer buckets.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HistSummary {
    pub count: u64,
    pub total_ns: u64,
    /// Upper edge of the bucket holding the median (buckets are 1/8 octave: within 9%).
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// (lower edge in ns, count) per power of two, like SystemTap's @hist_log.
    pub log2: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessRow {
    pub pid: u32,
    pub comm: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// One kind of stall: paired begin → end events of one thread.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Latency {
    pub kind: String,
    /// The events paired and what the time means.
    pub how: String,
    pub hist: HistSummary,
    pub by_process: Vec<ProcessRow>,
    /// Allocation order → (count, total ns), where the begin event says the order.
    pub by_order: BTreeMap<i64, (u64, u64)>,
    /// Outcomes named by the end event (compaction status, pages reclaimed, migration result).
    pub outcomes: BTreeMap<String, u64>,
}

/// Events counted by one key (order, status, reason).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Count {
    pub kind: String,
    pub event: String,
    /// What the keys are (order, status, reason, …).
    pub key: String,
    pub total: u64,
    pub by_key: BTreeMap<String, u64>,
    /// The processes with the most events.
    pub by_process: Vec<ProcessRow>,
}

/// One window of a trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceWindow {
    pub start_s: f64,
    pub seconds: f64,
    pub latencies: Vec<Latency>,
    pub counts: Vec<Count>,
    /// Ends without a begin in the window's thread (the begin came before the trace), and begins
    /// still open when it ended.
    pub unpaired: u64,
    pub open_at_end: u64,
    /// Direct compaction stalls: try_to_compact_pages calls that compacted a zone or found one
    /// deferred — what /proc/vmstat `compact_stall` counts.
    pub direct_compaction_stalls: u64,
    /// Every event the window saw, by tracepoint.
    pub events_seen: BTreeMap<String, u64>,
    /// Traced counts next to the /proc/vmstat counters that count the same thing (system-wide
    /// traces only; filled by the command, which reads /proc/vmstat at the window's edges).
    pub kernel: Vec<KernelCheck>,
}

/// A traced count and the /proc/vmstat delta over the same window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelCheck {
    pub counter: String,
    pub vmstat_delta: u64,
    pub traced: u64,
    /// Which events were counted.
    pub traced_as: String,
    pub equal: bool,
}

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

/// Stall time per trial of one arm against the baseline, from paired blocks: the difference
/// in milliseconds (not a ratio: a baseline that never stalls has no ratio).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StallContrast {
    pub kind: String,
    pub arm: String,
    pub baseline: String,
    pub arm_mean_ms: f64,
    pub baseline_mean_ms: f64,
    /// Blocks where both arms' trials were traced.
    pub blocks: usize,
    /// arm − baseline, ms per trial: Hodges–Lehmann of the per-block differences with its
    /// signed-rank interval (unadjusted for the number of contrasts).
    pub difference_ms: crate::analyze::stats::Estimate,
}

/// One traced trial's stall time of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialStall {
    pub block: i64,
    pub arm: usize,
    pub kind: String,
    pub ms: f64,
}

/// Per latency kind that stalled in any trial, each arm against the baseline. `traced` lists
/// (block, arm) of every traced trial (a traced trial without a kind stalled 0 ms in it).
pub fn stall_contrasts(
    stalls: &[TrialStall],
    traced: &[(i64, usize)],
    names: &[String],
    baseline: usize,
    confidence: f64,
) -> Vec<StallContrast> {
    let mut kinds: Vec<&str> = stalls
        .iter()
        .filter(|s| s.ms > 0.0)
        .map(|s| s.kind.as_str())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let ms = |block: i64, arm: usize, kind: &str| -> Option<f64> {
        traced.contains(&(block, arm)).then(|| {
            stalls
                .iter()
                .filter(|s| s.block == block && s.arm == arm && s.kind == kind)
                .map(|s| s.ms)
                .sum()
        })
    };
    let mut out = Vec::new();
    for kind in kinds {
        for arm in (0..names.len()).filter(|a| *a != baseline) {
            let mut blocks: Vec<i64> = traced.iter().map(|t| t.0).collect();
            blocks.sort_unstable();
            blocks.dedup();
            let pairs: Vec<(f64, f64)> = blocks
                .iter()
                .filter_map(|b| Some((ms(*b, arm, kind)?, ms(*b, baseline, kind)?)))
                .collect();
            let d: Vec<f64> = pairs.iter().map(|(a, b)| a - b).collect();
            let Some(e) = crate::analyze::stats::hodges_lehmann(&d, confidence) else {
                continue;
            };
            let mean =
                |f: fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / pairs.len() as f64;
            out.push(StallContrast {
                kind: kind.to_string(),
                arm: names[arm].clone(),
                baseline: names[baseline].clone(),
                arm_mean_ms: mean(|p| p.0),
                baseline_mean_ms: mean(|p| p.1),
                blocks: pairs.len(),
                difference_ms: e,
            });
        }
    }
    out
}

/// What can be traced, by kind name: (events, what they give).
pub const KINDS: [(&str, &str); 7] = [
    (
        "compaction",
        "direct compaction and kcompactd stalls (mm_compaction_begin → _end), order, status",
    ),
    (
        "reclaim",
        "direct and memcg reclaim stalls (mm_vmscan_*_reclaim_begin → _end), order, pages reclaimed",
    ),
    (
        "migrate",
        "page migration (mm_migrate_pages_start → mm_migrate_pages), reason, result",
    ),
    (
        "khugepaged",
        "khugepaged scans and collapses by result (counts; no begin event to time them)",
    ),
    (
        "alloc",
        "page allocations of order ≥ 1 by order and fallbacks (extfrag); filtered in the kernel, but every allocation runs the filter: +7% wall time on a 4 KiB-fault-heavy child here",
    ),
    ("tlb", "TLB flushes by reason"),
    (
        "faults",
        "user page faults (one event per fault: costs the most to trace)",
    ),
];

/// The cheap kinds: their events fire on slow paths only (`cargo bench --bench trace`).
pub const DEFAULT_KINDS: [&str; 4] = ["compaction", "reclaim", "migrate", "khugepaged"];

/// The tracepoints of one kind, each with an optional kernel-side filter.
pub fn events(kind: &str) -> &'static [(&'static str, Option<&'static str>)] {
    match kind {
        "compaction" => &[
            ("compaction:mm_compaction_begin", None),
            ("compaction:mm_compaction_end", None),
            ("compaction:mm_compaction_try_to_compact_pages", None),
            ("compaction:mm_compaction_deferred", None),
        ],
        "reclaim" => &[
            ("vmscan:mm_vmscan_direct_reclaim_begin", None),
            ("vmscan:mm_vmscan_direct_reclaim_end", None),
            ("vmscan:mm_vmscan_memcg_reclaim_begin", None),
            ("vmscan:mm_vmscan_memcg_reclaim_end", None),
        ],
        "migrate" => &[
            ("migrate:mm_migrate_pages_start", None),
            ("migrate:mm_migrate_pages", None),
        ],
        "khugepaged" => &[
            ("huge_memory:mm_khugepaged_scan_pmd", None),
            ("huge_memory:mm_collapse_huge_page", None),
            ("huge_memory:mm_collapse_huge_page_isolate", None),
        ],
        "alloc" => &[
            ("kmem:mm_page_alloc", Some("order > 0")),
            ("kmem:mm_page_alloc_extfrag", None),
        ],
        "tlb" => &[("tlb:tlb_flush", None)],
        "faults" => &[("exceptions:page_fault_user", None)],
        _ => &[],
    }
}

/// The tracepoints of several kinds, in order.
pub fn tracepoints(kinds: &[&str]) -> Vec<(&'static str, Option<&'static str>)> {
    kinds
        .iter()
        .flat_map(|k| events(k).iter().copied())
        .collect()
}

/// `compaction,reclaim` → kinds, or an error listing the valid ones.
pub fn parse_kinds(s: &str) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let Some((name, _)) = KINDS.iter().find(|(n, _)| *n == k) else {
            return Err(format!(
                "unknown trace kind {k:?}; valid: {}",
                KINDS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ));
        };
        if !out.contains(name) {
            out.push(*name);
        }
    }
    if out.is_empty() {
        return Err("no trace kinds given".into());
    }
    Ok(out)
}

/// Log-linear buckets: 8 per power of two (quantiles within 9%), at most 64 × 8 of them.
#[derive(Debug, Clone, Default)]
pub struct Hist {
    buckets: BTreeMap<u32, u64>,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

const SUB: u32 = 8;

fn bucket(v: u64) -> u32 {
    if v < SUB as u64 {
        return v as u32;
    }
    let octave = 63 - v.leading_zeros();
    let sub = ((v >> (octave - 3)) & (SUB as u64 - 1)) as u32;
    octave * SUB + sub
}

/// The largest value in bucket `b`.
fn upper(b: u32) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let (octave, sub) = (b / SUB, b % SUB);
    ((SUB as u64 + sub as u64 + 1) << (octave - 3)) - 1
}

impl Hist {
    pub fn add(&mut self, ns: u64) {
        *self.buckets.entry(bucket(ns)).or_insert(0) += 1;
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    /// The upper edge of the bucket holding quantile `q` (capped at the maximum seen).
    pub fn quantile(&self, q: f64) -> u64 {
        let rank = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return upper(*b).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> HistSummary {
        let mut log2: BTreeMap<u64, u64> = BTreeMap::new();
        for (b, n) in &self.buckets {
            let lo = if *b < SUB {
                *b as u64
            } else {
                1u64 << (b / SUB)
            };
            let lo = if lo == 0 {
                0
            } else {
                1u64 << (63 - lo.leading_zeros())
            };
            *log2.entry(lo).or_insert(0) += n;
        }
        HistSummary {
            count: self.count,
            total_ns: self.total_ns,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            max_ns: self.max_ns,
            log2: log2.into_iter().collect(),
        }
    }
}

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

/// The latency kinds: (name, begin event, end event, how the time is derived).
const PAIRS: [(&str, &str, &str, &str); 5] = [
    (
        "direct compaction",
        "compaction:mm_compaction_begin",
        "compaction:mm_compaction_end",
        "mm_compaction_begin → mm_compaction_end of a thread that has entered try_to_compact_pages (an allocating task compacting one zone; one stall can compact several zones); order from mm_compaction_try_to_compact_pages",
    ),
    (
        "background compaction",
        "compaction:mm_compaction_begin",
        "compaction:mm_compaction_end",
        "mm_compaction_begin → mm_compaction_end of kcompactd or proactive compaction (no try_to_compact_pages before it)",
    ),
    (
        "direct reclaim",
        "vmscan:mm_vmscan_direct_reclaim_begin",
        "vmscan:mm_vmscan_direct_reclaim_end",
        "mm_vmscan_direct_reclaim_begin → _end of one thread; order from the begin event",
    ),
    (
        "memcg reclaim",
        "vmscan:mm_vmscan_memcg_reclaim_begin",
        "vmscan:mm_vmscan_memcg_reclaim_end",
        "mm_vmscan_memcg_reclaim_begin → _end of one thread (a cgroup over its limit)",
    ),
    (
        "page migration",
        "migrate:mm_migrate_pages_start",
        "migrate:mm_migrate_pages",
        "mm_migrate_pages_start → mm_migrate_pages of one thread; reason from the start event",
    ),
];

/// The counted kinds: (name, event, key field, key label).
const COUNTS: [(&str, &str, &str, &str); 7] = [
    (
        "khugepaged scans",
        "huge_memory:mm_khugepaged_scan_pmd",
        "status",
        "result",
    ),
    (
        "khugepaged collapses",
        "huge_memory:mm_collapse_huge_page",
        "status",
        "result",
    ),
    (
        "khugepaged isolations",
        "huge_memory:mm_collapse_huge_page_isolate",
        "status",
        "result",
    ),
    (
        "page allocations (order ≥ 1)",
        "kmem:mm_page_alloc",
        "order",
        "order",
    ),
    (
        "fallbacks to another migratetype (extfrag)",
        "kmem:mm_page_alloc_extfrag",
        "alloc_order",
        "alloc order",
    ),
    ("TLB flushes", "tlb:tlb_flush", "reason", "reason"),
    ("user page faults", "exceptions:page_fault_user", "", "all"),
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
    /// (pair index, tid) → open begin.
    open: BTreeMap<(usize, u32), Open>,
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
            lat: PAIRS.iter().map(|_| LatencyAgg::default()).collect(),
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
        for (i, (_, begin, end, _)) in PAIRS.iter().enumerate() {
            let direct_kind = i == 0;
            let background_kind = i == 1;
            if (direct_kind && !is_direct) || (background_kind && is_direct) {
                continue;
            }
            if name == *begin {
                let key = match i {
                    0 => self.direct.get(&e.tid).map(|d| d.0),
                    2 | 3 => f.int(raw, "order"),
                    _ => None,
                };
                let reason = (i == 4).then(|| f.symbol(raw, "reason")).flatten();
                self.open.insert(
                    (i, e.tid),
                    Open {
                        at: e.time_ns,
                        key,
                        reason,
                    },
                );
            } else if name == *end {
                let Some(o) = self.open.remove(&(i, e.tid)) else {
                    self.unpaired += 1;
                    continue;
                };
                let ns = e.time_ns.saturating_sub(o.at);
                let outcome = match i {
                    0 | 1 => f.symbol(raw, "status"),
                    2 | 3 => f.int(raw, "nr_reclaimed").map(|n| {
                        if n > 0 {
                            "reclaimed pages"
                        } else {
                            "reclaimed nothing"
                        }
                        .into()
                    }),
                    4 => match (f.int(raw, "succeeded"), f.int(raw, "failed")) {
                        (Some(_), Some(x)) if x > 0 => Some("some pages failed".into()),
                        (Some(_), Some(_)) => Some("all migrated".into()),
                        _ => None,
                    },
                    _ => None,
                };
                let outcome = match o.reason {
                    Some(r) => Some(format!("{} ({r})", outcome.unwrap_or_default())),
                    None => outcome,
                };
                self.lat[i].add(e.pid, ns, o.key, outcome);
            }
        }
        for (i, (_, event, field, _)) in COUNTS.iter().enumerate() {
            if name == *event {
                let key = if field.is_empty() {
                    "all".to_string()
                } else if f.symbols.contains_key(*field) {
                    f.symbol(raw, field).unwrap_or_default()
                } else if *event == "kmem:mm_page_alloc_extfrag" {
                    format!(
                        "{} → {}",
                        f.int(raw, "alloc_order").unwrap_or(-1),
                        f.int(raw, "fallback_order").unwrap_or(-1)
                    )
                } else {
                    f.int(raw, field).map(|v| v.to_string()).unwrap_or_default()
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
        let latencies = PAIRS
            .iter()
            .zip(std::mem::take(&mut self.lat))
            .filter(|((_, b, e, _), _)| present(b) && present(e))
            .map(|((kind, _, _, how), a)| Latency {
                kind: kind.to_string(),
                how: how.to_string(),
                hist: a.hist.summary(),
                by_process: rows(&a.by_pid),
                by_order: a.by_order,
                outcomes: a.outcomes,
            })
            .collect();
        self.lat = PAIRS.iter().map(|_| LatencyAgg::default()).collect();
        let counts = COUNTS
            .iter()
            .zip(std::mem::take(&mut self.counts))
            .filter(|((_, e, _, _), _)| present(e))
            .map(|((kind, event, _, key), c)| {
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
                    kind: kind.to_string(),
                    event: event.to_string(),
                    key: key.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn kinds_are_checked() {
        assert_eq!(
            parse_kinds("compaction, reclaim,compaction").unwrap(),
            ["compaction", "reclaim"]
        );
        let e = parse_kinds("compact").unwrap_err();
        assert!(e.contains("valid: compaction, reclaim"), "{e}");
        for (k, _) in KINDS {
            assert!(!events(k).is_empty());
        }
    }
}
