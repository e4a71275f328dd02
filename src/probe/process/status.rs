//! /proc/PID/status: the fields that matter here (name, THP_enabled, VmRSS).

pub use crate::model::machine::process::ProcStatus;

use crate::error::ParseError;

pub fn parse_status(text: &str) -> Result<ProcStatus, ParseError> {
    let mut s = ProcStatus::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k {
            "Name" => s.name = v.to_string(),
            "THP_enabled" => s.thp_enabled = Some(v == "1"),
            "VmRSS" => {
                s.vm_rss = v
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|kb| kb * 1024)
            }
            "VmHWM" => {
                s.vm_hwm = v
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|kb| kb * 1024)
            }
            "HugetlbPages" => {
                s.hugetlb = v
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|kb| kb * 1024)
            }
            _ => {}
        }
    }
    if s.name.is_empty() {
        return Err(ParseError::new(1, "no Name: line"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn status_fields() {
        let s =
            parse_status("Name:\tjava\nVmRSS:\t  2048 kB\nVmHWM:\t  4096 kB\nTHP_enabled:\t0\n")
                .unwrap();
        assert_eq!(s.vm_hwm, Some(4096 * 1024));
        assert_eq!(
            (s.name.as_str(), s.thp_enabled, s.vm_rss),
            ("java", Some(false), Some(2 << 20))
        );
        assert!(parse_status("").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") { let _ = parse_status(&s); }
    }
}
