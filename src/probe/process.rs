//! Per-process memory views: /proc/PID/smaps mappings and their page-size fields.

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

/// What a mapping is, from its path, permissions and page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Heap,
    Stack,
    Anonymous,
    File,
    SharedMemory,
    Hugetlb,
    JavaHeap,
    /// A VM's guest RAM in its hypervisor process (see `analyze::vm`).
    GuestRam,
    Special,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Heap => "heap",
            Kind::Stack => "stack",
            Kind::Anonymous => "anon",
            Kind::File => "file",
            Kind::SharedMemory => "shm",
            Kind::Hugetlb => "hugetlb",
            Kind::JavaHeap => "java-heap",
            Kind::GuestRam => "guest-ram",
            Kind::Special => "special",
        }
    }
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

/// Fields of /proc/PID/status that matter here.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcStatus {
    pub name: String,
    /// `THP_enabled`: false after PR_SET_THP_DISABLE. Since Linux 5.0.
    pub thp_enabled: Option<bool>,
    /// Kernel threads have no VmRSS line.
    pub vm_rss: Option<u64>,
}

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
            _ => {}
        }
    }
    if s.name.is_empty() {
        return Err(ParseError::new(1, "no Name: line"));
    }
    Ok(s)
}

/// The process group id in a /proc/PID/stat text (the field after the state).
pub fn parse_stat_pgid(text: &str) -> Option<i32> {
    stat_fields(text)?.get(2)?.parse().ok()
}

/// The fields after the command name of a /proc/PID/stat text (field 3, the state, first).
fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let i = text.rfind(')')?;
    Some(text[i + 1..].split_whitespace().collect())
}

/// What /proc/PID/stat says about a process's place and its CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub ppid: i32,
    pub pgid: i32,
    /// utime + stime, in clock ticks (USER_HZ).
    pub cpu_ticks: u64,
    /// cutime + cstime: children it has waited for (a server's exited workers), ticks.
    pub reaped_children_ticks: u64,
    /// Start time after boot, in clock ticks: with the pid, it names one process for good.
    pub start_ticks: u64,
}

pub fn parse_stat(text: &str) -> Option<Stat> {
    let f = stat_fields(text)?;
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(Stat {
        ppid: f.get(1)?.parse().ok()?,
        pgid: f.get(2)?.parse().ok()?,
        cpu_ticks: n(11)? + n(12)?,
        reaped_children_ticks: n(13)? + n(14)?,
        start_ticks: n(19)?,
    })
}

/// /proc/PID/stat of a live process.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `pid` and every live descendant of it (a server's forked workers, however they regrouped:
/// PostgreSQL's backends call setsid), parents first.
pub fn tree(pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![pid];
    };
    let parents: Vec<(i32, i32)> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((p, stat(p)?.ppid)))
        .collect();
    descendants(pid, &parents)
}

/// `root` and its descendants in a (pid, ppid) list, parents first.
pub fn descendants(root: i32, parents: &[(i32, i32)]) -> Vec<i32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// The live processes in process group `pgid` (a child of `run` and what it started).
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![pgid];
    };
    let mut out: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_pgid(&s))
                == Some(pgid)
        })
        .collect();
    if out.is_empty() {
        out.push(pgid);
    }
    out
}

/// `key value kB` lines of /proc/PID/smaps_rollup (after its header line), bytes.
pub fn parse_rollup(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    crate::probe::meminfo::parse_raw(&body)
}

/// A program as exec would find it: a path containing `/`, or the first match in PATH.
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = std::path::PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| executable(p))
}

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
            Err(crate::error::ProbeError::Permission { .. }) => Err(ProcError::Denied { path }),
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
    #[error("{path}: permission denied (another user's process: run as root)")]
    Denied { path: String },
    #[error("{0}")]
    Other(String),
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

/// The huge-page view of /proc/PID/smaps_rollup, bytes: the one summation of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rollup {
    pub rss: u64,
    pub anon_huge: u64,
    pub shmem_pmd: u64,
    pub file_pmd: u64,
    /// Private_Hugetlb + Shared_Hugetlb (not part of Rss).
    pub hugetlb: u64,
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
    fn stat_fields_and_a_process_tree() {
        // A command name with spaces and parentheses, as /proc prints it.
        let t = "4242 (postgres: io (x)) S 4200 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(t),
            Some(Stat {
                ppid: 4200,
                pgid: 4242,
                cpu_ticks: 175,
                reaped_children_ticks: 0,
                start_ticks: 98765
            })
        );
        assert_eq!(parse_stat_pgid(t), Some(4242));
        assert_eq!(parse_stat("1 (x) S"), None);
        // 10 → 11, 12; 12 → 13; 20 is not in the tree.
        let parents = [(11, 10), (12, 10), (13, 12), (20, 1), (10, 1)];
        assert_eq!(descendants(10, &parents), vec![10, 11, 12, 13]);
        let own = std::process::id() as i32;
        assert_eq!(tree(own)[0], own);
        assert!(stat(own).is_some_and(|s| s.ppid > 0));
    }

    #[test]
    fn malformed_header() {
        assert_eq!(parse_smaps("zzz\n").unwrap_err().line, 1);
        assert!(parse_smaps("Size: 4 kB\n").is_err());
    }

    #[test]
    fn status_fields() {
        let s = parse_status("Name:\tjava\nVmRSS:\t  2048 kB\nTHP_enabled:\t0\n").unwrap();
        assert_eq!(
            (s.name.as_str(), s.thp_enabled, s.vm_rss),
            ("java", Some(false), Some(2 << 20))
        );
        assert!(parse_status("").is_err());
        let r = parse_rollup(
            "00400000-7fff rw-p 00000000 00:00 0 [rollup]\nRss: 8 kB\nAnonHugePages: 0 kB\n",
        )
        .unwrap();
        assert_eq!(r["Rss"], 8192);
    }

    #[test]
    fn stat_pgid() {
        assert_eq!(parse_stat_pgid("42 (a) b) S 1 42 42 0 -1"), Some(42));
        assert_eq!(parse_stat_pgid("42 (a"), None);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") { let _ = parse_smaps(&s); let _ = parse_status(&s); let _ = parse_rollup(&s); }
    }
}
