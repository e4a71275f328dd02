//! `hugelab status` for people: one screen, grouped as a tuner reads it.

use super::{fit, opt, table};
use crate::model::status::Finding;
use crate::model::status::Severity;
use crate::probe::status::Status;
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

fn bytes(v: Option<u64>) -> String {
    opt(v.map(Bytes))
}

pub fn render(s: &Status, findings: Option<&[Finding]>) -> String {
    let mut o = String::new();
    machine_lines(s, &mut o);

    thp_lines(s, &mut o);

    hugetlb_lines(s, &mut o);
    fragmentation_lines(s, &mut o);

    let _ = writeln!(o, "\ncounters since boot (/proc/vmstat)");
    let _ = write!(o, "{}", counter_lines(&s.counters));

    if !s.unreadable.is_empty() {
        let _ = writeln!(o, "\nnot shown without root: {}", s.unreadable.join(", "));
    }
    if let Some(f) = findings {
        findings_lines(f, &mut o);
    }
    super::summary::wrap_aligned(&o)
}

/// Kernel, CPU, PMU, tracing and memory: one line each.
fn machine_lines(s: &Status, o: &mut String) {
    let sizes: Vec<String> = s
        .cpu_page_sizes
        .iter()
        .map(|b| Bytes(*b).to_string())
        .collect();
    let _ = writeln!(o, "kernel      {}", opt(s.kernel.as_deref()));
    let _ = writeln!(
        o,
        "cpu         {} ({} logical); page sizes {}",
        opt(s.cpu.model_name.as_deref()),
        s.cpu.logical_cpus,
        sizes.join(", ")
    );
    let pmu = if s.pmu.hardware_counters {
        format!(
            "hardware counters yes; dTLB {}; walk cycles {}",
            if s.pmu.tlb_counters { "yes" } else { "no" },
            if s.pmu.walk_cycle_events {
                "yes"
            } else {
                "no (no event known for this CPU model)"
            }
        )
    } else {
        format!("no hardware counters: {}", opt(s.pmu.reason.as_deref()))
    };
    let _ = writeln!(o, "pmu         {pmu}");
    let tracing = match (&s.tracing.path, &s.tracing.note) {
        (Some(p), _) => format!("tracefs at {p}"),
        (None, note) => opt(note.as_deref()),
    };
    let _ = writeln!(o, "tracing     {tracing}");
    let m = &s.memory;
    let _ = writeln!(
        o,
        "memory      total {}, available {}; AnonHugePages {}, ShmemHugePages {}, FileHugePages {}, Hugetlb {}",
        bytes(m.mem_total),
        bytes(m.mem_available),
        bytes(m.anon_huge_pages),
        bytes(m.shmem_huge_pages),
        bytes(m.file_huge_pages),
        bytes(m.hugetlb)
    );
}

/// THP's modes, khugepaged's settings and the mTHP sizes' table.
fn thp_lines(s: &Status, o: &mut String) {
    let sel = |x: &Option<crate::probe::kv::Selector>| opt(x.as_ref().map(|x| x.selected.clone()));
    let t = &s.thp;
    let _ = writeln!(
        o,
        "\nTHP         enabled {}, defrag {}, shmem_enabled {}, use_zero_page {}, shrink_underused {}, PMD size {}",
        sel(&t.enabled),
        sel(&t.defrag),
        sel(&t.shmem_enabled),
        opt(t.use_zero_page),
        opt(t.shrink_underused),
        bytes(t.hpage_pmd_size)
    );
    let c = &s.compaction;
    let _ = writeln!(
        o,
        "compaction  proactiveness {}, defrag_mode {}{}",
        opt(c.proactiveness),
        opt(c.defrag_mode),
        if c.defrag_mode.is_none() {
            " (vm.defrag_mode: Linux 6.15+)"
        } else {
            ""
        }
    );
    let k = &t.khugepaged;
    let _ = writeln!(
        o,
        "khugepaged  pages_to_scan {}, scan_sleep {} ms, alloc_sleep {} ms, max_ptes none/swap/shared {}/{}/{}, defrag {}; full_scans {}, pages_collapsed {}",
        opt(k.pages_to_scan),
        opt(k.scan_sleep_millisecs),
        opt(k.alloc_sleep_millisecs),
        opt(k.max_ptes_none),
        opt(k.max_ptes_swap),
        opt(k.max_ptes_shared),
        opt(k.defrag),
        opt(k.full_scans),
        opt(k.pages_collapsed)
    );
    if t.mthp.is_empty() {
        let _ = writeln!(
            o,
            "mTHP        not offered by this kernel (needs Linux 6.8+)"
        );
    } else {
        let mut tb = table(&[
            "mTHP size",
            "enabled",
            "shmem",
            "anon alloc",
            "anon fallback",
            "nr_anon",
            "partly mapped",
            "split",
            "deferred",
        ]);
        for m in &t.mthp {
            let st = |k: &str| opt(m.stats.get(k));
            tb.add_row(vec![
                Bytes(m.size_bytes).to_string(),
                sel(&m.enabled),
                sel(&m.shmem_enabled),
                st("anon_fault_alloc"),
                st("anon_fault_fallback"),
                st("nr_anon"),
                st("nr_anon_partially_mapped"),
                st("split"),
                st("split_deferred"),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&mut tb));
    }
}

/// The hugetlb pools per size and node, and the hugetlbfs mounts.
fn hugetlb_lines(s: &Status, o: &mut String) {
    if s.hugetlb.is_empty() {
        let _ = writeln!(o, "\nhugetlb     not offered by this kernel");
    } else {
        let mut tb = table(&[
            "hugetlb",
            "node",
            "total",
            "free",
            "in use",
            "reserved-free",
            "available",
            "surplus",
            "overcommit",
        ]);
        for p in &s.hugetlb {
            tb.add_row(vec![
                Bytes(p.page_size).to_string(),
                "all".into(),
                p.total.to_string(),
                p.free.to_string(),
                p.in_use().to_string(),
                p.reserved_free().to_string(),
                p.available().to_string(),
                p.surplus.to_string(),
                p.overcommit.to_string(),
            ]);
            for n in &p.nodes {
                tb.add_row(vec![
                    String::new(),
                    n.node.to_string(),
                    n.total.to_string(),
                    n.free.to_string(),
                    n.total.saturating_sub(n.free).to_string(),
                    "-".into(),
                    "-".into(),
                    n.surplus.to_string(),
                    "-".into(),
                ]);
            }
        }
        let _ = writeln!(o, "\n{}", fit(&mut tb));
        let _ = writeln!(
            o,
            "(in use + reserved-free + available = total: in use = total − free; reserved-free pages are promised to a mapping but untouched)"
        );
    }
    let mounts: Vec<String> = s
        .hugetlbfs_mounts
        .iter()
        .map(|m| {
            format!(
                "{} ({})",
                m.mount_point,
                bytes(m.page_size.or(s.memory.hugepagesize))
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "hugetlbfs   {}",
        if mounts.is_empty() {
            "no mounts".into()
        } else {
            mounts.join(", ")
        }
    );
}

/// Free blocks per order and zone, and the fragmentation index.
fn fragmentation_lines(s: &Status, o: &mut String) {
    if !s.zones.is_empty() {
        let orders = s
            .zones
            .iter()
            .map(|z| z.free_blocks.len())
            .max()
            .unwrap_or(0);
        let mut header: Vec<String> = vec!["zone".into()];
        header.extend((0..orders).map(|o| format!("o{o}")));
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut tb = table(&header_refs);
        for z in &s.zones {
            let mut row = vec![format!("node{} {}", z.node, z.zone)];
            row.extend(z.free_blocks.iter().map(u64::to_string));
            tb.add_row(row);
        }
        let _ = writeln!(
            o,
            "\nfree blocks per order (/proc/buddyinfo)\n{}",
            fit(&mut tb)
        );
    }
    if let Some(f) = &s.fragmentation {
        let _ = writeln!(
            o,
            "fragmentation  {} huge-page blocks (order {}) free now; unusable free space index at order {}: {}",
            f.blocks_available,
            f.order,
            f.order,
            opt(f.unusable_index.map(|i| format!("{i:.3}")))
        );
    }
}

/// The findings, warnings first, each with its evidence, reason and fix.
fn findings_lines(f: &[Finding], o: &mut String) {
    let _ = writeln!(o, "\nfindings");
    if f.is_empty() {
        let _ = writeln!(o, "  none: nothing in this state calls for attention");
    }
    for x in f {
        let tag = match x.severity {
            Severity::Warn => "WARN",
            Severity::Info => "info",
        };
        let _ = writeln!(o, "  [{tag}] {}", x.title);
        let _ = writeln!(o, "         evidence: {}", x.evidence);
        let _ = writeln!(o, "         why: {}", x.reason);
        if let Some(fix) = &x.fix {
            let _ = writeln!(o, "         fix: {fix}");
        }
    }
}

/// Counters as `name value` pairs, two per line (84 columns), aligned.
pub fn counter_lines(c: &BTreeMap<String, u64>) -> String {
    let mut o = String::new();
    let items: Vec<String> = c.iter().map(|(k, v)| format!("{k:<30}{v:>10}")).collect();
    for chunk in items.chunks(2) {
        let _ = writeln!(o, "  {}", chunk.join("  "));
    }
    o
}

/// The huge-page state of a machine as one table (a report's "system at the time of the run").
pub fn snapshot_grid(s: &Status) -> super::Grid {
    let mut g = super::Grid::new("system when the run started", &["setting", "value"]);
    let sel = |x: &Option<crate::probe::kv::Selector>| {
        x.as_ref().map_or("-".to_string(), |s| s.selected.clone())
    };
    let mut row = |k: &str, v: String| g.rows.push(vec![k.to_string(), v]);
    row("kernel", s.kernel.clone().unwrap_or_else(|| "-".into()));
    row(
        "CPU",
        format!(
            "{} ({} logical CPUs; 1 GiB pages: {})",
            s.cpu.model_name.clone().unwrap_or_else(|| "-".into()),
            s.cpu.logical_cpus,
            if s.cpu.pdpe1gb { "yes" } else { "no" }
        ),
    );
    row("THP enabled", sel(&s.thp.enabled));
    row("THP defrag", sel(&s.thp.defrag));
    let mthp: Vec<String> = s
        .thp
        .mthp
        .iter()
        .filter_map(|m| {
            let mode = m.enabled.as_ref()?.selected.clone();
            (mode != "never").then(|| format!("{} {mode}", Bytes(m.size_bytes)))
        })
        .collect();
    row(
        "mTHP sizes not `never`",
        if mthp.is_empty() {
            "none".into()
        } else {
            mthp.join(", ")
        },
    );
    for p in &s.hugetlb {
        row(
            &format!("hugetlb {} pool", Bytes(p.page_size)),
            format!(
                "{} pages ({} free, {} reserved, {} surplus)",
                p.total, p.free, p.reserved, p.surplus
            ),
        );
    }
    row(
        "PMU",
        if s.pmu.hardware_counters {
            "hardware counters available".into()
        } else {
            "no hardware counters (TLB and cycle counts unavailable)".into()
        },
    );
    g
}
