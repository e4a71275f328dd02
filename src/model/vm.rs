//! What `inspect` and `run` say about a virtual machine's guest memory and the host it runs on
//! (`analyze::vm` reads them from the hypervisor's command line and the guest's mappings).

use crate::model::arm::backing::QemuBacking;

/// Host advice for the backing a run measured best.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VmAdvice {
    /// The arm measured better than the baseline, if one was.
    pub arm: Option<String>,
    /// Its measured effect, or that no arm was measurably better.
    pub because: String,
    pub advice: Option<HostAdvice>,
}

/// Host configuration that backs a VM of `size` bytes with `backing`, on `nodes` NUMA nodes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostAdvice {
    pub backing: QemuBacking,
    pub size: u64,
    /// hugetlb pages the VM needs (per node when the guest RAM is split across nodes).
    pub pages: Option<u64>,
    pub libvirt: String,
    pub qemu: String,
    /// Kernel command line for a boot-time pool (1 GiB pages are only reliable at boot).
    pub kernel_cmdline: Option<String>,
    /// Commands that size the pool at run time.
    pub runtime: Vec<String>,
    pub notes: Vec<String>,
}

/// Resident bytes of one mapping by page size, and the reasons it is not on huge pages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub resident: u64,
    pub pages: Vec<PageShare>,
    pub reasons: Vec<String>,
}

/// Bytes resident on one page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageShare {
    pub page_size: u64,
    /// hugetlb pages (rather than THP/mTHP folios of the same size).
    pub hugetlb: bool,
    pub bytes: u64,
}

/// One backend of a VM's guest RAM as found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuestBackend {
    #[serde(flatten)]
    pub declared: Declared,
    /// The mapping holding it, when found.
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub resident: u64,
    pub pages: Vec<PageShare>,
}

/// A VM's guest RAM: how much is resident, on which page sizes, and why not huge.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuestRam {
    pub hypervisor: Hypervisor,
    /// Declared guest RAM (or, when undeclared, the size of the mappings found).
    pub size: u64,
    pub declared: bool,
    pub backends: Vec<GuestBackend>,
    pub resident: u64,
    /// Resident bytes by page size, largest page first.
    pub pages: Vec<PageShare>,
    /// Share of the guest RAM resident on pages larger than 4 KiB.
    pub huge_share: f64,
    /// "guest RAM 3G: 100% on 1 GiB hugetlb pages".
    pub summary: String,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hypervisor {
    Qemu,
    Firecracker,
    CloudHypervisor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Anonymous private memory (QEMU's default RAM, memory-backend-ram).
    Ram,
    /// memory-backend-memfd (shmem, or hugetlb with hugetlb=on).
    Memfd,
    /// memory-backend-file or `-mem-path`: a file, usually on hugetlbfs.
    File,
    /// Guest RAM found by size (the command line does not declare it).
    Undeclared,
}

/// One guest-RAM backend as the command line declares it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Declared {
    pub id: String,
    pub kind: BackendKind,
    pub size: u64,
    /// hugetlbsize= (memfd) or hugepage_size= (cloud-hypervisor).
    pub hugetlb_page: Option<u64>,
    /// memfd hugetlb=on / cloud-hypervisor hugepages=on.
    pub hugetlb: bool,
    pub path: Option<String>,
    pub prealloc: bool,
}

impl Hypervisor {
    pub fn name(self) -> &'static str {
        match self {
            Hypervisor::Qemu => "QEMU",
            Hypervisor::Firecracker => "Firecracker",
            Hypervisor::CloudHypervisor => "cloud-hypervisor",
        }
    }
}

impl PageShare {
    pub fn label(&self) -> String {
        let (n, unit) = match self.page_size {
            s if s >= 1 << 30 => (s >> 30, "GiB"),
            s if s >= 1 << 20 => (s >> 20, "MiB"),
            s => (s >> 10, "KiB"),
        };
        let kind = match (self.hugetlb, self.page_size) {
            (true, _) => " hugetlb",
            (false, 4096) => "",
            (false, s) if s == 2 << 20 => " THP",
            _ => " mTHP",
        };
        format!("{n} {unit}{kind}")
    }
}
