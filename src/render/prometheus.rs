//! Prometheus metrics from one exporter scrape: OpenMetrics text (prometheus-client's encoder)
//! or, for clients that do not ask for OpenMetrics, the classic text format 0.0.4.
//!
//! Naming: prefix `hugelab_`, units in names, `_total` on counters; page sizes, nodes, zones
//! and states are labels. The hugetlb states of one size add up to its pool total.

mod cgroups;
mod processes;

use crate::model::exporter::Scrape;
use crate::units::Bytes;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Vec<(&'static str, String)>;
type Gauges = Family<Labels, Gauge>;
type Ratios = Family<Labels, Gauge<f64, AtomicU64>>;
type Counters = Family<Labels, Counter>;

/// Families registered as they are first used, so one call per sample stays readable.
struct Out {
    reg: Registry,
}

impl Out {
    /// Register a new family under `name` (with its unit suffix) and return a handle to it.
    fn family<M>(&mut self, name: &str, help: &str, unit: Option<Unit>) -> M
    where
        M: Default + Clone + prometheus_client::registry::Metric,
    {
        let f = M::default();
        match unit {
            Some(u) => self.reg.register_with_unit(name, help, u, f.clone()),
            None => self.reg.register(name, help, f.clone()),
        }
        f
    }
    fn gauge(&mut self, name: &str, help: &str, unit: Option<Unit>) -> Gauges {
        self.family(name, help, unit)
    }
    fn ratio(&mut self, name: &str, help: &str, unit: Option<Unit>) -> Ratios {
        self.family(name, help, unit)
    }
    fn counter(&mut self, name: &str, help: &str, unit: Option<Unit>) -> Counters {
        self.family(name, help, unit)
    }
}

impl Out {
    /// A counter without labels.
    fn count(&mut self, name: &str, help: &str, v: u64) {
        let c = Counter::<u64>::default();
        c.inc_by(v);
        self.reg.register(name, help, c);
    }
    /// A gauge without labels.
    fn value(&mut self, name: &str, help: &str, unit: Unit, v: f64) {
        let g = Gauge::<f64, AtomicU64>::default();
        g.set(v);
        self.reg.register_with_unit(name, help, unit, g);
    }
}

fn set(f: &Gauges, labels: Labels, v: u64) {
    f.get_or_create(&labels).set(v.min(i64::MAX as u64) as i64);
}

fn size(b: u64) -> String {
    Bytes(b).to_string()
}

/// Histograms whose buckets were counted elsewhere (the trace thread): per label set the sum,
/// the count and (upper bound, count in bucket) pairs.
#[derive(Debug)]
struct Stalls(Vec<(Labels, f64, u64, Buckets)>);

type Buckets = Vec<(f64, u64)>;

impl prometheus_client::encoding::EncodeMetric for Stalls {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        for (labels, sum, count, buckets) in &self.0 {
            encoder
                .encode_family(labels)?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    *sum, *count, buckets, None,
                )?;
        }
        Ok(())
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

fn stalls(o: &mut Out, s: &Scrape) {
    if let Some(lost) = s.trace_lost {
        let h = Stalls(
            s.stalls
                .iter()
                .map(|h| {
                    (
                        vec![("kind", h.kind.clone())],
                        h.sum_s,
                        h.count,
                        h.buckets.clone(),
                    )
                })
                .collect(),
        );
        o.reg.register_with_unit(
            "kernel_stall",
            "Kernel stalls since the exporter started, from tracepoints (--trace): direct and background compaction, direct and memcg reclaim, page migration; begin → end of one thread",
            Unit::Seconds,
            h,
        );
        o.count(
            "trace_lost_records",
            "Trace records the kernel dropped (ring buffers full): the stall histograms undercount when this grows",
            lost,
        );
    }
}

/// The scrape as a registry of metric families.
pub fn registry(s: &Scrape) -> Registry {
    let mut o = Out {
        reg: Registry::with_prefix("hugelab"),
    };
    hugetlb(&mut o, s);
    thp(&mut o, s);
    memory(&mut o, s);
    processes::processes(&mut o, s);
    cgroups::cgroups(&mut o, s);
    stalls(&mut o, s);
    health(&mut o, s);
    o.reg
}

fn hugetlb(o: &mut Out, s: &Scrape) {
    let pages = o.gauge(
        "hugetlb_pages",
        "hugetlb pool pages by state; the states of one size add up to the pool (nr_hugepages, surplus included). reserved_free pages are promised to a mapping but not faulted in: free memory nobody else can use, not used memory",
        None,
    );
    let surplus = o.gauge(
        "hugetlb_surplus_pages",
        "Pool pages above the persistent size, allocated on demand up to nr_overcommit_hugepages (part of hugetlb_pages)",
        None,
    );
    let target = o.gauge(
        "hugetlb_persistent_pages",
        "The pool size asked for with nr_hugepages (persistent pages: pool minus surplus)",
        None,
    );
    let overcommit = o.gauge(
        "hugetlb_overcommit_limit_pages",
        "nr_overcommit_hugepages: how many surplus pages the pool may add on demand",
        None,
    );
    let bytes = o.gauge(
        "hugetlb_pool",
        "Memory held by the pool (pages × page size), whatever their state",
        Some(Unit::Bytes),
    );
    let node_pages = o.gauge(
        "hugetlb_node_pages",
        "hugetlb pool pages per NUMA node by state (in_use, free; the kernel does not split reservations by node)",
        None,
    );
    for p in &s.status.hugetlb {
        let sz = size(p.page_size);
        for (state, v) in p.states() {
            set(
                &pages,
                vec![("size", sz.clone()), ("state", state.into())],
                v,
            );
        }
        set(&surplus, vec![("size", sz.clone())], p.surplus);
        set(
            &target,
            vec![("size", sz.clone())],
            p.total.saturating_sub(p.surplus),
        );
        set(&overcommit, vec![("size", sz.clone())], p.overcommit);
        set(&bytes, vec![("size", sz.clone())], p.total * p.page_size);
        for n in &p.nodes {
            for (state, v) in [("in_use", n.total.saturating_sub(n.free)), ("free", n.free)] {
                set(
                    &node_pages,
                    vec![
                        ("size", sz.clone()),
                        ("node", n.node.to_string()),
                        ("state", state.into()),
                    ],
                    v,
                );
            }
        }
    }
}

fn thp(o: &mut Out, s: &Scrape) {
    let t = &s.status.thp;
    let mode = o.gauge(
        "thp_setting_info",
        "THP setting in force (value 1 on the selected mode)",
        None,
    );
    for (name, sel) in [
        ("enabled", &t.enabled),
        ("defrag", &t.defrag),
        ("shmem_enabled", &t.shmem_enabled),
    ] {
        if let Some(sel) = sel {
            set(
                &mode,
                vec![("setting", name.into()), ("mode", sel.selected.clone())],
                1,
            );
        }
    }
    mthp(o, s);
    let thp_events = o.counter(
        "thp_events",
        "THP events since boot: /proc/vmstat thp_* (fault_alloc vs fault_fallback is the success rate)",
        None,
    );
    let compaction = o.counter(
        "compaction_events",
        "Compaction events since boot: /proc/vmstat compact_* (stall = direct compaction in an allocating task)",
        None,
    );
    for (k, v) in &s.status.counters {
        let (fam, event) = if let Some(e) = k.strip_prefix("thp_") {
            (&thp_events, e)
        } else if let Some(e) = k.strip_prefix("compact_") {
            (&compaction, e)
        } else {
            continue;
        };
        fam.get_or_create(&vec![("event", event.to_string())])
            .inc_by(*v);
    }
    khugepaged(o, s);
}

/// Every mTHP size's modes, event counters and folio gauges.
fn mthp(o: &mut Out, s: &Scrape) {
    let t = &s.status.thp;
    let mthp_mode = o.gauge(
        "mthp_setting_info",
        "mTHP setting per folio size (value 1 on the selected mode; inherit follows thp enabled)",
        None,
    );
    let mthp_events = o.counter(
        "mthp_events",
        "mTHP events per folio size since boot (/sys/kernel/mm/transparent_hugepage/hugepages-*/stats)",
        None,
    );
    let mthp_folios = o.gauge(
        "mthp_anon_folios",
        "Anonymous mTHP folios of this size now (kind: all, partially_mapped)",
        None,
    );
    for m in &t.mthp {
        let sz = size(m.size_bytes);
        for (name, sel) in [("enabled", &m.enabled), ("shmem_enabled", &m.shmem_enabled)] {
            if let Some(sel) = sel {
                set(
                    &mthp_mode,
                    vec![
                        ("size", sz.clone()),
                        ("setting", name.into()),
                        ("mode", sel.selected.clone()),
                    ],
                    1,
                );
            }
        }
        for (k, v) in &m.stats {
            match k.as_str() {
                "nr_anon" => set(
                    &mthp_folios,
                    vec![("size", sz.clone()), ("kind", "all".into())],
                    *v,
                ),
                "nr_anon_partially_mapped" => set(
                    &mthp_folios,
                    vec![("size", sz.clone()), ("kind", "partially_mapped".into())],
                    *v,
                ),
                _ => {
                    mthp_events
                        .get_or_create(&vec![("size", sz.clone()), ("event", k.clone())])
                        .inc_by(*v);
                }
            }
        }
    }
}

/// The numeric THP settings (a profile's khugepaged and shrinker knobs) and khugepaged's work.
fn khugepaged(o: &mut Out, s: &Scrape) {
    let t = &s.status.thp;
    let k = &t.khugepaged;
    // The numeric settings of a THP profile (MongoDB 8.0's: max_ptes_none 0), by the names
    // `run` arms use.
    let knob = o.gauge(
        "thp_knob",
        "Numeric THP settings in force: khugepaged.* and thp.shrink_underused / thp.use_zero_page",
        None,
    );
    for (name, v) in [
        ("khugepaged.max_ptes_none", k.max_ptes_none),
        ("khugepaged.max_ptes_swap", k.max_ptes_swap),
        ("khugepaged.max_ptes_shared", k.max_ptes_shared),
        ("khugepaged.pages_to_scan", k.pages_to_scan),
        ("khugepaged.scan_sleep_millisecs", k.scan_sleep_millisecs),
        ("khugepaged.alloc_sleep_millisecs", k.alloc_sleep_millisecs),
        ("khugepaged.defrag", k.defrag),
        ("thp.shrink_underused", t.shrink_underused),
        ("thp.use_zero_page", t.use_zero_page),
    ] {
        if let Some(v) = v {
            set(&knob, vec![("knob", name.into())], v);
        }
    }
    if let Some(v) = k.full_scans {
        o.count(
            "khugepaged_full_scans",
            "khugepaged passes over all eligible memory since boot",
            v,
        );
    }
    if let Some(v) = k.pages_collapsed {
        o.count(
            "khugepaged_pages_collapsed",
            "Huge pages khugepaged has collapsed since boot",
            v,
        );
    }
}

fn memory(o: &mut Out, s: &Scrape) {
    let m = &s.status.memory;
    let mem = o.gauge(
        "memory",
        "Memory by kind from /proc/meminfo (anon_huge, shmem_huge, file_huge: PMD-mapped THP; hugetlb: all hugetlb pools)",
        Some(Unit::Bytes),
    );
    for (kind, v) in [
        ("total", m.mem_total),
        ("free", m.mem_free),
        ("available", m.mem_available),
        ("anon_huge", m.anon_huge_pages),
        ("shmem_huge", m.shmem_huge_pages),
        ("file_huge", m.file_huge_pages),
        ("hugetlb", m.hugetlb),
    ] {
        if let Some(v) = v {
            set(&mem, vec![("kind", kind.into())], v);
        }
    }
    let blocks = o.gauge(
        "buddy_free_blocks",
        "Free blocks per order, zone and node (/proc/buddyinfo); a block of order n is 2^n base pages",
        None,
    );
    for z in &s.status.zones {
        for (order, n) in z.free_blocks.iter().enumerate() {
            set(
                &blocks,
                vec![
                    ("node", z.node.to_string()),
                    ("zone", z.zone.clone()),
                    ("order", order.to_string()),
                ],
                *n,
            );
        }
    }
    if let Some(f) = &s.status.fragmentation {
        let huge = size(s.status.base_page_size << f.order);
        let now = o.gauge(
            "huge_pages_allocatable",
            "Huge pages of this size the buddy allocator could hand out now without compaction",
            None,
        );
        set(&now, vec![("size", huge.clone())], f.blocks_available);
        if let Some(i) = f.unusable_index {
            let idx = o.ratio(
                "unusable_free_space_index",
                "Share of free memory in blocks too small for a huge page of this size (0: none, 1: all; high means compaction is needed)",
                Some(Unit::Other("ratio".into())),
            );
            idx.get_or_create(&vec![("size", huge)]).set(i);
        }
    }
}

fn health(o: &mut Out, s: &Scrape) {
    let h = &s.health;
    let info = o.gauge("exporter_build_info", "hugelab version (value 1)", None);
    set(&info, vec![("version", s.version.into())], 1);
    o.value(
        "exporter_scrape_duration",
        "Time this scrape took to collect, before encoding",
        Unit::Seconds,
        h.last_duration_s,
    );
    o.count("exporter_scrapes", "Scrapes served", h.scrapes);
    let errors = o.counter(
        "exporter_errors",
        "Errors while collecting, by source, since start",
        None,
    );
    for (src, n) in &h.errors {
        errors
            .get_or_create(&vec![("source", src.clone())])
            .inc_by(*n);
    }
    o.value(
        "exporter_max_walk",
        "Longest time one watched process's page tables were walked in one scrape (bounded by --budget)",
        Unit::Seconds,
        h.max_walk_s,
    );
    o.value(
        "exporter_budget",
        "--budget: the page-table walk time allowed per watched process per scrape",
        Unit::Seconds,
        h.budget_s,
    );
    let pending = o.gauge(
        "exporter_series_pending",
        "Series promised but not served this scrape, by family: how many processes lack them (folio sizes before a first pass completes within --budget)",
        None,
    );
    for (family, n) in &h.pending {
        set(&pending, vec![("family", format!("hugelab_{family}"))], *n);
    }
}

/// OpenMetrics text, ending in `# EOF`; each family's samples sorted by their labels (the
/// registry keeps them in hash order), so that a scrape reads like a table.
pub fn openmetrics(s: &Scrape) -> String {
    let mut text = String::new();
    encode(&mut text, &registry(s)).expect("writing to a String cannot fail");
    let mut out = String::with_capacity(text.len());
    let mut run: Vec<&str> = Vec::new();
    // Histogram samples stay as encoded: each series' buckets in order, together.
    let mut sortable = true;
    for line in text.lines() {
        if line.starts_with('#') {
            if sortable {
                run.sort_unstable();
            }
            if let Some(t) = line.strip_prefix("# TYPE ") {
                sortable = !t.ends_with(" histogram");
            }
            for l in run.drain(..) {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(line);
            out.push('\n');
        } else {
            run.push(line);
        }
    }
    if sortable {
        run.sort_unstable();
    }
    for l in run {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The classic Prometheus text format (0.0.4) from OpenMetrics text: counter families take
/// their samples' `_total` name, `info`/`unknown` become gauges/untyped, `# UNIT` and `# EOF` go.
pub fn classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let lines: Vec<&str> = openmetrics.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if *line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let type_of = |name: &str| -> Option<&str> {
            lines[i..].iter().take(3).find_map(|l| {
                l.strip_prefix("# TYPE ")?
                    .strip_prefix(name)?
                    .strip_prefix(' ')
            })
        };
        let rewritten = if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            match type_of(name) {
                Some("counter") => format!("# HELP {name}_total {help}"),
                _ => line.to_string(),
            }
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            match rest.split_once(' ') {
                Some((name, "counter")) => format!("# TYPE {name}_total counter"),
                Some((name, "unknown")) => format!("# TYPE {name} untyped"),
                Some((name, "info")) => format!("# TYPE {name}_info gauge"),
                _ => line.to_string(),
            }
        } else {
            line.to_string()
        };
        out.push_str(&rewritten);
        out.push('\n');
    }
    out
}
