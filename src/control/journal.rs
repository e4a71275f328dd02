//! The write-ahead restore journal: original values of every changed setting, written and
//! synced before the change, removed once everything is back.

use super::Knob;
use crate::error::ControlError;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const JOURNAL_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    #[serde(flatten)]
    pub knob: Knob,
    pub original: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Journal {
    pub version: u32,
    pub owner_pid: u32,
    /// The owner's start time in clock ticks since boot (/proc/PID/stat field 22), so a
    /// recycled pid is not mistaken for the owner.
    pub owner_start: Option<u64>,
    pub created_unix: u64,
    pub changes: Vec<Change>,
}

/// `/run/hugelab/journal.json` as root; else `$XDG_RUNTIME_DIR/hugelab/journal.json`
/// (falling back to the temp dir). `HUGELAB_JOURNAL` overrides both.
pub fn default_journal_path() -> PathBuf {
    if let Some(p) = std::env::var_os("HUGELAB_JOURNAL") {
        return PathBuf::from(p);
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/hugelab/journal.json");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("hugelab/journal.json"),
        None => std::env::temp_dir().join(format!("hugelab-{uid}/journal.json")),
    }
}

/// When a process started (clock ticks after boot): with its pid, it names one process for good.
pub fn process_start_time(pid: u32) -> Option<u64> {
    crate::probe::process::stat(pid as i32).map(|s| s.start_ticks)
}

/// Whether the process `pid` that started at `start` (clock ticks after boot; `None`: not
/// recorded) still runs: a recycled pid with another start time does not.
pub fn process_alive(pid: u32, start: Option<u64>) -> bool {
    match process_start_time(pid) {
        None => false,
        Some(now) => start.is_none_or(|s| s == now),
    }
}

impl Journal {
    pub fn for_this_process() -> Journal {
        let pid = std::process::id();
        Journal {
            version: JOURNAL_VERSION,
            owner_pid: pid,
            owner_start: process_start_time(pid),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            changes: Vec::new(),
        }
    }

    /// Whether the owning process still runs (same pid and the same start time).
    pub fn owner_alive(&self) -> bool {
        process_alive(self.owner_pid, self.owner_start)
    }

    pub fn load(path: &Path) -> Result<Option<Journal>, ControlError> {
        let err = |message: String| ControlError::Journal {
            path: path.to_path_buf(),
            message,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(format!("cannot read: {e}"))),
        };
        let j: Journal = serde_json::from_str(&text).map_err(|e| {
            err(format!(
                "unreadable ({e}); inspect it, restore the values by hand and delete it"
            ))
        })?;
        if j.version != JOURNAL_VERSION {
            return Err(err(format!(
                "version {} is not supported (expected {JOURNAL_VERSION})",
                j.version
            )));
        }
        Ok(Some(j))
    }

    /// Write atomically: temp file, fsync, rename, fsync the directory.
    pub fn save(&self, path: &Path) -> Result<(), ControlError> {
        let err = |message: String| ControlError::Journal {
            path: path.to_path_buf(),
            message,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self).map_err(|e| err(e.to_string()))?;
        let mut f = std::fs::File::create(&tmp)
            .map_err(|e| err(format!("cannot create {}: {e}", tmp.display())))?;
        f.write_all(&text)
            .and_then(|_| f.sync_all())
            .map_err(|e| err(format!("cannot write: {e}")))?;
        std::fs::rename(&tmp, path).map_err(|e| err(format!("cannot rename into place: {e}")))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_liveness() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j/journal.json");
        let mut j = Journal::for_this_process();
        j.changes.push(Change {
            knob: Knob::HugetlbPages {
                size: 2 << 20,
                node: None,
            },
            original: "0".into(),
        });
        j.save(&p).unwrap();
        let back = Journal::load(&p).unwrap().unwrap();
        assert_eq!(back, j);
        assert!(back.owner_alive());
        let dead = Journal {
            owner_start: Some(1),
            ..back
        };
        assert!(
            !dead.owner_alive(),
            "a different start time means the pid was recycled"
        );
    }

    #[test]
    fn corrupt_journal_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.json");
        std::fs::write(&p, "{not json").unwrap();
        let e = Journal::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("journal.json") && e.contains("restore the values by hand"),
            "{e}"
        );
    }
}
