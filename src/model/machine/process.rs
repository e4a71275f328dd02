//! A process as read: its /proc status, the kinds of its mappings and whom it runs as.

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

/// Fields of /proc/PID/status that matter here.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcStatus {
    pub name: String,
    /// `THP_enabled`: false after PR_SET_THP_DISABLE. Since Linux 5.0.
    pub thp_enabled: Option<bool>,
    /// Kernel threads have no VmRSS line.
    pub vm_rss: Option<u64>,
    /// `HugetlbPages`: hugetlb memory mapped by the process, bytes (not in VmRSS). Since 4.4.
    pub hugetlb: Option<u64>,
    /// `VmHWM`: the largest VmRSS the process has had, bytes.
    #[serde(default)]
    pub vm_hwm: Option<u64>,
}

/// A user's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserIds {
    pub uid: u32,
    pub gid: u32,
}
