//! /proc/meminfo: the memory totals that matter for huge pages, in bytes.

pub use crate::model::machine::memory::Meminfo;

use crate::error::ParseError;
use std::collections::BTreeMap;

/// /proc/meminfo of `root`, or `None` where it is absent.
pub fn read(root: &crate::probe::Root) -> Result<Option<Meminfo>, crate::error::ProbeError> {
    root.parse_opt("/proc/meminfo", parse)
}

/// Parse `Name:   value kB` lines into a map of bytes (count fields such as HugePages_Total stay counts).
pub fn parse_raw(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, rest) = line.split_once(':').ok_or_else(|| {
            ParseError::new(i + 1, format!("expected `Name: value`, found {line:?}"))
        })?;
        let mut it = rest.split_whitespace();
        let v: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ParseError::new(i + 1, format!("value of {name} is not an integer")))?;
        let v = match it.next() {
            Some("kB") => v
                .checked_mul(1024)
                .ok_or_else(|| ParseError::new(i + 1, format!("{name} overflows")))?,
            None => v,
            Some(u) => {
                return Err(ParseError::new(
                    i + 1,
                    format!("unknown unit {u:?} for {name}"),
                ));
            }
        };
        out.insert(name.trim().to_string(), v);
    }
    Ok(out)
}

pub fn parse(text: &str) -> Result<Meminfo, ParseError> {
    let m = parse_raw(text)?;
    let g = |k: &str| m.get(k).copied();
    Ok(Meminfo {
        mem_total: g("MemTotal"),
        mem_free: g("MemFree"),
        mem_available: g("MemAvailable"),
        anon_huge_pages: g("AnonHugePages"),
        shmem_huge_pages: g("ShmemHugePages"),
        file_huge_pages: g("FileHugePages"),
        hugetlb: g("Hugetlb"),
        hugepagesize: g("Hugepagesize"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_fields_in_bytes() {
        let m = parse("MemTotal:       24684096 kB\nAnonHugePages:    2048 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n").unwrap();
        assert_eq!(m.mem_total, Some(24684096 * 1024));
        assert_eq!(m.anon_huge_pages, Some(2 << 20));
        assert_eq!(m.hugepagesize, Some(2 << 20));
        assert_eq!(m.file_huge_pages, None);
    }

    #[test]
    fn malformed_names_line() {
        let e = parse("MemTotal: 1 kB\nBogus line\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") { let _ = parse(&s); }
    }
}
