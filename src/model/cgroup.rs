//! cgroups as `top --cgroups`, `inspect --cgroup` and the exporter show them: the kernel's own
//! accounting of a group's memory and huge pages, and what its path says (pod, container,
//! systemd unit).

use crate::collect::server::GroupMemory;
use crate::probe::cgroup::Group;
use crate::probe::cgroup::labels::{self, Labels};

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
}

impl From<Group> for CgroupRow {
    fn from(group: Group) -> Self {
        CgroupRow {
            labels: labels::of(&group.path),
            huge_bytes: group.huge(),
            total_bytes: group.total(),
            share: group.share(),
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
