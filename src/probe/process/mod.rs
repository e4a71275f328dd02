//! Reading processes: [`Proc`], one process under a [`Root`](crate::probe::Root) — the one way
//! the rest of hugelab opens `/proc/PID/…` — and `all_pids`; the parsers of what it reads, each
//! tested from text:
//!
//! * `smaps` — mappings and their page-size fields, a mapping's kind, smaps_rollup;
//! * `status` — the /proc/PID/status fields that matter here;
//! * `stat` — a process's parent, group and CPU time, and process trees and groups.

mod smaps;
mod stat;
mod status;

pub use smaps::{Kind, Mapping, Rollup, is_hugetlb, kind, parse_rollup, parse_smaps};
pub use stat::{Stat, descendants, group_members, parse_stat, parse_stat_pgid, stat, tree};
pub use status::{ProcStatus, parse_status};

use crate::error::ParseError;

/// One process under a [`Root`](crate::probe::Root): the one way the rest of hugelab reads `/proc/PID/…` (the
/// parsers above are tested from text; this handle only opens the files).
#[derive(Debug, Clone)]
pub struct Proc {
    root: crate::probe::Root,
    pub pid: u32,
}

impl Proc {
    pub fn new(root: &crate::probe::Root, pid: u32) -> Proc {
        Proc {
            root: root.clone(),
            pid,
        }
    }

    /// A live process of this system.
    pub fn system(pid: u32) -> Proc {
        Proc::new(&crate::probe::Root::system(), pid)
    }

    fn file(&self, name: &str) -> String {
        format!("/proc/{}/{name}", self.pid)
    }

    /// The text of `/proc/PID/NAME`; a process that is gone is [`ProcError::Gone`], another
    /// user's process without root [`ProcError::Denied`].
    pub fn read(&self, name: &str) -> Result<String, ProcError> {
        let path = self.file(name);
        match self.root.read_opt(&path) {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err(ProcError::Gone { pid: self.pid }),
            Err(crate::error::ProbeError::Permission { .. }) => Err(ProcError::Denied {
                path,
                hint: denied_hint(),
            }),
            Err(e) => Err(ProcError::Other(e.to_string())),
        }
    }

    pub fn exists(&self) -> bool {
        self.root.path(format!("/proc/{}", self.pid)).exists()
    }

    pub fn status(&self) -> Result<ProcStatus, ProcError> {
        parse_status(&self.read("status")?).map_err(|e| self.malformed("status", e))
    }

    /// `/proc/PID/maps` (no page-table walk): the ranges, without the smaps fields.
    pub fn maps(&self) -> Result<Vec<Mapping>, ProcError> {
        parse_smaps(&self.read("maps")?).map_err(|e| self.malformed("maps", e))
    }

    /// `/proc/PID/smaps` (walks the page tables under the process's mmap lock).
    pub fn smaps(&self) -> Result<Vec<Mapping>, ProcError> {
        parse_smaps(&self.read("smaps")?).map_err(|e| self.malformed("smaps", e))
    }

    pub fn rollup(&self) -> Result<Rollup, ProcError> {
        Rollup::parse(&self.read("smaps_rollup")?).map_err(|e| self.malformed("smaps_rollup", e))
    }

    pub fn stat(&self) -> Option<Stat> {
        parse_stat(&self.read("stat").ok()?)
    }

    /// Running (not a zombie, not dead).
    pub fn alive(&self) -> bool {
        self.read("stat")
            .ok()
            .and_then(|s| {
                let state = s.rsplit_once(')')?.1.split_whitespace().next()?.to_string();
                Some(state != "Z" && state != "X")
            })
            .unwrap_or(false)
    }

    pub fn cmdline(&self) -> Vec<String> {
        self.read("cmdline")
            .unwrap_or_default()
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The command name, or `None` when the process is gone.
    pub fn comm(&self) -> Option<String> {
        Some(self.read("comm").ok()?.trim_end().to_string())
    }

    /// A file named relative to the process's working directory (a VMM's config file).
    pub fn read_in_cwd(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.path(self.file("cwd")).join(rel)).ok()
    }

    fn malformed(&self, name: &str, e: ParseError) -> ProcError {
        ProcError::Other(format!("malformed {}: {e}", self.file(name)))
    }
}

/// Why a process could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcError {
    #[error("process {pid} does not exist (or exited)")]
    Gone { pid: u32 },
    #[error("{path}: permission denied ({hint})")]
    Denied { path: String, hint: String },
    #[error("{0}")]
    Other(String),
}

/// Why reading another process's memory maps was refused, in words that fit the user: without
/// root, the fix is root; as root, something above root refused it (a container's namespaces or
/// /proc mount, an LSM such as SELinux or AppArmor, Yama's ptrace_scope).
pub fn denied_hint() -> String {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return "another user's process: run as root".into();
    }
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .map(|v| v.trim().to_string());
    match yama.as_deref() {
        Some("3") => "denied to root by Yama (kernel.yama.ptrace_scope = 3: no process may read another's memory maps until reboot)".into(),
        Some(n) => format!(
            "denied to root: by a container (a process outside this one's namespaces, or a restricted /proc), an LSM (SELinux, AppArmor) or ptrace rules (kernel.yama.ptrace_scope = {n}); run where the process is visible, or check the LSM's audit log"
        ),
        None => "denied to root: by a container (a process outside this one's namespaces, or a restricted /proc) or an LSM (SELinux, AppArmor); run where the process is visible, or check the LSM's audit log".into(),
    }
}

/// Every process id under `root`'s /proc, ascending.
pub fn all_pids(root: &crate::probe::Root) -> Vec<u32> {
    let mut v: Vec<u32> = root
        .list_dir("/proc")
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// A process's command name (/proc/PID/comm), or `None` when it is gone.
pub fn comm(pid: u32) -> Option<String> {
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()?
            .trim_end()
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_denial_is_explained_for_the_user_who_got_it() {
        let hint = super::denied_hint();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root is never told to run as root.
            assert!(hint.starts_with("denied to root"), "{hint}");
            assert!(!hint.contains("run as root"), "{hint}");
        } else {
            assert_eq!(hint, "another user's process: run as root");
        }
    }
}
