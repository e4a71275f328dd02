//! The allowlist: every system setting hugelab may ever write, as a closed enum.
//! A path outside this list cannot be expressed, so it cannot be written.

pub use crate::model::arm::knob::{KNOB_NAMES, KhugepagedKnob, Knob, ValueKind};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip_and_paths() {
        for name in [
            "thp.enabled",
            "thp.defrag",
            "mthp.64K",
            "khugepaged.max_ptes_none",
            "thp.shrink_underused",
            "thp.use_zero_page",
            "hugetlb.2M",
            "hugetlb.1G.node0",
            "hugetlb.2M.overcommit",
            "vm.compaction_proactiveness",
            "vm.defrag_mode",
        ] {
            let k: Knob = name.parse().unwrap();
            assert_eq!(k.to_string(), name);
        }
        let k: Knob = "hugetlb.1G.node1".parse().unwrap();
        assert_eq!(
            k.path(),
            "/sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages"
        );
        assert_eq!(
            Knob::MthpEnabled { size: 65536 }.path(),
            "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
        );
    }

    #[test]
    fn rejects_unknown_and_bad_values() {
        let e = "vm.swappiness".parse::<Knob>().unwrap_err();
        assert!(e.contains("valid settings"), "{e}");
        assert!(
            Knob::ThpEnabled
                .validate("sometimes")
                .unwrap_err()
                .to_string()
                .contains("always, madvise, never")
        );
        assert!(
            Knob::HugetlbPages {
                size: 2 << 20,
                node: None
            }
            .validate("-1")
            .is_err()
        );
        Knob::ThpDefrag.validate("defer+madvise").unwrap();
        assert!(Knob::ThpShrinkUnderused.validate("2").is_err());
        Knob::ThpUseZeroPage.validate("0").unwrap();
        Knob::DefragMode.validate("1").unwrap();
        assert!(Knob::DefragMode.validate("2").is_err());
        let ptes: Knob = "khugepaged.max_ptes_none".parse().unwrap();
        ptes.validate("0").unwrap();
        assert!(ptes.validate("none").is_err());
    }

    #[test]
    fn every_path_is_under_the_allowed_trees() {
        let knobs = [
            Knob::ThpEnabled,
            Knob::ThpShmemEnabled,
            Knob::MthpEnabled { size: 16384 },
            Knob::Khugepaged {
                name: KhugepagedKnob::Defrag,
            },
            Knob::HugetlbOvercommit { size: 2 << 20 },
            Knob::ThpShrinkUnderused,
            Knob::ThpUseZeroPage,
        ];
        for k in knobs {
            let p = k.path();
            assert!(
                p.starts_with("/sys/kernel/mm/") || p.starts_with("/sys/devices/system/node/"),
                "{p}"
            );
        }
    }
}
