//! experiment: a trial's costs as metrics (`analyze::costs` names them), from what the trial
//! already gathered off the measuring path — the child's rusage and the sampler's peak for a
//! command, the server tree's memory and CPU read around its load for a server — and the
//! machine's memory state at the trial's start.

use crate::analyze::costs::{PEAK_MEM, SERVER_CPU, SERVER_HELD, SERVER_MEM, SYS_CPU, USER_CPU};
use crate::collect::sampler::MemorySamples;
use crate::probe::Root;
use crate::workload::child::TrialOutcome;

/// A command's costs: peak memory (the kernel's high-water mark of the largest process from
/// `wait4`, or the sampler's largest tree total if larger, plus the tree's hugetlb pages, plus
/// the pages of a pool the arm reserved that the workload left unused — memory nothing else
/// could have), user and system CPU time. `pools`: the arm's own pools as the trial started
/// (page size, pages). The child is started by vfork, so the kernel's mark starts at hugelab's
/// own (`own_hwm`, VmHWM): a mark no higher than that is hugelab's, and the sampler's peak
/// stands alone.
pub fn of_command(
    o: &TrialOutcome,
    mem: &MemorySamples,
    own_hwm: u64,
    pools: &[(u64, u64)],
) -> Vec<(String, f64)> {
    let kernel = if o.max_rss_bytes > own_hwm {
        o.max_rss_bytes + mem.peak_hugetlb
    } else {
        0
    };
    let reserved: u64 = pools.iter().map(|(size, pages)| size * pages).sum();
    let unused = reserved.saturating_sub(mem.peak_hugetlb);
    let measured = mem.peak_rss.max(kernel);
    let mut out = vec![
        (USER_CPU.into(), o.user_ns as f64 / 1e9),
        (SYS_CPU.into(), o.sys_ns as f64 / 1e9),
    ];
    // A child too short for the sampler and smaller than hugelab: its peak is not known.
    if measured > 0 {
        out.insert(0, (PEAK_MEM.into(), (measured + unused) as f64));
    }
    out
}

/// A server's costs: its memory after the load at its configuration (shared segments once and
/// whole, hugetlb committed to it: `GroupMemory::configured_bytes`), the memory it held (pages
/// touched, hugetlb committed), and its tree's CPU time during the load. No memory when the
/// server could not be read.
pub fn of_server(s: &super::service::Served) -> Vec<(String, f64)> {
    let mut out = vec![(SERVER_CPU.into(), s.cpu_ns as f64 / 1e9)];
    if let Some(m) = Some(&s.evidence.memory).filter(|m| m.processes > 0) {
        out.push((SERVER_MEM.into(), m.configured_bytes() as f64));
        out.push((SERVER_HELD.into(), m.cost_bytes() as f64));
    }
    out
}

/// hugelab's own high-water resident memory (VmHWM), 0 where it cannot be read.
pub fn own_hwm() -> u64 {
    crate::probe::process::Proc::system(std::process::id())
        .status()
        .ok()
        .and_then(|s| s.vm_hwm)
        .unwrap_or(0)
}

pub use crate::model::evidence::MachineAtStart;

/// Read it through `root` (None where /proc is not readable).
pub fn machine_at_start(root: &Root) -> Option<MachineAtStart> {
    let mem = crate::probe::meminfo::read(root).ok()??;
    // The DMA zone's blocks are kept for DMA: no ordinary allocation takes them.
    let zones: Vec<_> = crate::probe::buddyinfo::read(root)
        .ok()?
        .into_iter()
        .filter(|z| z.zone != "DMA")
        .collect();
    let f = crate::probe::buddyinfo::fragmentation(&zones, 9);
    Some(MachineAtStart {
        mem_available: mem.mem_available?,
        free_2m_blocks: f.blocks_available,
        unusable_2m: f.unusable_index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of 64 2 MiB pages reserved for the arm, 40 of them used at the peak: the 24 left
    /// unused are the arm's memory too; an arm without a pool of its own adds nothing.
    #[test]
    fn a_pool_the_arm_reserved_and_left_unused_is_its_memory() {
        const MIB: u64 = 1 << 20;
        let o = TrialOutcome {
            max_rss_bytes: 10 * MIB,
            ..Default::default()
        };
        let mem = MemorySamples {
            peak_rss: 12 * MIB,
            peak_hugetlb: 80 * MIB,
            ..Default::default()
        };
        let peak = |pools: &[(u64, u64)]| {
            of_command(&o, &mem, 0, pools)
                .into_iter()
                .find(|(k, _)| k == PEAK_MEM)
                .map(|(_, v)| v as u64)
        };
        // The kernel's mark plus the used hugetlb pages: 90 MiB.
        assert_eq!(peak(&[]), Some(90 * MIB));
        assert_eq!(peak(&[(2 * MIB, 64)]), Some((90 + 48) * MIB));
        // A pool smaller than what was used (pages taken before the trial) adds nothing.
        assert_eq!(peak(&[(2 * MIB, 8)]), Some(90 * MIB));
    }
}
