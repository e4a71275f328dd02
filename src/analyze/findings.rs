//! `status --explain`: findings about the machine's page-size state, each with its evidence
//! and the reason it matters. Pure functions over a [`Status`].

pub use crate::model::status::{FALLBACK_SHARE, FRAGMENTED_INDEX, Finding, Severity};
use crate::probe::status::Status;
use crate::units::Bytes;

/// A finding with its words.
fn add(
    out: &mut Vec<Finding>,
    code: &'static str,
    severity: Severity,
    title: String,
    evidence: String,
    reason: &str,
    fix: Option<&str>,
) {
    out.push(Finding {
        code,
        severity,
        title,
        evidence,
        reason: reason.to_string(),
        fix: fix.map(str::to_string),
    })
}

pub fn explain(s: &Status) -> Vec<Finding> {
    let mut out = Vec::new();
    thp_findings(s, &mut out);
    hugetlb_findings(s, &mut out);
    memory_findings(s, &mut out);
    machine_findings(s, &mut out);
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// THP's modes and khugepaged's settings.
fn thp_findings(s: &Status, out: &mut Vec<Finding>) {
    let enabled = s.thp.enabled.as_ref().map(|x| x.selected.as_str());
    let defrag = s.thp.defrag.as_ref().map(|x| x.selected.as_str());
    if s.compaction.defrag_mode == Some(0) && matches!(enabled, Some("always" | "madvise")) {
        add(
            out,
            "defrag-mode-off",
            Severity::Info,
            "vm.defrag_mode is 0".into(),
            format!(
                "/proc/sys/vm/defrag_mode = 0, transparent_hugepage/enabled = {}",
                enabled.unwrap_or("?")
            ),
            "with vm.defrag_mode = 1 (Linux 6.15+) kswapd and kcompactd reclaim and compact in whole 2 MiB pageblocks, so THP faults fall back less (its patch series: THP fault allocations +22%, fallbacks -47% over repeated kernel builds) at the price of more background reclaim",
            Some(
                "measure it first: hugelab run -a off=vm.defrag_mode=0 -a on=vm.defrag_mode=1 -- COMMAND (restored afterwards)",
            ),
        );
    }

    if enabled == Some("always") && defrag == Some("always") {
        add(
            out,
            "thp-always-defrag-always",
            Severity::Warn,
            "THP always with defrag always".into(),
            "transparent_hugepage/enabled = always, defrag = always".into(),
            "every anonymous fault that cannot get a huge page immediately stalls in direct compaction; this is the classic source of multi-millisecond latency spikes blamed on THP",
            Some(
                "echo defer+madvise > /sys/kernel/mm/transparent_hugepage/defrag (compaction moves to kcompactd, madvised regions still compact)",
            ),
        );
    }
    if enabled == Some("never") {
        add(
            out,
            "thp-never",
            Severity::Info,
            "THP disabled system-wide".into(),
            "transparent_hugepage/enabled = never".into(),
            "applications that ask for huge pages with madvise (a JVM with -XX:+UseTransparentHugePages, databases, allocators) get 4 KiB pages only",
            Some("measure before deciding: hugelab run --preset thp -- <your workload>"),
        );
    }
    if let Some(none) = s.thp.khugepaged.max_ptes_none {
        let pmd_pages = s.thp.hpage_pmd_size.unwrap_or(2 << 20) / s.base_page_size.max(1);
        if none + 1 >= pmd_pages && enabled != Some("never") {
            add(
                out,
                "khugepaged-max-ptes-none",
                Severity::Info,
                format!("khugepaged max_ptes_none = {none} (RSS bloat risk)"),
                format!(
                    "khugepaged collapses a {} range even when only {} of its {pmd_pages} small pages are present",
                    Bytes(pmd_pages * s.base_page_size),
                    pmd_pages - none
                ),
                "sparse heaps (allocators that leave holes, e.g. after free) can grow up to 512x in resident memory when collapsed",
                Some(
                    "for memory-sensitive services, lower it (e.g. 64 or 0) in /sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
                ),
            );
        }
    }
}

/// The hugetlb pools: reserved, idle, and their hugetlbfs mounts.
fn hugetlb_findings(s: &Status, out: &mut Vec<Finding>) {
    for p in &s.hugetlb {
        if p.total == 0 {
            continue;
        }
        let size = Bytes(p.page_size);
        if p.reserved_free() > 0 {
            add(
                out,
                "hugetlb-reserved-free",
                Severity::Info,
                format!("{size} hugetlb pages reserved but not yet used"),
                format!(
                    "{} of {} pages reserved by mappings and not faulted in ({})",
                    p.reserved_free(),
                    p.total,
                    Bytes(p.bytes(p.reserved_free()))
                ),
                "reserved pages are promised to a process: no one else can use that memory, even though it is not touched yet",
                None,
            );
        }
        if p.available() > 0 {
            add(
                out,
                "hugetlb-idle-pool",
                Severity::Warn,
                format!("{size} hugetlb pool holds idle pages"),
                format!(
                    "{} of {} pages neither used nor reserved ({})",
                    p.available(),
                    p.total,
                    Bytes(p.bytes(p.available()))
                ),
                "a hugetlb pool takes memory from everything else: idle pool pages are unavailable to the page cache and to normal allocations",
                Some(
                    "shrink the pool to what the application maps: echo N > /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages",
                ),
            );
        }
        let mounted = s
            .hugetlbfs_mounts
            .iter()
            .any(|m| m.page_size.or(s.memory.hugepagesize) == Some(p.page_size));
        if !mounted && !s.hugetlbfs_mounts.is_empty() {
            add(
                out,
                "no-hugetlbfs-mount",
                Severity::Info,
                format!("{size} pool without a hugetlbfs mount"),
                format!(
                    "{} {size} pages in the pool, no hugetlbfs mounted with pagesize={size}",
                    p.total
                ),
                "MAP_HUGETLB and SysV SHM_HUGETLB work without a mount, but file-based users (QEMU -mem-path, DPDK, libhugetlbfs) need one",
                Some("mount -t hugetlbfs -o pagesize=<size> none /dev/hugepages"),
            );
        }
    }
    if s.hugetlbfs_mounts.is_empty() && !s.hugetlb.is_empty() {
        add(
            out,
            "no-hugetlbfs-mount",
            Severity::Info,
            "no hugetlbfs mounted".into(),
            "/proc/mounts has no hugetlbfs entry".into(),
            "MAP_HUGETLB and SysV SHM_HUGETLB work without a mount, but file-based users (QEMU -mem-path, DPDK, libhugetlbfs, JVM -XX:+UseHugeTLBFS on some versions) need one",
            Some("mount -t hugetlbfs -o pagesize=2M none /dev/hugepages"),
        );
    }
}

/// Free memory's fragmentation, THP fallbacks and compaction stalls since boot.
fn memory_findings(s: &Status, out: &mut Vec<Finding>) {
    if let Some(f) = &s.fragmentation
        && let Some(idx) = f.unusable_index
        && idx > FRAGMENTED_INDEX
    {
        add(
            out,
            "fragmented",
            Severity::Warn,
            "2 MiB capacity low relative to free memory".into(),
            format!(
                "{:.0}% of free memory ({} free) is in blocks smaller than order {}; {} huge-page-sized blocks can be had without compaction",
                idx * 100.0,
                Bytes(f.free_pages * s.base_page_size),
                f.order,
                f.blocks_available
            ),
            "THP faults will fall back to small pages or stall in compaction, and growing a hugetlb pool may fall short",
            Some(
                "echo 1 > /proc/sys/vm/compact_memory, or reserve hugetlb pages early (at boot) where they are needed",
            ),
        );
    }
    let alloc = s.counters.get("thp_fault_alloc").copied().unwrap_or(0);
    let fallback = s.counters.get("thp_fault_fallback").copied().unwrap_or(0);
    if alloc + fallback >= 100 && fallback as f64 / (alloc + fallback) as f64 > FALLBACK_SHARE {
        add(
            out,
            "thp-fallback",
            Severity::Warn,
            "THP faults often fall back to small pages".into(),
            format!(
                "thp_fault_fallback {fallback} vs thp_fault_alloc {alloc} since boot ({:.0}% fell back)",
                100.0 * fallback as f64 / (alloc + fallback) as f64
            ),
            "applications asking for huge pages often do not get them, usually because memory is fragmented",
            None,
        );
    }
    if let Some(stall) = s.counters.get("compact_stall").copied().filter(|&n| n > 0) {
        add(
            out,
            "compact-stalls",
            Severity::Info,
            "direct compaction has stalled allocations".into(),
            format!(
                "compact_stall = {stall} since boot (compact_fail = {})",
                s.counters.get("compact_fail").copied().unwrap_or(0)
            ),
            "each stall is an allocation that waited for compaction; `hugelab trace` shows how long they took",
            None,
        );
    }
}

/// What this machine cannot show or offer: PMU, 1 GiB pages, tracefs, mTHP in smaps, root.
fn machine_findings(s: &Status, out: &mut Vec<Finding>) {
    // Only when perf was really probed (software events open) and hardware ones did not.
    if !s.pmu.hardware_counters && s.pmu.software_counters {
        add(
            out,
            "no-pmu",
            Severity::Info,
            "hardware TLB counters unavailable".into(),
            s.pmu
                .reason
                .clone()
                .unwrap_or_else(|| "cycles cannot be opened".into()),
            "dTLB miss and page-walk counts cannot be shown here (likely a VM without a virtual PMU); timings, faults and coverage are still measured",
            None,
        );
    }
    if !s.cpu.pdpe1gb && !s.cpu_page_sizes.is_empty() {
        add(
            out,
            "no-1g-pages",
            Severity::Info,
            "CPU offers no 1 GiB pages".into(),
            "the pdpe1gb flag is absent from /proc/cpuinfo".into(),
            "hugetlb-1g backings and 1 GiB VM memory backing are not possible on this CPU",
            None,
        );
    }
    if !s.tracing.available {
        add(
            out,
            "no-tracefs",
            Severity::Info,
            "kernel tracepoints not reachable".into(),
            s.tracing.note.clone().unwrap_or_default(),
            "compaction and khugepaged latency histograms need tracefs",
            s.tracing
                .mountable
                .then_some("mount -t tracefs nodev /sys/kernel/tracing"),
        );
    }
    for m in &s.thp.mthp {
        if let Some(sel) = &m.enabled
            && m.size_bytes != s.thp.hpage_pmd_size.unwrap_or(2 << 20)
            && (sel.selected == "always" || sel.selected == "madvise")
        {
            add(
                out,
                "mthp-enabled",
                Severity::Info,
                format!("mTHP {} enabled ({})", Bytes(m.size_bytes), sel.selected),
                format!(
                    "hugepages-{}kB/enabled = {}",
                    m.size_bytes / 1024,
                    sel.selected
                ),
                "mTHP folios appear in no smaps field; `hugelab inspect` reads them from pagemap and kpageflags",
                None,
            );
        }
    }
    if !s.unreadable.is_empty() {
        add(
            out,
            "not-root",
            Severity::Info,
            "some state needs root".into(),
            s.unreadable.join(", "),
            "the fields from these files are missing above",
            Some("run as root to see everything"),
        );
    }
}
