//! The kinds `trace`, `run --trace` and `exporter --trace` can trace, and the tracepoints each
//! needs. A kind is a [`TraceKind`]; the command line parses it (clap's `ValueEnum`, so an
//! unknown kind is refused with the valid ones listed, and `--help` shows what each gives).

pub use crate::model::trace::TraceKind;

impl TraceKind {
    /// The cheap kinds, traced when none are named: their events fire on slow paths only
    /// (`cargo bench --bench trace`).
    pub const DEFAULT: [TraceKind; 4] = [
        TraceKind::Compaction,
        TraceKind::Reclaim,
        TraceKind::Migrate,
        TraceKind::Khugepaged,
    ];

    /// The kind's name on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::Compaction => "compaction",
            TraceKind::Reclaim => "reclaim",
            TraceKind::Migrate => "migrate",
            TraceKind::Khugepaged => "khugepaged",
            TraceKind::Alloc => "alloc",
            TraceKind::Tlb => "tlb",
            TraceKind::Faults => "faults",
        }
    }

    /// The kind's tracepoints, each with an optional kernel-side filter.
    pub fn events(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            TraceKind::Compaction => &[
                ("compaction:mm_compaction_begin", None),
                ("compaction:mm_compaction_end", None),
                ("compaction:mm_compaction_try_to_compact_pages", None),
                ("compaction:mm_compaction_deferred", None),
            ],
            TraceKind::Reclaim => &[
                ("vmscan:mm_vmscan_direct_reclaim_begin", None),
                ("vmscan:mm_vmscan_direct_reclaim_end", None),
                ("vmscan:mm_vmscan_memcg_reclaim_begin", None),
                ("vmscan:mm_vmscan_memcg_reclaim_end", None),
            ],
            TraceKind::Migrate => &[
                ("migrate:mm_migrate_pages_start", None),
                ("migrate:mm_migrate_pages", None),
            ],
            TraceKind::Khugepaged => &[
                ("huge_memory:mm_khugepaged_scan_pmd", None),
                ("huge_memory:mm_collapse_huge_page", None),
                ("huge_memory:mm_collapse_huge_page_isolate", None),
            ],
            TraceKind::Alloc => &[
                ("kmem:mm_page_alloc", Some("order > 0")),
                ("kmem:mm_page_alloc_extfrag", None),
            ],
            TraceKind::Tlb => &[("tlb:tlb_flush", None)],
            TraceKind::Faults => &[("exceptions:page_fault_user", None)],
        }
    }
}

/// The tracepoints of several kinds, in order.
pub fn tracepoints(kinds: &[TraceKind]) -> Vec<(&'static str, Option<&'static str>)> {
    kinds
        .iter()
        .flat_map(|k| k.events().iter().copied())
        .collect()
}

/// Kinds as given on the command line, each once, in the order first named.
pub fn distinct(kinds: &[TraceKind]) -> Vec<TraceKind> {
    let mut out: Vec<TraceKind> = Vec::new();
    for k in kinds {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// Names joined for a message: `compaction, reclaim`.
pub fn names(kinds: &[TraceKind]) -> String {
    kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_kind_has_events_and_its_name_is_the_cli_word() {
        for k in TraceKind::value_variants() {
            assert!(!k.events().is_empty(), "{k:?}");
            assert_eq!(k.to_possible_value().unwrap().get_name(), k.name());
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert_eq!(
            TraceKind::from_str("khugepaged", false),
            Ok(TraceKind::Khugepaged)
        );
        assert!(TraceKind::from_str("compact", false).is_err());
    }

    #[test]
    fn kinds_are_kept_once_in_order() {
        use TraceKind::*;
        assert_eq!(
            distinct(&[Reclaim, Compaction, Reclaim]),
            [Reclaim, Compaction]
        );
        assert_eq!(names(&[Compaction, Reclaim]), "compaction, reclaim");
        assert_eq!(tracepoints(&[Tlb]), [("tlb:tlb_flush", None)]);
    }
}
