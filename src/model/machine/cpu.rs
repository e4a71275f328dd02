//! The CPU as read from /proc/cpuinfo and CPUID.

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cpu {
    pub vendor: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub model_name: Option<String>,
    /// `pse`: 2 MiB (or 4 MiB) pages.
    pub pse: bool,
    /// `pdpe1gb`: 1 GiB pages.
    pub pdpe1gb: bool,
    /// `hypervisor`: a guest of a hypervisor (a TLB miss walks guest and host tables).
    #[serde(default)]
    pub hypervisor: bool,
    pub logical_cpus: usize,
}

impl Cpu {
    /// Page sizes the MMU offers, in bytes (x86-64 terms; other architectures report 4K only here).
    pub fn page_sizes(&self, base: u64) -> Vec<u64> {
        let mut v = vec![base];
        if self.pse {
            v.push(2 << 20);
        }
        if self.pdpe1gb {
            v.push(1 << 30);
        }
        v
    }
}
