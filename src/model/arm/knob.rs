//! The allowlist: every system setting hugelab may ever write, as a closed enum, with the file
//! each one is and the values it takes. A path outside this list cannot be expressed, so it
//! cannot be written (`control` writes them).

use crate::error::ControlError;
use crate::model::machine::hugetlb::{HUGEPAGES_DIR, NODE_DIR};
use crate::model::machine::thp::THP_DIR;
use crate::units::Bytes;
use std::fmt;
use std::str::FromStr;

/// Whether a knob holds a bracketed selector, a switch (a plain 0 or 1) or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Selector(&'static [&'static str]),
    Switch,
    Number,
}

const THP_MODES: &[&str] = &["always", "madvise", "never"];
const DEFRAG_MODES: &[&str] = &["always", "defer", "defer+madvise", "madvise", "never"];
const SHMEM_MODES: &[&str] = &["always", "within_size", "advise", "never", "deny", "force"];
const MTHP_MODES: &[&str] = &["always", "inherit", "madvise", "never"];

pub const KNOB_NAMES: &str = "thp.enabled, thp.defrag, thp.shmem_enabled, thp.shrink_underused, thp.use_zero_page, mthp.<size>, khugepaged.<pages_to_scan|scan_sleep_millisecs|alloc_sleep_millisecs|max_ptes_none|max_ptes_swap|max_ptes_shared|defrag>, hugetlb.<size>, hugetlb.<size>.node<N>, hugetlb.<size>.overcommit, vm.compaction_proactiveness, vm.defrag_mode";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KhugepagedKnob {
    PagesToScan,
    ScanSleepMillisecs,
    AllocSleepMillisecs,
    MaxPtesNone,
    MaxPtesSwap,
    MaxPtesShared,
    Defrag,
}

impl KhugepagedKnob {
    const ALL: [KhugepagedKnob; 7] = [
        KhugepagedKnob::PagesToScan,
        KhugepagedKnob::ScanSleepMillisecs,
        KhugepagedKnob::AllocSleepMillisecs,
        KhugepagedKnob::MaxPtesNone,
        KhugepagedKnob::MaxPtesSwap,
        KhugepagedKnob::MaxPtesShared,
        KhugepagedKnob::Defrag,
    ];

    pub fn file(self) -> &'static str {
        match self {
            KhugepagedKnob::PagesToScan => "pages_to_scan",
            KhugepagedKnob::ScanSleepMillisecs => "scan_sleep_millisecs",
            KhugepagedKnob::AllocSleepMillisecs => "alloc_sleep_millisecs",
            KhugepagedKnob::MaxPtesNone => "max_ptes_none",
            KhugepagedKnob::MaxPtesSwap => "max_ptes_swap",
            KhugepagedKnob::MaxPtesShared => "max_ptes_shared",
            KhugepagedKnob::Defrag => "defrag",
        }
    }
}

/// A writable system setting. Sizes are page sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "knob", rename_all = "snake_case")]
pub enum Knob {
    ThpEnabled,
    ThpDefrag,
    ThpShmemEnabled,
    MthpEnabled {
        size: u64,
    },
    Khugepaged {
        name: KhugepagedKnob,
    },
    /// `nr_hugepages` of one size, system-wide or on one NUMA node.
    HugetlbPages {
        size: u64,
        node: Option<u32>,
    },
    HugetlbOvercommit {
        size: u64,
    },
    /// `vm.compaction_proactiveness` (0–100): how hard kcompactd compacts ahead of demand.
    CompactionProactiveness,
    /// `shrink_underused` (0/1): split THPs whose subpages are mostly zero under memory
    /// pressure (Linux 6.12+; `khugepaged/max_ptes_none` sets how many zero subpages count).
    ThpShrinkUnderused,
    /// `use_zero_page` (0/1): map the huge zero page on read faults of untouched memory.
    ThpUseZeroPage,
    /// `vm.defrag_mode` (0/1, Linux 6.15+): kswapd and kcompactd reclaim and compact in whole
    /// 2 MiB pageblocks, so THP faults fall back less.
    DefragMode,
}

impl Knob {
    /// The sysctl that sets this knob, where one does: `vm.nr_hugepages` sizes the pool of the
    /// default huge page size (2 MiB on x86-64 unless booted with `default_hugepagesz=`).
    pub fn sysctl(&self) -> Option<&'static str> {
        match *self {
            Knob::HugetlbPages {
                size: 0x20_0000,
                node: None,
            } => Some("vm.nr_hugepages"),
            Knob::DefragMode => Some("vm.defrag_mode"),
            Knob::CompactionProactiveness => Some("vm.compaction_proactiveness"),
            _ => None,
        }
    }

    /// The absolute sysfs path this knob lives at.
    pub fn path(&self) -> String {
        let kb = |size: u64| size / 1024;
        match *self {
            Knob::ThpEnabled => format!("{THP_DIR}/enabled"),
            Knob::ThpDefrag => format!("{THP_DIR}/defrag"),
            Knob::ThpShmemEnabled => format!("{THP_DIR}/shmem_enabled"),
            Knob::MthpEnabled { size } => format!("{THP_DIR}/hugepages-{}kB/enabled", kb(size)),
            Knob::Khugepaged { name } => format!("{THP_DIR}/khugepaged/{}", name.file()),
            Knob::HugetlbPages { size, node: None } => {
                format!("{HUGEPAGES_DIR}/hugepages-{}kB/nr_hugepages", kb(size))
            }
            Knob::HugetlbPages {
                size,
                node: Some(n),
            } => {
                format!(
                    "{NODE_DIR}/node{n}/hugepages/hugepages-{}kB/nr_hugepages",
                    kb(size)
                )
            }
            Knob::HugetlbOvercommit { size } => {
                format!(
                    "{HUGEPAGES_DIR}/hugepages-{}kB/nr_overcommit_hugepages",
                    kb(size)
                )
            }
            Knob::CompactionProactiveness => "/proc/sys/vm/compaction_proactiveness".into(),
            Knob::ThpShrinkUnderused => format!("{THP_DIR}/shrink_underused"),
            Knob::ThpUseZeroPage => format!("{THP_DIR}/use_zero_page"),
            Knob::DefragMode => "/proc/sys/vm/defrag_mode".into(),
        }
    }

    pub fn kind(&self) -> ValueKind {
        match self {
            Knob::ThpEnabled => ValueKind::Selector(THP_MODES),
            Knob::ThpDefrag => ValueKind::Selector(DEFRAG_MODES),
            Knob::ThpShmemEnabled => ValueKind::Selector(SHMEM_MODES),
            Knob::MthpEnabled { .. } => ValueKind::Selector(MTHP_MODES),
            Knob::ThpShrinkUnderused | Knob::ThpUseZeroPage | Knob::DefragMode => ValueKind::Switch,
            Knob::Khugepaged {
                name: KhugepagedKnob::Defrag,
            } => ValueKind::Switch,
            _ => ValueKind::Number,
        }
    }

    pub fn is_pool(&self) -> bool {
        matches!(self, Knob::HugetlbPages { .. })
    }

    /// Check a value before anything is written.
    pub fn validate(&self, value: &str) -> Result<(), ControlError> {
        let bad = |expected: String| ControlError::InvalidValue {
            knob: self.to_string(),
            value: value.to_string(),
            expected,
        };
        match self.kind() {
            ValueKind::Selector(choices) if !choices.contains(&value) => {
                Err(bad(format!("one of {}", choices.join(", "))))
            }
            ValueKind::Switch if value != "0" && value != "1" => Err(bad("one of 0, 1".into())),
            ValueKind::Number if value.parse::<u64>().is_err() => {
                Err(bad("a non-negative integer".into()))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Knob {
    /// The same names `FromStr` accepts: `thp.enabled`, `mthp.64K`, `hugetlb.2M`, `hugetlb.2M.node0`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Knob::ThpEnabled => write!(f, "thp.enabled"),
            Knob::ThpDefrag => write!(f, "thp.defrag"),
            Knob::ThpShmemEnabled => write!(f, "thp.shmem_enabled"),
            Knob::MthpEnabled { size } => write!(f, "mthp.{}", Bytes(size)),
            Knob::Khugepaged { name } => write!(f, "khugepaged.{}", name.file()),
            Knob::HugetlbPages { size, node: None } => write!(f, "hugetlb.{}", Bytes(size)),
            Knob::HugetlbPages {
                size,
                node: Some(n),
            } => write!(f, "hugetlb.{}.node{n}", Bytes(size)),
            Knob::HugetlbOvercommit { size } => write!(f, "hugetlb.{}.overcommit", Bytes(size)),
            Knob::CompactionProactiveness => write!(f, "vm.compaction_proactiveness"),
            Knob::ThpShrinkUnderused => write!(f, "thp.shrink_underused"),
            Knob::DefragMode => write!(f, "vm.defrag_mode"),
            Knob::ThpUseZeroPage => write!(f, "thp.use_zero_page"),
        }
    }
}

impl FromStr for Knob {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || format!("unknown setting {s:?}; valid settings: {KNOB_NAMES}");
        let size = |t: &str| t.parse::<Bytes>().map(|b| b.0).map_err(|e| e.to_string());
        let parts: Vec<&str> = s.split('.').collect();
        match parts.as_slice() {
            ["thp", "enabled"] => Ok(Knob::ThpEnabled),
            ["thp", "defrag"] => Ok(Knob::ThpDefrag),
            ["thp", "shmem_enabled"] => Ok(Knob::ThpShmemEnabled),
            ["thp", "shrink_underused"] => Ok(Knob::ThpShrinkUnderused),
            ["thp", "use_zero_page"] => Ok(Knob::ThpUseZeroPage),
            ["vm", "compaction_proactiveness"] => Ok(Knob::CompactionProactiveness),
            ["vm", "defrag_mode"] => Ok(Knob::DefragMode),
            ["mthp", sz] => Ok(Knob::MthpEnabled { size: size(sz)? }),
            ["khugepaged", name] => KhugepagedKnob::ALL
                .into_iter()
                .find(|k| k.file() == *name)
                .map(|name| Knob::Khugepaged { name })
                .ok_or_else(unknown),
            ["hugetlb", sz] => Ok(Knob::HugetlbPages {
                size: size(sz)?,
                node: None,
            }),
            ["hugetlb", sz, "overcommit"] => Ok(Knob::HugetlbOvercommit { size: size(sz)? }),
            ["hugetlb", sz, node] => {
                let n = node
                    .strip_prefix("node")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(unknown)?;
                Ok(Knob::HugetlbPages {
                    size: size(sz)?,
                    node: Some(n),
                })
            }
            _ => Err(unknown()),
        }
    }
}
