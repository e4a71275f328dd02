//! What a region really got: its VMA's smaps fields and, where /proc/kpageflags is readable
//! (root), the folio-size histogram from /proc/self/pagemap — the only place mTHP shows.

use crate::probe::process::parse_smaps;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN_MASK: u64 = (1 << 55) - 1;
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
const KPF_HUGE: u64 = 1 << 17;
const KPF_THP: u64 = 1 << 22;

/// Raw evidence of one region's backing.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegionEvidence {
    pub mapped_bytes: u64,
    pub rss_bytes: u64,
    /// smaps AnonHugePages: PMD-mapped THP.
    pub anon_huge_bytes: u64,
    /// smaps Private_Hugetlb + Shared_Hugetlb (not part of Rss).
    pub hugetlb_bytes: u64,
    pub kernel_page_size: u64,
    /// Folio size (bytes) → bytes of the region in folios of that size; `None` without root.
    pub folios: Option<BTreeMap<u64, u64>>,
    /// Why folio sizes are missing.
    pub folio_note: Option<String>,
}

/// Sum the smaps fields of every mapping overlapping `[start, start + len)` in `smaps` text.
pub fn from_smaps(
    smaps: &str,
    start: u64,
    len: u64,
) -> Result<RegionEvidence, crate::error::ParseError> {
    let end = start + len;
    let mut e = RegionEvidence {
        mapped_bytes: len,
        ..RegionEvidence::default()
    };
    for m in parse_smaps(smaps)?
        .iter()
        .filter(|m| m.start < end && m.end > start)
    {
        e.rss_bytes += m.field("Rss");
        e.anon_huge_bytes += m.field("AnonHugePages");
        e.hugetlb_bytes += m.field("Private_Hugetlb") + m.field("Shared_Hugetlb");
        e.kernel_page_size = e.kernel_page_size.max(m.field("KernelPageSize"));
    }
    Ok(e)
}

/// Folio sizes of `[start, start + len)` of this process, from pagemap PFNs and kpageflags.
/// `Ok(None)` with a reason when PFNs are hidden (not CAP_SYS_ADMIN) or kpageflags is unreadable.
pub fn folio_histogram(
    start: u64,
    len: u64,
) -> std::io::Result<Result<BTreeMap<u64, u64>, String>> {
    let pages = len.div_ceil(PAGE) as usize;
    let pagemap = File::open("/proc/self/pagemap")?;
    let mut raw = vec![0u8; pages * 8];
    pagemap.read_exact_at(&mut raw, start / PAGE * 8)?;
    let entries: Vec<u64> = raw
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    let pfn = |e: u64| (e & PM_PRESENT != 0).then_some(e & PM_PFN_MASK);
    if entries.iter().any(|&e| e & PM_PRESENT != 0)
        && entries.iter().all(|&e| pfn(e).unwrap_or(0) == 0)
    {
        return Ok(Err(
            "page frame numbers are hidden without CAP_SYS_ADMIN: run as root to see folio sizes"
                .into(),
        ));
    }
    let kpageflags = match File::open("/proc/kpageflags") {
        Ok(f) => f,
        Err(e) => {
            return Ok(Err(format!(
                "/proc/kpageflags is unreadable ({e}): run as root to see folio sizes"
            )));
        }
    };
    // Read flags per run of physically contiguous pages: one pread for a whole huge page.
    let mut flags = vec![0u64; pages];
    let mut i = 0;
    while i < pages {
        let Some(p0) = pfn(entries[i]) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < pages && pfn(entries[j]) == Some(p0 + (j - i) as u64) {
            j += 1;
        }
        let mut buf = vec![0u8; (j - i) * 8];
        kpageflags.read_exact_at(&mut buf, p0 * 8)?;
        for (k, c) in buf.chunks_exact(8).enumerate() {
            flags[i + k] = u64::from_ne_bytes(c.try_into().unwrap());
        }
        i = j;
    }
    Ok(Ok(histogram(
        &entries.iter().map(|&e| pfn(e)).collect::<Vec<_>>(),
        &flags,
    )))
}

/// Pure folio grouping: a compound head plus the physically contiguous tails after it form one
/// folio; a non-compound page is a 4 KiB folio; non-present pages are bucket 0.
pub fn histogram(pfns: &[Option<u64>], flags: &[u64]) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < pfns.len() {
        let Some(p) = pfns[i] else {
            *out.entry(0).or_insert(0) += PAGE;
            i += 1;
            continue;
        };
        let f = flags[i];
        let mut j = i + 1;
        if f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) != 0 {
            while j < pfns.len()
                && flags[j] & KPF_COMPOUND_TAIL != 0
                && pfns[j] == Some(p + (j - i) as u64)
            {
                j += 1;
            }
        }
        let pages_in_folio = if f & KPF_COMPOUND_HEAD != 0 || f & KPF_COMPOUND_TAIL != 0 {
            // A folio cut by the region's edge still counts at its visible size, rounded up to a power of two.
            ((j - i) as u64).next_power_of_two()
        } else {
            1
        };
        *out.entry(pages_in_folio * PAGE).or_insert(0) += (j - i) as u64 * PAGE;
        i = j;
    }
    out
}

/// Whether kpageflags marks a page as hugetlb or THP (exposed for tests and inspect).
pub fn is_huge_flag(flags: u64) -> bool {
    flags & (KPF_HUGE | KPF_THP) != 0
}

/// Evidence for a region of this process: smaps always, folio sizes where readable.
pub fn region_evidence(start: u64, len: u64) -> std::io::Result<RegionEvidence> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut e = from_smaps(&smaps, start, len)
        .map_err(|err| std::io::Error::other(format!("/proc/self/smaps: {err}")))?;
    match folio_histogram(start, len)? {
        Ok(h) => e.folios = Some(h),
        Err(note) => e.folio_note = Some(note),
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_folios() {
        // 16 pages: a 4-page mTHP folio, 2 base pages, a missing page, an 8-page folio, 1 base.
        let mut pfns: Vec<Option<u64>> = Vec::new();
        let mut flags = Vec::new();
        for k in 0..4 {
            pfns.push(Some(100 + k));
            flags.push(if k == 0 {
                KPF_COMPOUND_HEAD
            } else {
                KPF_COMPOUND_TAIL
            });
        }
        pfns.extend([Some(7), Some(9), None]);
        flags.extend([0, 0, 0]);
        for k in 0..8 {
            pfns.push(Some(512 + k));
            flags.push(if k == 0 {
                KPF_COMPOUND_HEAD | KPF_THP
            } else {
                KPF_COMPOUND_TAIL | KPF_THP
            });
        }
        pfns.push(Some(3));
        flags.push(0);
        let h = histogram(&pfns, &flags);
        assert_eq!(h[&16384], 16384);
        assert_eq!(h[&4096], 3 * 4096);
        assert_eq!(h[&32768], 32768);
        assert_eq!(h[&0], 4096);
    }

    #[test]
    fn two_adjacent_folios_stay_apart() {
        let pfns: Vec<Option<u64>> = (0..8).map(|k| Some(64 + k)).collect();
        let flags: Vec<u64> = (0..8)
            .map(|k| {
                if k % 4 == 0 {
                    KPF_COMPOUND_HEAD
                } else {
                    KPF_COMPOUND_TAIL
                }
            })
            .collect();
        let h = histogram(&pfns, &flags);
        assert_eq!(h.len(), 1);
        assert_eq!(h[&16384], 32768);
    }

    #[test]
    fn smaps_fields_summed_over_overlap() {
        let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nRss: 4096 kB\nAnonHugePages: 4096 kB\nKernelPageSize: 4 kB\n7f0000400000-7f0000600000 rw-p 00000000 00:00 0 \nRss: 0 kB\nPrivate_Hugetlb: 2048 kB\nKernelPageSize: 2048 kB\n7f0001000000-7f0001200000 rw-p 00000000 00:00 0 \nRss: 2048 kB\n";
        let e = from_smaps(smaps, 0x7f00_0000_0000, 6 << 20).unwrap();
        assert_eq!(e.anon_huge_bytes, 4 << 20);
        assert_eq!(e.hugetlb_bytes, 2 << 20);
        assert_eq!(e.rss_bytes, 4 << 20);
        assert_eq!(e.kernel_page_size, 2 << 20);
    }
}
