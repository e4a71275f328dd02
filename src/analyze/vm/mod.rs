//! Virtual machines seen from the host, one idea per file:
//!
//! * [`cmdline`] — which process is a hypervisor (QEMU, Firecracker, cloud-hypervisor) and the
//!   guest RAM its command line or config declares;
//! * [`ram`] — which mappings are that guest RAM, on which page sizes they are resident and,
//!   when not on huge pages, the reason the evidence supports;
//! * [`host`] — the host configuration (libvirt XML, QEMU options, kernel command line) that
//!   backs a VM with a chosen page size;
//! * [`choice`] — which measured arm to advise for a VM.
//!
//! Pure functions over the process's command line, its smaps mappings and the pool state.

pub mod choice;
pub mod cmdline;
pub mod host;
pub mod ram;

pub use choice::{VmAdvice, advise};
pub use cmdline::{
    BackendKind, Declared, Hypervisor, QEMU_DEFAULT_RAM, UNDECLARED_MIN, declared,
    firecracker_declared, hypervisor,
};
pub use host::{HostAdvice, host_advice};
pub use ram::{GuestBackend, GuestRam, PageShare, Region, guest_ram, locate};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::qemu::QemuBacking;
    use crate::probe::process::Mapping;
    use crate::probe::process::parse_smaps;
    use std::collections::BTreeMap;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// smaps of QEMU 7.2 guest RAM captured on this machine (paused, prealloc=on): a 512 MiB
    /// memfd backend on 2 MiB hugetlb pages, and an anonymous region beside it.
    const MEMFD_2M: &str = include_str!("../../../tests/fixtures/smaps/qemu-7.2-memfd-2M.smaps");

    #[test]
    fn libvirt_json_objects_and_firecracker_configs() {
        let d = declared(
            Hypervisor::Qemu,
            &[
                "/usr/bin/qemu-system-x86_64".to_string(),
                "-m".into(),
                "size=4194304k".into(),
                "-object".into(),
                r#"{"qom-type":"memory-backend-file","id":"pc.ram","mem-path":"/dev/hugepages/libvirt/qemu/1-vm","x-use-canonical-path-for-ramblock-id":false,"prealloc":true,"size":4294967296}"#.into(),
            ],
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].id.as_str(), d[0].kind, d[0].size, d[0].prealloc),
            ("pc.ram", BackendKind::File, 4 << 30, true)
        );
        assert_eq!(
            d[0].path.as_deref(),
            Some("/dev/hugepages/libvirt/qemu/1-vm")
        );
        let f = firecracker_declared(
            r#"{"boot-source":{},"machine-config":{"vcpu_count":2,"mem_size_mib":1024,"huge_pages":"2M"}}"#,
        );
        assert_eq!(
            (f[0].size, f[0].hugetlb, f[0].hugetlb_page),
            (1 << 30, true, Some(2 << 20))
        );
        let f = firecracker_declared(r#"{"machine-config":{"mem_size_mib":512}}"#);
        assert_eq!((f[0].size, f[0].hugetlb), (512 << 20, false));
        assert!(firecracker_declared("not json").is_empty());
    }

    #[test]
    fn recognises_hypervisors() {
        assert_eq!(hypervisor("qemu-system-x86", &[]), Some(Hypervisor::Qemu));
        assert_eq!(
            hypervisor("CPU 0/KVM", &args("/usr/bin/qemu-system-aarch64 -m 1G")),
            Some(Hypervisor::Qemu)
        );
        assert_eq!(
            hypervisor("firecracker", &[]),
            Some(Hypervisor::Firecracker)
        );
        assert_eq!(
            hypervisor("cloud-hyperviso", &[]),
            Some(Hypervisor::CloudHypervisor)
        );
        assert_eq!(hypervisor("bash", &args("bash")), None);
    }

    #[test]
    fn qemu_declarations() {
        let d = declared(
            Hypervisor::Qemu,
            &args(
                "qemu-system-x86_64 -m 4G -object memory-backend-memfd,id=m0,size=4G,hugetlb=on,hugetlbsize=1G,prealloc=on -machine memory-backend=m0",
            ),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            (
                d[0].kind,
                d[0].size,
                d[0].hugetlb,
                d[0].hugetlb_page,
                d[0].prealloc
            ),
            (BackendKind::Memfd, 4 << 30, true, Some(1 << 30), true)
        );
        let d = declared(
            Hypervisor::Qemu,
            &args("qemu-system-x86_64 -m 2048 -mem-path /dev/hugepages -mem-prealloc"),
        );
        assert_eq!(
            (d[0].kind, d[0].size, d[0].path.as_deref(), d[0].prealloc),
            (BackendKind::File, 2 << 30, Some("/dev/hugepages"), true)
        );
        let d = declared(Hypervisor::Qemu, &args("qemu-system-x86_64 -S"));
        assert_eq!((d[0].kind, d[0].size), (BackendKind::Ram, QEMU_DEFAULT_RAM));
        // Two NUMA nodes, two backends.
        let d = declared(
            Hypervisor::Qemu,
            &args(
                "qemu-system-x86_64 -m 2G -object memory-backend-ram,id=n0,size=1G -object memory-backend-file,id=n1,size=1G,mem-path=/hp -numa node,memdev=n0 -numa node,memdev=n1",
            ),
        );
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].path.as_deref(), Some("/hp"));
        let d = declared(
            Hypervisor::CloudHypervisor,
            &args("cloud-hypervisor --memory size=1G,hugepages=on,hugepage_size=2M"),
        );
        assert_eq!((d[0].size, d[0].hugetlb_page), (1 << 30, Some(2 << 20)));
        assert!(declared(Hypervisor::Firecracker, &args("firecracker --api-sock /s")).is_empty());
    }

    fn region(m: &Mapping, pages: &[(u64, bool, u64)], reasons: &[&str]) -> Region {
        Region {
            start: m.start,
            end: m.end,
            resident: pages.iter().map(|p| p.2).sum(),
            pages: pages
                .iter()
                .map(|&(page_size, hugetlb, bytes)| PageShare {
                    page_size,
                    hugetlb,
                    bytes,
                })
                .collect(),
            reasons: reasons.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn finds_the_memfd_and_reports_it_fully_huge() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let cmd = args(
            "qemu-system-x86_64 -m 512M -object memory-backend-memfd,id=m0,size=512M,hugetlb=on,hugetlbsize=2M,prealloc=on -machine memory-backend=m0",
        );
        let loc = locate(&declared(Hypervisor::Qemu, &cmd), &maps);
        assert_eq!(
            loc[0].1,
            Some(0),
            "the memfd, not the anonymous mapping of the same size"
        );
        let regions = vec![
            region(&maps[0], &[(2 << 20, true, 512 << 20)], &[]),
            region(&maps[1], &[(4096, false, 1 << 20)], &[]),
        ];
        let g = guest_ram(Hypervisor::Qemu, loc, &regions, &BTreeMap::new());
        assert_eq!(g.summary, "guest RAM 512M: 100% on 2 MiB hugetlb pages");
        assert!(g.reasons.is_empty(), "{:?}", g.reasons);
        assert_eq!(g.huge_share, 1.0);
    }

    #[test]
    fn explains_partial_and_untouched_guest_ram() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let cmd = args("qemu-system-x86_64 -m 512M");
        let loc = locate(&declared(Hypervisor::Qemu, &cmd), &maps);
        assert_eq!(
            loc[0].1,
            Some(1),
            "QEMU's default RAM is the anonymous mapping"
        );
        let regions = vec![
            Region::default(),
            region(
                &maps[1],
                &[(2 << 20, false, 192 << 20), (4096, false, 64 << 20)],
                &["THP mode is `madvise` and this range has no MADV_HUGEPAGE (VmFlags lacks hg)"],
            ),
        ];
        let g = guest_ram(Hypervisor::Qemu, loc, &regions, &BTreeMap::new());
        assert_eq!(
            g.summary,
            "guest RAM 512M (256M resident): 75% on 2 MiB THP pages, 25% on 4 KiB pages"
        );
        assert!(
            g.reasons[0].starts_with("256M of guest RAM not yet touched"),
            "{:?}",
            g.reasons
        );
        assert!(g.reasons[1].contains("MADV_HUGEPAGE"));
        assert!((g.huge_share - 0.375).abs() < 1e-9);
    }

    #[test]
    fn a_short_pool_and_a_missing_mapping_are_named() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let d = vec![Declared {
            id: "m0".into(),
            kind: BackendKind::Memfd,
            size: 512 << 20,
            hugetlb_page: Some(2 << 20),
            hugetlb: true,
            path: None,
            prealloc: false,
        }];
        let regions = vec![region(&maps[0], &[(2 << 20, true, 128 << 20)], &[])];
        let free = BTreeMap::from([(2u64 << 20, 64u64 << 20)]);
        let g = guest_ram(Hypervisor::Qemu, locate(&d, &maps), &regions, &free);
        assert!(
            g.reasons
                .iter()
                .any(|r| r.starts_with("hugetlb pool short: 384M not yet touched and 64M free")),
            "{:?}",
            g.reasons
        );
        let mut big = d.clone();
        big[0].size = 8 << 30;
        let g = guest_ram(Hypervisor::Qemu, locate(&big, &maps), &regions, &free);
        assert!(
            g.reasons[0].contains("no mapping of that size"),
            "{:?}",
            g.reasons
        );
        assert_eq!(
            g.summary,
            "guest RAM 8G (0B resident): nothing resident yet"
        );
    }

    #[test]
    fn page_labels() {
        let l = |page_size, hugetlb| {
            PageShare {
                page_size,
                hugetlb,
                bytes: 0,
            }
            .label()
        };
        assert_eq!(l(4096, false), "4 KiB");
        assert_eq!(l(64 << 10, false), "64 KiB mTHP");
        assert_eq!(l(2 << 20, false), "2 MiB THP");
        assert_eq!(l(2 << 20, true), "2 MiB hugetlb");
        assert_eq!(l(1 << 30, true), "1 GiB hugetlb");
    }

    #[test]
    fn undeclared_guest_ram_is_found_by_size() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let loc = locate(&[], &maps);
        assert_eq!(loc.len(), 2);
        assert!(loc.iter().all(|(d, _)| d.kind == BackendKind::Undeclared));
        let g = guest_ram(Hypervisor::Firecracker, loc, &[], &BTreeMap::new());
        assert!(!g.declared, "found by size");
        let fc = firecracker_declared(r#"{"machine-config":{"mem_size_mib":512}}"#);
        let g = guest_ram(
            Hypervisor::Firecracker,
            locate(&fc, &maps),
            &[],
            &BTreeMap::new(),
        );
        assert!(g.declared, "from its config file");
    }

    #[test]
    fn advice_follows_the_measured_winner_only() {
        use crate::analyze::experiment::{MetricDef, TrialData, analyse};
        use crate::analyze::verdict::{Better, Design};
        let arms: Vec<String> = ["4k", "thp", "h1g"].map(String::from).to_vec();
        // thp a clear 30% faster than 4k in every block, h1g the same as 4k (± noise).
        let mut trials = Vec::new();
        for b in 0..12 {
            let noise = 1.0 + 0.01 * ((b * 7 % 5) as f64 - 2.0);
            for (arm, t) in [(0, 1.0), (1, 0.7 * noise), (2, noise)] {
                trials.push(TrialData {
                    block: b,
                    arm,
                    ok: true,
                    metrics: BTreeMap::from([("wall_s".to_string(), t)]),
                    counters: BTreeMap::new(),
                    noise: BTreeMap::new(),
                    ..Default::default()
                });
            }
        }
        let defs = [MetricDef {
            name: "wall_s".into(),
            better: Better::Lower,
            context: false,
            cost: false,
            row: false,
        }];
        let backings = [
            Some(QemuBacking::FourK),
            Some(QemuBacking::Thp),
            Some(QemuBacking::Hugetlb1G),
        ];
        let r = analyse(&arms, 0, &trials, &defs, 0.01, 0.99, &Design::Fixed);
        let a = advise(&r, &backings, 4 << 30, 1).unwrap();
        assert_eq!(a.arm.as_deref(), Some("thp"));
        assert!(
            a.because
                .starts_with("thp was better than 4k on wall_s: -30.0%"),
            "{}",
            a.because
        );
        assert_eq!(a.advice.unwrap().backing, QemuBacking::Thp);
        // Only two blocks: nothing is measurably better, nothing is advised.
        trials.retain(|t| t.block < 2);
        let r = analyse(&arms, 0, &trials, &defs, 0.01, 0.99, &Design::Fixed);
        let a = advise(&r, &backings, 4 << 30, 1).unwrap();
        assert!(a.arm.is_none() && a.advice.is_none());
        assert!(
            a.because
                .starts_with("no backing was measurably better than the baseline 4k")
        );
    }

    #[test]
    fn advice_for_each_backing() {
        let a = host_advice(QemuBacking::Hugetlb1G, 4 << 30, 1, 2);
        assert_eq!(a.pages, Some(8));
        assert!(a.libvirt.contains("<page size='1' unit='G'/>"));
        assert!(a.qemu.contains("hugetlbsize=1G,prealloc=on"));
        assert_eq!(
            a.kernel_cmdline.as_deref(),
            Some("hugepagesz=1G hugepages=8")
        );
        assert_eq!(
            a.runtime,
            vec!["echo 8 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"]
        );
        let a = host_advice(QemuBacking::Hugetlb2M, 3 << 30, 2, 1);
        assert_eq!(a.pages, Some(1536));
        assert_eq!(
            a.kernel_cmdline.as_deref(),
            Some("hugepagesz=2M hugepages=0:768,1:768")
        );
        assert!(a.runtime[1].contains("node1/hugepages/hugepages-2048kB"));
        assert!(a.notes.iter().any(|n| n.contains("NUMA")));
        let a = host_advice(QemuBacking::Thp, 1 << 30, 1, 1);
        assert!(a.pages.is_none() && a.libvirt.contains("anonymous"));
        assert!(
            host_advice(QemuBacking::FourK, 1 << 30, 1, 1).notes[0].contains("PR_SET_THP_DISABLE")
        );
    }
}
