//! `inspect`: per-mapping kinds, huge coverage, TLB reach and evidence-based reasons why a
//! mapping is not on huge pages. Pure functions over smaps mappings, process status, the THP
//! settings and (where readable) folio histograms.

use crate::probe::process::{Mapping, ProcStatus};
use crate::probe::thp::Thp;
use crate::units::Bytes;
use std::collections::BTreeMap;

const TWO_MIB: u64 = 2 << 20;

pub use crate::probe::process::{Kind, is_hugetlb, kind};

/// The Java heap: in a JVM (`-Xmx` in its command line), the largest read-write anonymous
/// mapping, if it is at least half of -Xmx (the JVM reserves the heap as one range).
pub fn java_heap(maps: &[Mapping], cmdline: &[String]) -> Option<usize> {
    let xmx = cmdline
        .iter()
        .find_map(|a| a.strip_prefix("-Xmx"))
        .and_then(|v| v.parse::<Bytes>().ok())?
        .0;
    let (i, m) = maps
        .iter()
        .enumerate()
        .filter(|(_, m)| kind(m) == Kind::Anonymous && m.perms.starts_with("rw"))
        .max_by_key(|(_, m)| m.size())?;
    (m.size() >= xmx / 2).then_some(i)
}

/// System and process context for the reasons.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub thp: Thp,
    pub status: ProcStatus,
}

/// Bytes of a mapping resident on pages larger than 4 KiB: hugetlb, PMD THP and (from folios)
/// mTHP. Without folios, mTHP is invisible and counted as small.
pub fn huge_bytes(m: &Mapping, folios: Option<&BTreeMap<u64, u64>>) -> u64 {
    if is_hugetlb(m) {
        return m.field("Private_Hugetlb") + m.field("Shared_Hugetlb");
    }
    match folios {
        Some(h) => h.iter().filter(|(s, _)| **s > 4096).map(|(_, b)| *b).sum(),
        None => m.field("AnonHugePages") + m.field("ShmemPmdMapped") + m.field("FilePmdMapped"),
    }
}

/// Resident bytes, counting hugetlb (which smaps leaves out of Rss) exactly once.
pub fn resident_bytes(m: &Mapping) -> u64 {
    if is_hugetlb(m) {
        m.field("Private_Hugetlb") + m.field("Shared_Hugetlb")
    } else {
        m.field("Rss")
    }
}

/// Whether some 2 MiB-aligned 2 MiB range fits inside the mapping.
pub fn has_aligned_2m(m: &Mapping) -> bool {
    m.start.next_multiple_of(TWO_MIB) + TWO_MIB <= m.end
}

/// Why a mapping is not (fully) on huge pages — only reasons the evidence supports.
pub fn why_not_huge(m: &Mapping, k: Kind, coverage: f64, ctx: &Context) -> Vec<String> {
    let mut r = Vec::new();
    if k == Kind::Hugetlb {
        return r;
    }
    if coverage >= 0.99 || resident_bytes(m) == 0 {
        return r;
    }
    if k == Kind::Special || k == Kind::Stack && m.size() < TWO_MIB {
        return r;
    }
    if m.size() < TWO_MIB {
        r.push(format!("smaller than 2 MiB ({})", Bytes(m.size())));
        return r;
    }
    if !has_aligned_2m(m) {
        r.push("no 2 MiB-aligned 2 MiB range inside the mapping".into());
        return r;
    }
    if m.has_flag("nh") {
        r.push("MADV_NOHUGEPAGE on this range (VmFlags nh)".into());
    }
    if ctx.status.thp_enabled == Some(false) {
        r.push("THP disabled for the process (PR_SET_THP_DISABLE; status THP_enabled: 0)".into());
    }
    let mode = ctx.thp.enabled.as_ref().map(|s| s.selected.as_str());
    match k {
        Kind::File => {
            if m.field("FilePmdMapped") == 0 {
                r.push("file-backed: huge page cache needs a filesystem with large folios (or CONFIG_READ_ONLY_THP_FOR_FS for read-only text)".into());
            }
            return r;
        }
        Kind::SharedMemory => {
            let shmem = ctx.thp.shmem_enabled.as_ref().map(|s| s.selected.as_str());
            if matches!(shmem, Some("never") | Some("deny")) {
                r.push(format!(
                    "shared memory and shmem_enabled is `{}`",
                    shmem.unwrap_or("-")
                ));
            }
            return r;
        }
        _ => {}
    }
    if mode == Some("never") {
        r.push("THP is `never` system-wide (transparent_hugepage/enabled)".into());
    } else if mode == Some("madvise") && !m.has_flag("hg") && !m.has_flag("nh") {
        r.push(
            "THP mode is `madvise` and this range has no MADV_HUGEPAGE (VmFlags lacks hg)".into(),
        );
    }
    if r.is_empty() {
        let k = &ctx.thp.khugepaged;
        if m.field("THPeligible") == 1 {
            r.push(format!(
                "eligible, not yet collapsed: faults got small pages (fragmentation or defrag `{}`), and khugepaged scans {} pages every {} ms ({} full scans so far)",
                ctx.thp.defrag.as_ref().map_or("-", |d| d.selected.as_str()),
                k.pages_to_scan.map_or("-".into(), |v| v.to_string()),
                k.scan_sleep_millisecs.map_or("-".into(), |v| v.to_string()),
                k.full_scans.map_or("-".into(), |v| v.to_string())
            ));
        } else {
            r.push("the kernel reports it not THP-eligible (THPeligible: 0)".into());
        }
    }
    r
}

/// Translations the resident memory needs: now, if all 4 KiB, if all 2 MiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlbReach {
    pub now: u64,
    pub all_4k: u64,
    pub all_2m: u64,
}

/// One translation per PMD-mapped THP or hugetlb page, one per 4 KiB otherwise (x86 mTHP
/// folios are still mapped by 4 KiB PTEs).
pub fn tlb_reach(m: &Mapping, folios: Option<&BTreeMap<u64, u64>>) -> TlbReach {
    let resident = resident_bytes(m);
    let (huge_entries, huge_bytes) = if is_hugetlb(m) {
        let ps = m.field("KernelPageSize").max(TWO_MIB);
        (resident / ps, resident)
    } else {
        let pmd = match folios {
            Some(h) => h.get(&TWO_MIB).copied().unwrap_or(0),
            None => m.field("AnonHugePages") + m.field("ShmemPmdMapped") + m.field("FilePmdMapped"),
        };
        (pmd / TWO_MIB, pmd)
    };
    TlbReach {
        now: huge_entries + resident.saturating_sub(huge_bytes) / 4096,
        all_4k: resident / 4096,
        all_2m: resident.div_ceil(TWO_MIB),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::kv::Selector;
    use crate::probe::process::parse_smaps;

    fn ctx(mode: &str) -> Context {
        let thp = Thp {
            enabled: Some(Selector {
                selected: mode.into(),
                choices: vec![],
            }),
            ..Thp::default()
        };
        Context {
            thp,
            status: ProcStatus {
                name: "t".into(),
                thp_enabled: Some(true),
                vm_rss: None,
            },
        }
    }

    fn map(header: &str, fields: &str) -> Mapping {
        parse_smaps(&format!("{header}\n{fields}"))
            .unwrap()
            .remove(0)
    }

    #[test]
    fn kinds() {
        assert_eq!(
            kind(&map(
                "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 [heap]",
                "Rss: 4 kB"
            )),
            Kind::Heap
        );
        assert_eq!(
            kind(&map(
                "7f0000000000-7f0000200000 rw-p 00000000 00:00 0",
                "KernelPageSize: 2048 kB"
            )),
            Kind::Hugetlb
        );
        assert_eq!(
            kind(&map(
                "7f0000000000-7f0000200000 rw-s 00000000 00:01 5 /dev/shm/x",
                "Rss: 4 kB"
            )),
            Kind::SharedMemory
        );
        assert_eq!(
            kind(&map(
                "7f0000000000-7f0000200000 r-xp 00000000 08:01 5 /usr/lib/libc.so.6",
                "Rss: 4 kB"
            )),
            Kind::File
        );
    }

    #[test]
    fn reasons_follow_the_evidence() {
        let anon = "7f0000000000-7f0004000000 rw-p 00000000 00:00 0";
        let m = map(
            anon,
            "Rss: 65536 kB\nAnonHugePages: 0 kB\nTHPeligible: 0\nVmFlags: rd wr mr mw me ac",
        );
        assert!(
            why_not_huge(&m, Kind::Anonymous, 0.0, &ctx("madvise"))[0].contains("no MADV_HUGEPAGE")
        );
        assert!(why_not_huge(&m, Kind::Anonymous, 0.0, &ctx("never"))[0].contains("never"));
        let nh = map(anon, "Rss: 65536 kB\nVmFlags: rd wr nh");
        assert!(why_not_huge(&nh, Kind::Anonymous, 0.0, &ctx("always"))[0].contains("NOHUGEPAGE"));
        let small = map(
            "7f0000001000-7f0000101000 rw-p 00000000 00:00 0",
            "Rss: 1024 kB",
        );
        assert!(
            why_not_huge(&small, Kind::Anonymous, 0.0, &ctx("always"))[0]
                .contains("smaller than 2 MiB")
        );
        let unaligned = map(
            "7f0000001000-7f0000300000 rw-p 00000000 00:00 0",
            "Rss: 3068 kB",
        );
        assert!(
            why_not_huge(&unaligned, Kind::Anonymous, 0.0, &ctx("always"))[0].contains("aligned")
        );
        let mut c = ctx("always");
        c.status.thp_enabled = Some(false);
        assert!(
            why_not_huge(&m, Kind::Anonymous, 0.0, &c)
                .iter()
                .any(|r| r.contains("PR_SET_THP_DISABLE"))
        );
        let eligible = map(
            anon,
            "Rss: 65536 kB\nAnonHugePages: 32768 kB\nTHPeligible: 1\nVmFlags: rd wr hg",
        );
        assert!(
            why_not_huge(&eligible, Kind::Anonymous, 0.5, &ctx("madvise"))[0]
                .contains("khugepaged")
        );
        let full = map(
            anon,
            "Rss: 65536 kB\nAnonHugePages: 65536 kB\nVmFlags: rd wr hg",
        );
        assert!(why_not_huge(&full, Kind::Anonymous, 1.0, &ctx("madvise")).is_empty());
    }

    #[test]
    fn reach_and_no_double_counting() {
        let thp = map(
            "7f0000000000-7f0004000000 rw-p 00000000 00:00 0",
            "Rss: 65536 kB\nAnonHugePages: 61440 kB",
        );
        let r = tlb_reach(&thp, None);
        assert_eq!(
            r,
            TlbReach {
                now: 30 + 1024,
                all_4k: 16384,
                all_2m: 32
            }
        );
        let ht = map(
            "7f0000000000-7f0040000000 rw-p 00000000 00:0f 1 /anon_hugepage (deleted)",
            "Rss: 0 kB\nPrivate_Hugetlb: 1048576 kB\nKernelPageSize: 1048576 kB",
        );
        assert_eq!(resident_bytes(&ht), 1 << 30);
        assert_eq!(huge_bytes(&ht, None), 1 << 30);
        assert_eq!(tlb_reach(&ht, None).now, 1);
    }

    #[test]
    fn finds_the_java_heap() {
        let maps = parse_smaps("7f0000000000-7f0040000000 rw-p 00000000 00:00 0\nRss: 4 kB\n7f1000000000-7f1000200000 rw-p 00000000 00:00 0\nRss: 4 kB\n").unwrap();
        assert_eq!(java_heap(&maps, &["java".into(), "-Xmx1g".into()]), Some(0));
        assert_eq!(java_heap(&maps, &["java".into()]), None);
    }
}
