//! A process's hot memory against the TLB: the bytes referenced in a window (`collect::hot`),
//! per mapping and in total, the translations they need at 4 KiB, 2 MiB and 1 GiB pages, and
//! the page sizes they are on now.
//!
//! `Referenced` is counted per page-table entry: a PMD-mapped THP touched anywhere counts its
//! whole 2 MiB, so on THP the 4 KiB count is an upper bound. smaps gives each mapping's hot
//! bytes, not where in the mapping they are, so at 2 MiB and 1 GiB the entries are a range: at
//! least the hot bytes in whole pages, at most every aligned page the hot mappings overlap.

use super::inspect::{is_hugetlb, kind, resident_bytes};
pub use crate::model::inspect::{Entries, HotMapping, HotSet};
use crate::probe::process::Mapping;

const K4: u64 = 4096;
const M2: u64 = 2 << 20;
const G1: u64 = 1 << 30;

/// The hot set from a process's smaps read at the end of the window.
pub fn hot_set(pid: u32, name: &str, window_s: f64, maps: &[Mapping]) -> HotSet {
    let mut mappings: Vec<HotMapping> = maps
        .iter()
        .map(|m| {
            let hugetlb = is_hugetlb(m);
            HotMapping {
                start: m.start,
                end: m.end,
                kind: kind(m),
                path: m.path.clone(),
                resident: resident_bytes(m),
                hot: if hugetlb { 0 } else { m.field("Referenced") },
                on_thp: m.field("AnonHugePages")
                    + m.field("ShmemPmdMapped")
                    + m.field("FilePmdMapped"),
                hugetlb_page: hugetlb.then(|| m.field("KernelPageSize").max(M2)),
            }
        })
        .filter(|m| m.hot > 0 || m.hugetlb_page.is_some())
        .collect();
    mappings.sort_by(|a, b| b.hot.cmp(&a.hot).then(b.resident.cmp(&a.resident)));
    let hot: u64 = mappings.iter().map(|m| m.hot).sum();
    // Aligned pages of `size` that mappings with hot bytes overlap, each counted once.
    let overlapped = |size: u64| {
        let mut ranges: Vec<(u64, u64)> = mappings
            .iter()
            .filter(|m| m.hot > 0)
            .map(|m| (m.start / size, (m.end - 1) / size))
            .collect();
        ranges.sort_unstable();
        let (mut n, mut last) = (0u64, None::<u64>);
        for (a, b) in ranges {
            let a = last.map_or(a, |l| a.max(l + 1));
            if b >= a {
                n += b - a + 1;
            }
            last = Some(last.map_or(b, |l| l.max(b)));
        }
        n
    };
    let mut e = Entries {
        at_2m: (hot.div_ceil(M2), overlapped(M2)),
        at_1g: (hot.div_ceil(G1), overlapped(G1)),
        ..Entries::default()
    };
    for m in &mappings {
        e.at_4k += m.hot.div_ceil(K4);
        // Hot bytes on THP at most what is on THP; those need one entry per 2 MiB.
        let thp_hot = m.hot.min(m.on_thp);
        e.now += thp_hot.div_ceil(M2) + (m.hot - thp_hot).div_ceil(K4);
    }
    HotSet {
        need: None,
        pid,
        name: name.to_string(),
        window_s,
        resident: maps.iter().map(resident_bytes).sum(),
        hot,
        hugetlb_untracked: mappings
            .iter()
            .filter(|m| m.hugetlb_page.is_some())
            .map(|m| m.resident)
            .sum(),
        entries: e,
        mappings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(start: u64, fields: &[(&str, u64)], flags: &[&str]) -> Mapping {
        Mapping {
            start,
            end: start + (1 << 30),
            perms: "rw-p".into(),
            fields: fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            vm_flags: flags.iter().map(|f| f.to_string()).collect(),
            ..Mapping::default()
        }
    }

    #[test]
    fn hot_bytes_become_entries_at_each_page_size() {
        let maps = [
            // 100 MiB hot of 500 MiB resident on 4 KiB pages.
            mapping(0, &[("Rss", 500 << 20), ("Referenced", 100 << 20)], &["mr"]),
            // 64 MiB hot, all of it on THP.
            mapping(
                1 << 32,
                &[
                    ("Rss", 128 << 20),
                    ("Referenced", 64 << 20),
                    ("AnonHugePages", 128 << 20),
                ],
                &["hg"],
            ),
            // Cold.
            mapping(1 << 34, &[("Rss", 300 << 20)], &[]),
            // Hugetlb: resident, untracked.
            mapping(
                1 << 36,
                &[("Private_Hugetlb", 256 << 20), ("KernelPageSize", 2 << 20)],
                &["ht"],
            ),
        ];
        let h = hot_set(7, "app", 10.0, &maps);
        assert_eq!(h.hot, 164 << 20);
        assert_eq!(h.resident, (500 + 128 + 300 + 256) << 20);
        assert_eq!(h.hugetlb_untracked, 256 << 20);
        assert_eq!(h.entries.at_4k, (164 << 20) / 4096);
        // At least 164 MiB in 2 MiB pages; at most the 2 GiB the two hot mappings span.
        assert_eq!(h.entries.at_2m, (82, 1024));
        assert_eq!(h.entries.at_1g, (1, 2));
        assert_eq!(h.entries.now, (100 << 20) / 4096 + 32);
        assert_eq!(h.mappings.len(), 3);
        assert_eq!(h.mappings[0].hot, 100 << 20);
    }
}
