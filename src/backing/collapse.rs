//! The one path that promotes another process's anonymous memory to huge pages:
//! process_madvise(MADV_COLLAPSE) on its eligible mappings (used by `collapse` and by the
//! `collapse=after:` arm of `run`).

use crate::probe::process::Mapping;
use std::collections::BTreeMap;

const TWO_MIB: u64 = 2 << 20;

/// MADV_COLLAPSE can promote this mapping: private anonymous memory (or the brk heap),
/// writable, not hugetlb, holding at least one aligned 2 MiB range, with something resident.
pub fn eligible(m: &Mapping) -> bool {
    (m.path.is_empty() || m.path == "[heap]")
        && m.perms.starts_with("rw")
        && m.perms.ends_with('p')
        && m.field("KernelPageSize") <= 4096
        && m.start.next_multiple_of(TWO_MIB) + TWO_MIB <= m.end
        && m.field("Rss") > 0
}

/// What an errno from MADV_COLLAPSE means for this mapping.
pub fn explain_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EINVAL) => "EINVAL: not collapsible — MADV_NOHUGEPAGE on the range, THP disabled for the process (prctl), or not anonymous/eligible memory".into(),
        Some(libc::EAGAIN) => "EAGAIN: pages were busy (locked or under migration); try again".into(),
        Some(libc::ENOMEM) => "ENOMEM: no free 2 MiB page could be found, even after compaction (memory fragmented)".into(),
        Some(libc::EPERM) | Some(libc::EACCES) => "EPERM: no permission to advise this process (same user with ptrace access, or root)".into(),
        Some(libc::ESRCH) => "ESRCH: the process exited".into(),
        Some(libc::ENOSYS) => "ENOSYS: process_madvise is not supported by this kernel (needs Linux 5.10, MADV_COLLAPSE 6.1)".into(),
        _ => format!("{e}"),
    }
}

/// Collapse [start, end) of the process behind `pidfd`.
pub fn collapse_range(
    pidfd: &std::os::fd::OwnedFd,
    start: u64,
    end: u64,
) -> Result<u64, std::io::Error> {
    crate::sys::process_madvise(pidfd, start, end - start, crate::sys::MADV_COLLAPSE)
}

/// What collapsing every eligible mapping of one process did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PidCollapse {
    pub pid: i32,
    pub mappings: usize,
    pub bytes: u64,
    /// Explained error → how many mappings failed with it.
    pub errors: BTreeMap<String, u32>,
    /// Why nothing could be tried (the process exited, smaps unreadable, no pidfd).
    pub skipped: Option<String>,
}

impl PidCollapse {
    pub fn summary(&self) -> String {
        if let Some(s) = &self.skipped {
            return format!("pid {}: {s}", self.pid);
        }
        let errs: Vec<String> = self
            .errors
            .iter()
            .map(|(e, n)| format!("{n}× {e}"))
            .collect();
        format!(
            "collapsed {} mappings ({} MiB){}",
            self.mappings,
            self.bytes >> 20,
            if errs.is_empty() {
                String::new()
            } else {
                format!("; failed: {}", errs.join(", "))
            }
        )
    }
}

/// MADV_COLLAPSE every [`eligible`] mapping of `pid`.
pub fn collapse_pid(pid: i32) -> PidCollapse {
    let mut out = PidCollapse {
        pid,
        ..Default::default()
    };
    let maps: Vec<Mapping> = match crate::probe::process::Proc::system(pid as u32).smaps() {
        Ok(m) => m,
        Err(crate::probe::process::ProcError::Gone { .. }) => {
            out.skipped = Some("exited before the collapse".into());
            return out;
        }
        Err(e) => {
            out.skipped = Some(format!("unreadable smaps: {e}"));
            return out;
        }
    };
    let pidfd = match crate::sys::pidfd_open(pid as u32) {
        Ok(f) => f,
        Err(e) => {
            out.skipped = Some(format!("pidfd_open failed: {}", explain_error(&e)));
            return out;
        }
    };
    for m in maps.iter().filter(|m| eligible(m)) {
        match collapse_range(&pidfd, m.start, m.end) {
            Ok(_) => {
                out.mappings += 1;
                out.bytes += m.size();
            }
            Err(e) => *out.errors.entry(explain_error(&e)).or_insert(0) += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::process::parse_smaps;

    #[test]
    fn eligibility() {
        let m = |head: &str, kps: u64| {
            parse_smaps(&format!(
                "{head}\nSize: 8192 kB\nKernelPageSize: {kps} kB\nRss: 8 kB\n"
            ))
            .unwrap()
            .remove(0)
        };
        assert!(eligible(&m(
            "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 ",
            4
        )));
        assert!(eligible(&m(
            "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 [heap]",
            4
        )));
        // shared, read-only, file-backed, hugetlb, or too small for an aligned 2 MiB range
        assert!(!eligible(&m(
            "7f0000000000-7f0000800000 rw-s 00000000 00:00 0 ",
            4
        )));
        assert!(!eligible(&m(
            "7f0000000000-7f0000800000 r--p 00000000 00:00 0 ",
            4
        )));
        assert!(!eligible(&m(
            "7f0000000000-7f0000800000 rw-p 00000000 fd:00 7 /usr/lib/x.so",
            4
        )));
        assert!(!eligible(&m(
            "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 ",
            2048
        )));
        assert!(!eligible(&m(
            "7f0000001000-7f0000201000 rw-p 00000000 00:00 0 ",
            4
        )));
    }
}
