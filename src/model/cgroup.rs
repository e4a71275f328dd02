//! cgroups as `top --cgroups`, `inspect --cgroup` and the exporter show them: the kernel's own
//! accounting of a group's memory and huge pages, and what its path says (pod, container,
//! systemd unit).

use crate::model::machine::cgroup::Group;
use crate::model::machine::labels::{self, Labels};
use crate::model::trial::server::GroupMemory;

/// One cgroup: the kernel's figures, its labels, its huge-page bytes and share.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CgroupRow {
    #[serde(flatten)]
    pub group: Group,
    pub labels: Labels,
    /// Bytes on huge pages of every kind the kernel counted for it.
    pub huge_bytes: u64,
    /// Memory charged plus its hugetlb pages (charged to the hugetlb controller instead).
    pub total_bytes: u64,
    /// `huge_bytes` of `total_bytes`.
    pub share: Option<f64>,
    /// No other row of the same set lies below it: summing the leaves counts every byte once
    /// (the figures are hierarchical, a parent's holding its children's).
    #[serde(default)]
    pub leaf: bool,
}

/// Mark the rows no other row lies below (`leaf`), so that sums over them count no byte twice.
pub fn mark_leaves(rows: &mut [CgroupRow]) {
    let paths: Vec<String> = rows.iter().map(|r| r.group.path.clone()).collect();
    for r in rows.iter_mut() {
        let below = format!("{}/", r.group.path.trim_end_matches('/'));
        r.leaf = !paths.iter().any(|p| p.starts_with(&below));
    }
}

impl From<Group> for CgroupRow {
    fn from(group: Group) -> Self {
        CgroupRow {
            labels: labels::of(&group.path),
            huge_bytes: group.huge(),
            total_bytes: group.total(),
            share: group.share(),
            leaf: true,
            group,
        }
    }
}

/// `top --cgroups`: where the controllers are, and the groups.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CgroupTop {
    pub schema: &'static str,
    /// `memory on v1 (/sys/fs/cgroup/memory), hugetlb on v2 (…)`.
    pub hierarchies: String,
    /// How deep below the root the groups were read, and how many there were.
    pub depth: usize,
    pub groups_read: usize,
    pub rows: Vec<CgroupRow>,
}

/// `inspect --cgroup PATH`: the group as the kernel counts it, and its processes read as one
/// (their smaps; shared memory counted once), read right after it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CgroupInstance {
    pub cgroup: CgroupRow,
    /// The processes in it and every group below it.
    pub pids: Vec<u32>,
    pub memory: GroupMemory,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parent exported with its child is not a leaf; a sibling whose name extends another's
    /// (`/a` and `/ab`) is not below it.
    #[test]
    fn a_parent_exported_with_its_children_is_no_leaf() {
        let row = |p: &str| {
            CgroupRow::from(Group {
                path: p.into(),
                ..Default::default()
            })
        };
        let mut rows = vec![
            row("/kubepods.slice"),
            row("/kubepods.slice/pod-a"),
            row("/kube"),
        ];
        mark_leaves(&mut rows);
        let leaves: Vec<bool> = rows.iter().map(|r| r.leaf).collect();
        assert_eq!(leaves, [false, true, true]);
    }
}
