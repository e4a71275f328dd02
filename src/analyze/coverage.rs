//! Huge coverage: the fraction of a region that really sits on the page size its backing asked
//! for, derived from the raw evidence (smaps fields, folio histogram).

use crate::backing::{Backing, TWO_MIB};
use crate::collect::coverage::RegionEvidence;
pub use crate::model::bench::{Coverage, DEGRADED_BELOW};

pub fn huge_coverage(backing: Backing, e: &RegionEvidence) -> Coverage {
    let mapped = e.mapped_bytes.max(1) as f64;
    let from_folios = |size: u64| {
        e.folios
            .as_ref()
            .map(|h| h.get(&size).copied().unwrap_or(0) as f64 / mapped)
    };
    let (fraction, source, mut note) = match backing {
        Backing::Base => match from_folios(4096) {
            Some(f) => (Some(f), "folios", None),
            None => (
                Some(1.0 - (e.anon_huge_bytes + e.hugetlb_bytes) as f64 / mapped),
                "smaps",
                None,
            ),
        },
        Backing::Thp | Backing::ThpCollapse => {
            (Some(e.anon_huge_bytes as f64 / mapped), "smaps", None)
        }
        Backing::Hugetlb { page_size } => {
            let f = if e.kernel_page_size == page_size {
                e.hugetlb_bytes as f64 / mapped
            } else {
                0.0
            };
            (Some(f), "smaps", None)
        }
        // The file's own folios where pagemap shows them (root), else smaps' PMD-mapped counts.
        Backing::Tmpfs {
            huge: crate::backing::TmpfsHuge::Never,
        } => match from_folios(4096) {
            Some(f) => (Some(f), "folios", None),
            None => (Some(1.0 - e.file_huge_bytes as f64 / mapped), "smaps", None),
        },
        Backing::Tmpfs { .. } | Backing::PageCache => match from_folios(TWO_MIB) {
            Some(f) => (Some(f), "folios", None),
            None => (Some(e.file_huge_bytes as f64 / mapped), "smaps", None),
        },
        Backing::Mthp { size } => match from_folios(size) {
            Some(f) => (Some(f), "folios", None),
            None => (
                None,
                "none",
                Some(
                    e.folio_note
                        .clone()
                        .unwrap_or_else(|| "folio sizes unavailable".into()),
                ),
            ),
        },
    };
    let fraction = fraction.map(|f| f.clamp(0.0, 1.0));
    let degraded = fraction.is_some_and(|f| f < DEGRADED_BELOW);
    if degraded {
        let folios = e.folios.as_ref().map_or(String::new(), |h| {
            format!("; folios: {}", folio_summary(h, e.mapped_bytes))
        });
        note = Some(format!(
            "only {:.0}% of the region is on {} pages (AnonHugePages {} B, hugetlb {} B, Shmem/FilePmdMapped {} B, Rss {} B of {} B mapped{folios})",
            fraction.unwrap_or(0.0) * 100.0,
            crate::units::Bytes(backing.page_size()),
            e.anon_huge_bytes,
            e.hugetlb_bytes,
            e.file_huge_bytes,
            e.rss_bytes,
            e.mapped_bytes
        ));
        if backing == Backing::PageCache {
            note = note.map(|n| {
                format!(
                    "{n}: the file system of {} keeps smaller folios in its page cache (ext4 gives large ones from Linux 6.16; xfs and btrfs earlier; $TMPDIR chooses the directory)",
                    crate::backing::pagecache::dir().display()
                )
            });
        }
    }
    Coverage {
        fraction,
        source: source.into(),
        degraded,
        note,
    }
}

/// `4K 2%, 64K 98%` — share of the region per folio size (`absent` for pages not present).
pub fn folio_summary(h: &std::collections::BTreeMap<u64, u64>, mapped: u64) -> String {
    h.iter()
        .map(|(size, bytes)| {
            let name = if *size == 0 {
                "absent".to_string()
            } else {
                crate::units::Bytes(*size).to_string()
            };
            format!(
                "{name} {:.0}%",
                *bytes as f64 * 100.0 / mapped.max(1) as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn ev(mapped: u64) -> RegionEvidence {
        RegionEvidence {
            mapped_bytes: mapped,
            rss_bytes: mapped,
            ..RegionEvidence::default()
        }
    }

    #[test]
    fn thp_from_anon_huge_pages() {
        let mut e = ev(1 << 30);
        e.anon_huge_bytes = (1 << 30) - (2 << 20);
        let c = huge_coverage(Backing::Thp, &e);
        assert!(c.fraction.unwrap() > 0.99 && !c.degraded);
        e.anon_huge_bytes = 1 << 28;
        let c = huge_coverage(Backing::Thp, &e);
        assert!(c.degraded && c.note.unwrap().contains("25%"));
    }

    #[test]
    fn files_are_judged_by_their_folios_and_a_small_page_cache_says_why() {
        let mut e = ev(64 << 20);
        e.folios = Some(BTreeMap::from([(2 << 20, 64 << 20)]));
        let c = huge_coverage(Backing::PageCache, &e);
        assert_eq!((c.fraction, c.source.as_str()), (Some(1.0), "folios"));
        e.folios = Some(BTreeMap::from([(4096, 64 << 20)]));
        let c = huge_coverage(Backing::PageCache, &e);
        assert!(c.degraded, "{c:?}");
        assert!(
            c.note
                .unwrap()
                .contains("keeps smaller folios in its page cache")
        );
        // Without folio sizes (not root): smaps' PMD-mapped file and shmem pages.
        e.folios = None;
        e.file_huge_bytes = 32 << 20;
        let tmpfs = Backing::Tmpfs {
            huge: crate::backing::TmpfsHuge::Always,
        };
        assert_eq!(huge_coverage(tmpfs, &e).fraction, Some(0.5));
    }

    #[test]
    fn hugetlb_needs_the_right_page_size() {
        let mut e = ev(1 << 30);
        e.hugetlb_bytes = 1 << 30;
        e.kernel_page_size = 2 << 20;
        assert_eq!(
            huge_coverage(Backing::Hugetlb { page_size: 2 << 20 }, &e).fraction,
            Some(1.0)
        );
        assert_eq!(
            huge_coverage(Backing::Hugetlb { page_size: 1 << 30 }, &e).fraction,
            Some(0.0)
        );
    }

    #[test]
    fn mthp_needs_folios() {
        let mut e = ev(1 << 20);
        e.folio_note = Some("run as root".into());
        let c = huge_coverage(Backing::Mthp { size: 65536 }, &e);
        assert_eq!(c.fraction, None);
        assert!(!c.degraded && c.note.unwrap().contains("root"));
        e.folios = Some(BTreeMap::from([(65536, 1 << 20)]));
        assert_eq!(
            huge_coverage(Backing::Mthp { size: 65536 }, &e).fraction,
            Some(1.0)
        );
    }
}
