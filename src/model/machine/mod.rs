//! The machine as the probes read it, stored in runs and in `status --json`: the types are
//! the record's; reading them is `probe`'s.

pub mod cgroup;
pub mod cpu;
pub mod hugetlb;
pub mod labels;
pub mod memory;
pub mod pmu;
pub mod process;
pub mod status;
pub mod thp;
pub mod tlb;
