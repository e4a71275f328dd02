//! /proc/PID/smaps: one [`Mapping`] per VMA with its size fields in bytes, the kind of memory it
//! is, and the smaps_rollup totals ([`Rollup`]) that a cheap read gives.

pub use crate::model::machine::process::Kind;

use crate::error::ParseError;
use std::collections::BTreeMap;

/// One VMA from /proc/PID/smaps. Size fields are bytes; counts (THPeligible) stay counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub offset: u64,
    pub path: String,
    pub fields: BTreeMap<String, u64>,
    /// VmFlags two-letter codes (`hg`, `nh`, `ht`, …). Since Linux 3.8.
    pub vm_flags: Vec<String>,
}

impl Mapping {
    pub fn field(&self, name: &str) -> u64 {
        self.fields.get(name).copied().unwrap_or(0)
    }
    pub fn size(&self) -> u64 {
        self.end - self.start
    }
    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }
    pub fn has_flag(&self, flag: &str) -> bool {
        self.vm_flags.iter().any(|f| f == flag)
    }
}

fn parse_header(line: &str) -> Option<Mapping> {
    let mut it = line.splitn(6, char::is_whitespace);
    let range = it.next()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    if end < start {
        return None;
    }
    let perms = it.next()?.to_string();
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let _dev = it.next()?;
    let _inode = it.next()?;
    let path = it.next().unwrap_or("").trim().to_string();
    Some(Mapping {
        start,
        end,
        perms,
        offset,
        path,
        ..Mapping::default()
    })
}

/// Parse /proc/PID/smaps.
pub fn parse_smaps(text: &str) -> Result<Vec<Mapping>, ParseError> {
    let mut maps: Vec<Mapping> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        if let Some((key, rest)) = line.split_once(':')
            && !key.contains(' ')
            && !key.contains('-')
        {
            {
                let cur = maps.last_mut().ok_or_else(|| {
                    ParseError::new(i + 1, "field before the first mapping header")
                })?;
                if key == "VmFlags" {
                    cur.vm_flags = rest.split_whitespace().map(str::to_string).collect();
                    continue;
                }
                let mut w = rest.split_whitespace();
                let Some(v) = w.next().and_then(|v| v.parse::<u64>().ok()) else {
                    continue; // e.g. ProtectionKey on some kernels, or non-numeric extensions
                };
                let v = if w.next() == Some("kB") {
                    v.saturating_mul(1024)
                } else {
                    v
                };
                cur.fields.insert(key.to_string(), v);
                continue;
            }
        }
        let m = parse_header(line).ok_or_else(|| {
            ParseError::new(i + 1, format!("expected a mapping header, found {line:?}"))
        })?;
        maps.push(m);
    }
    Ok(maps)
}

pub fn is_hugetlb(m: &Mapping) -> bool {
    m.has_flag("ht")
        || m.field("KernelPageSize") > 4096
        || m.field("Private_Hugetlb") + m.field("Shared_Hugetlb") > 0
}

pub fn kind(m: &Mapping) -> Kind {
    let p = m.path.as_str();
    if is_hugetlb(m) {
        Kind::Hugetlb
    } else if p == "[heap]" {
        Kind::Heap
    } else if p.starts_with("[stack") {
        Kind::Stack
    } else if p.starts_with('[') {
        Kind::Special
    } else if p.starts_with("/dev/shm")
        || p.starts_with("/memfd:")
        || p.starts_with("/SYSV")
        || (m.perms.ends_with('s') && p.is_empty())
        || p == "/dev/zero (deleted)"
    {
        Kind::SharedMemory
    } else if p.is_empty() {
        Kind::Anonymous
    } else {
        Kind::File
    }
}

/// `key value kB` lines of /proc/PID/smaps_rollup (after its header line), bytes.
pub fn parse_rollup(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    crate::probe::meminfo::parse_raw(&body)
}

/// The huge-page view of /proc/PID/smaps_rollup, bytes: the one summation of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rollup {
    pub rss: u64,
    pub anon_huge: u64,
    pub shmem_pmd: u64,
    pub file_pmd: u64,
    /// Private_Hugetlb + Shared_Hugetlb (not part of Rss).
    pub hugetlb: u64,
    /// Proportional set size: each page divided among the processes mapping it, so the sum over
    /// processes counts every page once.
    pub pss: u64,
}

impl Rollup {
    pub fn parse(text: &str) -> Result<Rollup, ParseError> {
        let m = parse_rollup(text)?;
        let g = |k: &str| m.get(k).copied().unwrap_or(0);
        Ok(Rollup {
            rss: g("Rss"),
            anon_huge: g("AnonHugePages"),
            shmem_pmd: g("ShmemPmdMapped"),
            file_pmd: g("FilePmdMapped"),
            hugetlb: g("Private_Hugetlb") + g("Shared_Hugetlb"),
            pss: g("Pss"),
        })
    }

    /// Resident bytes: Rss plus hugetlb.
    pub fn resident(&self) -> u64 {
        self.rss + self.hugetlb
    }

    /// Bytes on PMD-mapped THP or hugetlb pages (mTHP is not visible here).
    pub fn huge(&self) -> u64 {
        self.anon_huge + self.shmem_pmd + self.file_pmd + self.hugetlb
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \nSize:            1048576 kB\nKernelPageSize:        4 kB\nRss:              1048576 kB\nAnonHugePages:   1046528 kB\nPrivate_Hugetlb:       0 kB\nTHPeligible:    1\nVmFlags: rd wr mr mw me ac hg\n55d000000000-55d000001000 r--p 00000000 fd:00 1234   /usr/bin/cat\nSize:                  4 kB\n";

    #[test]
    fn parses_mappings() {
        let m = parse_smaps(SAMPLE).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].size(), 1 << 30);
        assert_eq!(m[0].field("AnonHugePages"), 1046528 * 1024);
        assert_eq!(m[0].field("THPeligible"), 1);
        assert!(m[0].has_flag("hg") && !m[0].has_flag("nh"));
        assert_eq!(m[1].path, "/usr/bin/cat");
    }

    #[test]
    fn malformed_header() {
        assert_eq!(parse_smaps("zzz\n").unwrap_err().line, 1);
        assert!(parse_smaps("Size: 4 kB\n").is_err());
    }

    #[test]
    fn rollup_fields() {
        let r = parse_rollup(
            "00400000-7fff rw-p 00000000 00:00 0 [rollup]\nRss: 8 kB\nAnonHugePages: 0 kB\n",
        )
        .unwrap();
        assert_eq!(r["Rss"], 8192);
        let r =
            Rollup::parse("h\nRss: 8 kB\nAnonHugePages: 4 kB\nPrivate_Hugetlb: 2048 kB\n").unwrap();
        assert_eq!(
            (r.resident(), r.huge()),
            (8192 + (2 << 20), 4096 + (2 << 20))
        );
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") { let _ = parse_smaps(&s); let _ = parse_rollup(&s); }
    }
}
