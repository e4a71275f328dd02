//! The kinds `trace`, `run --trace` and `exporter --trace` can trace, and the tracepoints each
//! needs. A kind is a [`TraceKind`]; the command line parses it (clap's `ValueEnum`, so an
//! unknown kind is refused with the valid ones listed, and `--help` shows what each gives).

pub use crate::model::trace::TraceKind;

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
