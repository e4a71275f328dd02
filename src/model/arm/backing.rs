//! A page backing as planned and stored: what memory an arm gets, by name.

use crate::units::Bytes;
use std::fmt;
use std::str::FromStr;

/// Every backing name the parser accepts, as a literal so that `--help` texts can embed it.
#[macro_export]
macro_rules! backing_names {
    () => {
        "4k, thp, thp-collapse, hugetlb-2m, hugetlb-1g, mthp-<size> (e.g. mthp-64k), tmpfs-4k, tmpfs-huge, tmpfs-within, tmpfs-advise (a tmpfs file with huge=never|always|within_size|advise; root), pagecache (a file in $TMPDIR's file system)"
    };
}

pub const TWO_MIB: u64 = 2 << 20;
pub const ONE_GIB: u64 = 1 << 30;
pub const BACKING_NAMES: &str = crate::backing_names!();
/// The id of the memory backend hugelab adds.
pub const BACKEND_ID: &str = "hugelab-ram";

/// A page backing for a region.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(into = "String", try_from = "String")]
pub enum Backing {
    /// 4 KiB pages: MADV_NOHUGEPAGE.
    Base,
    /// THP: MADV_HUGEPAGE, faulted in as 2 MiB pages where the kernel can.
    Thp,
    /// Faulted in with 4 KiB pages, then promoted with MADV_COLLAPSE.
    ThpCollapse,
    /// MAP_HUGETLB with the given page size (2 MiB or 1 GiB).
    Hugetlb { page_size: u64 },
    /// Multi-size THP of this folio size; needs the per-size knob set to `always`.
    Mthp { size: u64 },
    /// A file on a tmpfs hugelab mounts with this `huge=` policy, mapped shared (root).
    Tmpfs { huge: TmpfsHuge },
    /// A file of the temporary directory's file system, in the page cache, mapped shared.
    PageCache,
}

impl Backing {
    /// The page (folio) size this backing asks for.
    pub fn page_size(self) -> u64 {
        match self {
            Backing::Base => 4096,
            Backing::Thp | Backing::ThpCollapse => TWO_MIB,
            Backing::Hugetlb { page_size } => page_size,
            Backing::Mthp { size } => size,
            Backing::Tmpfs {
                huge: TmpfsHuge::Never,
            } => 4096,
            Backing::Tmpfs { .. } | Backing::PageCache => TWO_MIB,
        }
    }
    pub fn is_hugetlb(self) -> bool {
        matches!(self, Backing::Hugetlb { .. })
    }
}

impl fmt::Display for Backing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Backing::Base => write!(f, "4k"),
            Backing::Thp => write!(f, "thp"),
            Backing::ThpCollapse => write!(f, "thp-collapse"),
            Backing::Hugetlb { page_size } => {
                write!(f, "hugetlb-{}", Bytes(page_size).to_string().to_lowercase())
            }
            Backing::Mthp { size } => write!(f, "mthp-{}", Bytes(size).to_string().to_lowercase()),
            Backing::PageCache => write!(f, "pagecache"),
            Backing::Tmpfs { huge } => write!(
                f,
                "tmpfs-{}",
                match huge {
                    TmpfsHuge::Never => "4k",
                    TmpfsHuge::Always => "huge",
                    TmpfsHuge::WithinSize => "within",
                    TmpfsHuge::Advise => "advise",
                }
            ),
        }
    }
}

impl From<Backing> for String {
    fn from(b: Backing) -> String {
        b.to_string()
    }
}

impl TryFrom<String> for Backing {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl FromStr for Backing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        let size = |x: &str| {
            x.parse::<Bytes>()
                .map(|b| b.0)
                .map_err(|e| format!("backing {s:?}: {e}"))
        };
        let b = match t.as_str() {
            "4k" | "base" => Backing::Base,
            "thp" => Backing::Thp,
            "thp-collapse" => Backing::ThpCollapse,
            "pagecache" => Backing::PageCache,
            "tmpfs-4k" => Backing::Tmpfs {
                huge: TmpfsHuge::Never,
            },
            "tmpfs-huge" => Backing::Tmpfs {
                huge: TmpfsHuge::Always,
            },
            "tmpfs-within" => Backing::Tmpfs {
                huge: TmpfsHuge::WithinSize,
            },
            "tmpfs-advise" => Backing::Tmpfs {
                huge: TmpfsHuge::Advise,
            },
            _ if t.starts_with("hugetlb-") => Backing::Hugetlb {
                page_size: size(&t["hugetlb-".len()..])?,
            },
            _ if t.starts_with("mthp-") => Backing::Mthp {
                size: size(&t["mthp-".len()..])?,
            },
            _ => {
                return Err(format!(
                    "unknown backing {s:?}; valid backings: {BACKING_NAMES}"
                ));
            }
        };
        match b {
            Backing::Hugetlb { page_size } if page_size != TWO_MIB && page_size != ONE_GIB => {
                Err(format!("backing {s:?}: hugetlb page size must be 2m or 1g"))
            }
            Backing::Mthp { size }
                if !size.is_power_of_two() || !(8192..=TWO_MIB).contains(&size) =>
            {
                Err(format!(
                    "backing {s:?}: mTHP sizes are powers of two from 8k to 2m (see `hugelab status` for this kernel's sizes)"
                ))
            }
            b => Ok(b),
        }
    }
}

/// A tmpfs `huge=` policy.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TmpfsHuge {
    Never,
    Always,
    WithinSize,
    /// Huge pages only where the mapping asked (MADV_HUGEPAGE).
    Advise,
}

impl TmpfsHuge {
    /// The mount option's value.
    pub fn option(self) -> &'static str {
        match self {
            TmpfsHuge::Never => "never",
            TmpfsHuge::Always => "always",
            TmpfsHuge::WithinSize => "within_size",
            TmpfsHuge::Advise => "advise",
        }
    }

    pub fn parse(v: &str) -> Option<TmpfsHuge> {
        [
            TmpfsHuge::Never,
            TmpfsHuge::Always,
            TmpfsHuge::WithinSize,
            TmpfsHuge::Advise,
        ]
        .into_iter()
        .find(|h| h.option() == v)
    }
}

/// The host pages behind the guest's RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QemuBacking {
    /// Anonymous memory with THP disabled for QEMU (PR_SET_THP_DISABLE): 4 KiB pages.
    #[serde(rename = "4k")]
    FourK,
    /// Anonymous memory; QEMU madvises guest RAM MADV_HUGEPAGE, so THP `madvise` suffices.
    Thp,
    /// A hugetlb memfd of 2 MiB pages.
    #[serde(rename = "hugetlb-2m")]
    Hugetlb2M,
    /// A hugetlb memfd of 1 GiB pages.
    #[serde(rename = "hugetlb-1g")]
    Hugetlb1G,
}

impl QemuBacking {
    pub const NAMES: [&'static str; 4] = ["4k", "thp", "hugetlb-2m", "hugetlb-1g"];

    pub fn parse(s: &str) -> Option<QemuBacking> {
        Some(match s {
            "4k" => QemuBacking::FourK,
            "thp" => QemuBacking::Thp,
            "hugetlb-2m" => QemuBacking::Hugetlb2M,
            "hugetlb-1g" => QemuBacking::Hugetlb1G,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            QemuBacking::FourK => "4k",
            QemuBacking::Thp => "thp",
            QemuBacking::Hugetlb2M => "hugetlb-2m",
            QemuBacking::Hugetlb1G => "hugetlb-1g",
        }
    }

    /// The hugetlb page size, for the hugetlb backings.
    pub fn hugetlb_page(self) -> Option<u64> {
        match self {
            QemuBacking::Hugetlb2M => Some(2 << 20),
            QemuBacking::Hugetlb1G => Some(1 << 30),
            _ => None,
        }
    }
}

/// An arm's QEMU configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QemuConfig {
    pub backing: QemuBacking,
    /// `prealloc=on` on the backend: QEMU touches all guest RAM before the guest starts.
    pub prealloc: bool,
}

impl QemuConfig {
    /// The backend options for guest RAM of `size` bytes.
    pub fn backend(&self, size: u64) -> String {
        let size = Bytes(size).to_string();
        let mut s = match self.backing {
            QemuBacking::FourK | QemuBacking::Thp => {
                format!("memory-backend-ram,id={BACKEND_ID},size={size}")
            }
            QemuBacking::Hugetlb2M | QemuBacking::Hugetlb1G => format!(
                "memory-backend-memfd,id={BACKEND_ID},size={size},hugetlb=on,hugetlbsize={}",
                Bytes(self.backing.hugetlb_page().unwrap_or(2 << 20))
            ),
        };
        if self.prealloc {
            s.push_str(",prealloc=on");
        }
        s
    }
}
