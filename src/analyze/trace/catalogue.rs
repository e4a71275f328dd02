//! The kinds `trace` and `run --trace` can trace, and the tracepoints each needs.

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
