//! `inspect`: per-mapping kinds, huge coverage, TLB reach and evidence-based reasons why a
//! mapping is not on huge pages. Pure functions over smaps mappings, process status, the THP
//! settings and (where readable) folio histograms.

pub use crate::model::inspect::{Circumstances, MappingReport, ProcessReport, TlbReach};
use crate::probe::process::Mapping;
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
pub fn why_not_huge(m: &Mapping, k: Kind, coverage: f64, ctx: &Circumstances) -> Vec<String> {
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

/// The report of one process from its snapshot: per mapping its kind (Java heap, guest RAM),
/// resident and huge bytes, coverage, TLB reach and why it is not huge; for a hypervisor, its
/// guest RAM. `pool_free`: free bytes per hugetlb page size.
pub fn report(
    snap: crate::collect::snapshot::Snapshot,
    thp: &Thp,
    pool_free: &BTreeMap<u64, u64>,
) -> ProcessReport {
    use crate::analyze::vm;
    let crate::collect::snapshot::Snapshot {
        pid,
        status,
        maps,
        cmdline,
        config_file,
        folios: mut scanned,
        mut notes,
        elapsed,
    } = snap;
    let heap = java_heap(&maps, &cmdline);
    let located = vm::hypervisor(&status.name, &cmdline).map(|hv| {
        let mut decl = vm::declared(hv, &cmdline);
        if hv == vm::Hypervisor::Firecracker
            && let Some(text) = &config_file
        {
            decl = vm::firecracker_declared(text);
        }
        (hv, vm::locate(&decl, &maps))
    });
    let guest: Vec<usize> = located
        .iter()
        .flat_map(|(_, loc)| loc.iter().filter_map(|(_, i)| *i))
        .collect();
    let ctx = Circumstances {
        thp: thp.clone(),
        status: status.clone(),
    };
    if maps.is_empty() {
        notes.push("no user memory (a kernel thread, or a zombie)".into());
    }
    let mut folio_total: Option<BTreeMap<u64, u64>> = scanned.as_ref().map(|_| BTreeMap::new());
    let mut mappings = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        let base = kind(m);
        let k = if Some(i) == heap {
            Kind::JavaHeap
        } else if guest.contains(&i) && base != Kind::Hugetlb {
            Kind::GuestRam
        } else {
            base
        };
        let resident = resident_bytes(m);
        // hugetlb comes from smaps (its page size is exact there); the rest from folios.
        let folios = scanned
            .as_mut()
            .and_then(|sc| sc.remove(&(m.start, m.end)))
            .filter(|_| !is_hugetlb(m) && resident > 0);
        if let (Some(tot), Some(h)) = (folio_total.as_mut(), folios.as_ref()) {
            for (s, b) in h {
                *tot.entry(*s).or_insert(0) += b;
            }
        }
        if is_hugetlb(m)
            && let Some(tot) = folio_total.as_mut()
        {
            *tot.entry(m.field("KernelPageSize")).or_insert(0) += resident;
        }
        let huge = huge_bytes(m, folios.as_ref());
        let coverage = (resident > 0).then(|| huge as f64 / resident as f64);
        mappings.push(MappingReport {
            start: m.start,
            end: m.end,
            perms: m.perms.clone(),
            kind: k,
            path: m.path.clone(),
            size: m.size(),
            resident,
            anon_huge_pages: m.field("AnonHugePages"),
            private_hugetlb: m.field("Private_Hugetlb"),
            shared_hugetlb: m.field("Shared_Hugetlb"),
            kernel_page_size: m.field("KernelPageSize"),
            thp_eligible: m.fields.get("THPeligible").map(|v| *v == 1),
            vm_flags: m.vm_flags.clone(),
            why_not_huge: why_not_huge(
                m,
                if k == Kind::GuestRam { base } else { k },
                coverage.unwrap_or(1.0),
                &ctx,
            ),
            tlb: tlb_reach(m, folios.as_ref()),
            folios,
            huge_bytes: huge,
            coverage,
        });
    }
    notes.dedup();
    let guest_ram = located.map(|(hv, located)| {
        let regions: Vec<vm::Region> = mappings.iter().map(region).collect();
        vm::guest_ram(hv, located, &regions, pool_free)
    });
    let resident: u64 = mappings.iter().map(|m| m.resident).sum();
    let huge: u64 = mappings.iter().map(|m| m.huge_bytes).sum();
    let tlb = mappings.iter().fold(TlbReach::default(), |a, m| TlbReach {
        now: a.now + m.tlb.now,
        all_4k: a.all_4k + m.tlb.all_4k,
        all_2m: a.all_2m + m.tlb.all_2m,
    });
    ProcessReport {
        pid,
        name: status.name,
        thp_enabled: status.thp_enabled,
        resident,
        huge_bytes: huge,
        coverage: (resident > 0).then(|| huge as f64 / resident as f64),
        folios: folio_total,
        tlb,
        mappings,
        guest_ram,
        notes,
        elapsed_ms: elapsed.as_secs_f64() * 1000.0,
    }
}

/// A mapping's resident bytes by page size, for the guest-RAM summary.
fn region(m: &MappingReport) -> crate::analyze::vm::Region {
    use crate::analyze::vm::{PageShare, Region};
    let pages = if m.kind == Kind::Hugetlb {
        vec![PageShare {
            page_size: m.kernel_page_size,
            hugetlb: true,
            bytes: m.resident,
        }]
    } else {
        match &m.folios {
            Some(h) => h
                .iter()
                .map(|(&page_size, &bytes)| PageShare {
                    page_size,
                    hugetlb: false,
                    bytes,
                })
                .collect(),
            None => vec![
                PageShare {
                    page_size: 2 << 20,
                    hugetlb: false,
                    bytes: m.huge_bytes,
                },
                PageShare {
                    page_size: 4096,
                    hugetlb: false,
                    bytes: m.resident.saturating_sub(m.huge_bytes),
                },
            ],
        }
    };
    Region {
        start: m.start,
        end: m.end,
        resident: m.resident,
        pages,
        reasons: m.why_not_huge.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::kv::Selector;
    use crate::probe::process::ProcStatus;
    use crate::probe::process::parse_smaps;

    fn ctx(mode: &str) -> Circumstances {
        let thp = Thp {
            enabled: Some(Selector {
                selected: mode.into(),
                choices: vec![],
            }),
            ..Thp::default()
        };
        Circumstances {
            thp,
            status: ProcStatus {
                name: "t".into(),
                thp_enabled: Some(true),
                vm_rss: None,
                hugetlb: None,
                vm_hwm: None,
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
