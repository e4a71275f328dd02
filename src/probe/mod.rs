//! Stage 1, probe: read-only views of /proc, /sys, CPUID and perf capability.
//!
//! Every parser is a pure function over `&str`; [`Root`] is the one place that opens files,
//! and it attaches the path to every error. Tests point a `Root` at a fake tree of captured
//! kernel files (`tests/fixtures/<kernel>/`).

pub mod buddyinfo;
pub mod cgroup;
pub mod cpu;
pub mod hugetlb;
pub mod kv;
pub mod meminfo;
pub mod mounts;
pub mod noise;
pub mod pmu;
pub mod process;
pub mod program;
pub mod status;
pub mod thp;
pub mod tlb;
pub mod tracefs;
pub mod user;

use crate::error::{ParseError, ProbeError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The filesystem root the probes read from: `/` on a live system, a fixture tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root(PathBuf);

impl Default for Root {
    fn default() -> Self {
        Root::system()
    }
}

impl Root {
    pub fn system() -> Self {
        Root(PathBuf::from("/"))
    }

    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root(dir.into())
    }

    pub fn is_system(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// The real path of an absolute kernel path such as `/proc/meminfo` under this root.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        self.0.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// Read a file; a missing file is an error.
    pub fn read(&self, abs: impl AsRef<Path>) -> Result<String, ProbeError> {
        self.read_opt(abs.as_ref())?.ok_or_else(|| ProbeError::Io {
            path: abs.as_ref().to_path_buf(),
            source: std::io::Error::from(ErrorKind::NotFound),
        })
    }

    /// Read a file that older kernels or other configurations may lack: absent is `None`.
    pub fn read_opt(&self, abs: impl AsRef<Path>) -> Result<Option<String>, ProbeError> {
        let abs = abs.as_ref();
        match std::fs::read_to_string(self.path(abs)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => Err(ProbeError::Permission {
                path: abs.to_path_buf(),
            }),
            Err(e) => Err(ProbeError::Io {
                path: abs.to_path_buf(),
                source: e,
            }),
        }
    }

    /// Read an optional file and parse it, attaching the path to a parse error.
    pub fn parse_opt<T>(
        &self,
        abs: impl AsRef<Path>,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<Option<T>, ProbeError> {
        let abs = abs.as_ref();
        match self.read_opt(abs)? {
            None => Ok(None),
            Some(text) => parse(&text).map(Some).map_err(|source| ProbeError::Parse {
                path: abs.to_path_buf(),
                source,
            }),
        }
    }

    /// Read an optional file holding one unsigned integer.
    pub fn read_u64(&self, abs: impl AsRef<Path>) -> Result<Option<u64>, ProbeError> {
        self.parse_opt(abs, kv::parse_u64)
    }

    /// Names of the entries of a directory, sorted; an absent directory has none.
    pub fn list_dir(&self, abs: impl AsRef<Path>) -> Result<Vec<String>, ProbeError> {
        let abs = abs.as_ref();
        let rd = match std::fs::read_dir(self.path(abs)) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(ProbeError::Io {
                    path: abs.to_path_buf(),
                    source: e,
                });
            }
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    pub fn exists(&self, abs: impl AsRef<Path>) -> bool {
        self.path(abs).exists()
    }
}

/// Parse `hugepages-2048kB` (sysfs directory names) into bytes.
pub fn parse_hugepages_dir(name: &str) -> Option<u64> {
    let kb: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_maps_absolute_paths() {
        let r = Root::new("/tmp/fake");
        assert_eq!(
            r.path("/proc/meminfo"),
            PathBuf::from("/tmp/fake/proc/meminfo")
        );
        assert_eq!(Root::system().path("/proc/x"), PathBuf::from("/proc/x"));
    }

    #[test]
    fn absent_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let r = Root::new(dir.path());
        assert!(r.read_opt("/proc/nothing").unwrap().is_none());
        assert!(r.read("/proc/nothing").is_err());
        assert!(r.list_dir("/sys/none").unwrap().is_empty());
    }

    #[test]
    fn parse_error_names_path_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/x"), "abc\n").unwrap();
        let r = Root::new(dir.path());
        let err = r.read_u64("/proc/x").unwrap_err().to_string();
        assert!(err.contains("/proc/x") && err.contains("line 1"), "{err}");
    }

    #[test]
    fn hugepages_dir_names() {
        assert_eq!(parse_hugepages_dir("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_hugepages_dir("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_hugepages_dir("hugepages-x"), None);
    }
}
