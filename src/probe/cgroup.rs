//! Memory and huge pages per cgroup, as the kernel accounts them.
//!
//! cgroup v2's `memory.stat` splits huge pages by kind (`anon_thp`, `file_thp`, `shmem_thp`)
//! and `memory.current` is the memory charged; cgroup v1's `memory.stat` has `rss_huge` (and
//! `total_rss_huge` for the group with its descendants) beside `memory.usage_in_bytes`.
//! hugetlb pages are charged to the hugetlb controller, of either version
//! (`hugetlb.2MB.current` in v2, `hugetlb.2MB.usage_in_bytes` in v1), not to memory. Every
//! figure here is hierarchical: a group's own and its descendants'.
//!
//! A host can split the controllers (memory on v1 beside a cgroup2 tree holding hugetlb, as
//! systemd's hybrid layout does), so a group is its path, read in the hierarchy of each
//! controller; systemd and container runtimes create the same path in every hierarchy.

pub use crate::model::machine::cgroup::{Group, Version};

pub mod labels;

use super::Root;
use crate::error::ProbeError;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the memory and hugetlb controllers are mounted (absolute paths on the live system).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hierarchies {
    pub memory: Option<(PathBuf, Version)>,
    pub hugetlb: Option<(PathBuf, Version)>,
    /// The memory controller's cgroup2 mount has `memory_hugetlb_accounting` (Linux 6.6+):
    /// hugetlb pages are then charged to memory too, already in `memory.current`.
    pub memory_counts_hugetlb: bool,
}

impl Hierarchies {
    /// Neither controller is mounted: there is nothing per cgroup to read.
    pub fn is_empty(&self) -> bool {
        self.memory.is_none() && self.hugetlb.is_none()
    }

    /// In words: `memory on v1 (/sys/fs/cgroup/memory), hugetlb on v2 (…)`.
    pub fn describe(&self) -> String {
        let one = |name: &str, h: &Option<(PathBuf, Version)>| match h {
            Some((p, v)) => format!("{name} on {} ({})", v.name(), p.display()),
            None => format!("{name}: not mounted"),
        };
        format!(
            "{}, {}",
            one("memory", &self.memory),
            one("hugetlb", &self.hugetlb)
        )
    }
}

/// The controllers' mounts from /proc/mounts (the first of each), a cgroup2 mount's
/// controllers from its `cgroup.controllers`.
pub fn hierarchies(root: &Root) -> Result<Hierarchies, ProbeError> {
    let mounts = root.read("/proc/mounts")?;
    let mut h = Hierarchies::default();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, dir, fstype, options, ..] = f[..] else {
            continue;
        };
        let dir = PathBuf::from(dir.replace("\\040", " "));
        let (has_memory, has_hugetlb, version) = match fstype {
            "cgroup" => {
                let o: Vec<&str> = options.split(',').collect();
                (o.contains(&"memory"), o.contains(&"hugetlb"), Version::V1)
            }
            "cgroup2" => {
                let c = root
                    .read_opt(dir.join("cgroup.controllers"))?
                    .unwrap_or_default();
                let c: Vec<&str> = c.split_whitespace().collect();
                (c.contains(&"memory"), c.contains(&"hugetlb"), Version::V2)
            }
            _ => continue,
        };
        if has_memory && h.memory.is_none() {
            h.memory = Some((dir.clone(), version));
            h.memory_counts_hugetlb = version == Version::V2
                && options.split(',').any(|o| o == "memory_hugetlb_accounting");
        }
        if has_hugetlb && h.hugetlb.is_none() {
            h.hugetlb = Some((dir, version));
        }
    }
    Ok(h)
}

/// `memory.stat`'s fields as a map (`key value` lines).
pub fn parse_stat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// A hugetlb controller file's page size: `2MB` → 2 MiB, `1GB`, `64KB`.
fn hugetlb_size(name: &str) -> Option<u64> {
    let (n, unit) = name.split_at(name.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "KB" => n << 10,
        "MB" => n << 20,
        "GB" => n << 30,
        _ => return None,
    })
}

/// The group at `path` (`/` or `/a/b`), read in each controller's hierarchy; `None` when no
/// hierarchy has it.
pub fn read(root: &Root, h: &Hierarchies, path: &str) -> Result<Option<Group>, ProbeError> {
    let rel = path.trim_start_matches('/');
    let mut g = Group {
        path: format!("/{rel}"),
        ..Default::default()
    };
    let mut found = false;
    if let Some((mount, v)) = &h.memory {
        let dir = mount.join(rel);
        if root.path(&dir).is_dir() {
            found = true;
            g.memory_from = Some(*v);
            g.memory_counts_hugetlb = h.memory_counts_hugetlb;
            let stat = parse_stat(&root.read_opt(dir.join("memory.stat"))?.unwrap_or_default());
            match v {
                Version::V2 => {
                    g.memory = root.read_u64(dir.join("memory.current"))?;
                    g.anon = stat.get("anon").copied();
                    g.anon_thp = stat.get("anon_thp").copied();
                    g.file_thp = stat.get("file_thp").copied();
                    g.shmem_thp = stat.get("shmem_thp").copied();
                }
                Version::V1 => {
                    g.memory = root.read_u64(dir.join("memory.usage_in_bytes"))?;
                    g.anon = stat.get("total_rss").copied();
                    g.anon_thp = stat.get("total_rss_huge").copied();
                }
            }
        }
    }
    if let Some((mount, v)) = &h.hugetlb {
        let dir = mount.join(rel);
        if root.path(&dir).is_dir() {
            found = true;
            g.hugetlb_from = Some(*v);
            let suffix = match v {
                Version::V2 => ".current",
                Version::V1 => ".usage_in_bytes",
            };
            for f in root.list_dir(&dir)? {
                let Some(size) = f
                    .strip_prefix("hugetlb.")
                    .and_then(|s| s.strip_suffix(suffix))
                    .filter(|s| !s.contains('.'))
                    .and_then(hugetlb_size)
                else {
                    continue;
                };
                if let Some(b) = root.read_u64(dir.join(&f))? {
                    g.hugetlb.insert(size, b);
                }
            }
        }
    }
    Ok(found.then_some(g))
}

/// Every group down to `depth` levels below the root (the root is depth 0), in either
/// controller's hierarchy, read; groups that vanish while being read are left out.
pub fn walk(root: &Root, h: &Hierarchies, depth: usize) -> Result<Vec<Group>, ProbeError> {
    let mut paths = std::collections::BTreeSet::from([String::new()]);
    for (mount, _) in [&h.memory, &h.hugetlb].into_iter().flatten() {
        let mut level = vec![String::new()];
        for _ in 0..depth {
            let mut next = Vec::new();
            for rel in &level {
                let dir = root.path(mount.join(rel));
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        let name = e.file_name().to_string_lossy().into_owned();
                        next.push(if rel.is_empty() {
                            name
                        } else {
                            format!("{rel}/{name}")
                        });
                    }
                }
            }
            paths.extend(next.iter().cloned());
            level = next;
        }
    }
    let mut out = Vec::new();
    for p in paths {
        match read(root, h, &p) {
            Ok(Some(g)) => out.push(g),
            Ok(None) => {}
            // A group removed between the listing and the read.
            Err(ProbeError::Io { source, .. }) if is_gone(&source) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn is_gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV)
}

/// The processes in the group at `path` and every group below it, from the memory hierarchy
/// (else the hugetlb one): each `cgroup.procs`.
pub fn procs(root: &Root, h: &Hierarchies, path: &str) -> Result<Vec<u32>, ProbeError> {
    let Some((mount, _)) = h.memory.as_ref().or(h.hugetlb.as_ref()) else {
        return Ok(Vec::new());
    };
    let mut pids = Vec::new();
    let mut stack = vec![mount.join(path.trim_start_matches('/'))];
    while let Some(dir) = stack.pop() {
        if let Some(t) = root.read_opt(dir.join("cgroup.procs"))? {
            pids.extend(t.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        if let Ok(rd) = std::fs::read_dir(root.path(&dir)) {
            stack.extend(
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| dir.join(e.file_name())),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

#[cfg(test)]
mod tests;
