//! CPU identity and the page sizes the MMU supports, from /proc/cpuinfo; kernel release and
//! host name.

pub use crate::model::machine::cpu::Cpu;

use super::Root;
use crate::error::{ParseError, ProbeError};

/// Parse /proc/cpuinfo; the first processor's identity and flags stand for all.
pub fn parse(text: &str) -> Result<Cpu, ParseError> {
    let mut cpu = Cpu::default();
    let mut seen_first = false;
    for (i, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once(':') else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(ParseError::new(
                i + 1,
                format!("expected `key : value`, found {line:?}"),
            ));
        };
        let (k, v) = (k.trim(), v.trim());
        if k == "processor" {
            cpu.logical_cpus += 1;
            if cpu.logical_cpus > 1 {
                seen_first = true;
            }
            continue;
        }
        if seen_first {
            continue;
        }
        match k {
            "vendor_id" => cpu.vendor = Some(v.to_string()),
            "cpu family" => cpu.family = v.parse().ok(),
            "model" => cpu.model = v.parse().ok(),
            "model name" => cpu.model_name = Some(v.to_string()),
            "flags" => {
                cpu.pse = v.split_whitespace().any(|f| f == "pse");
                cpu.pdpe1gb = v.split_whitespace().any(|f| f == "pdpe1gb");
                cpu.hypervisor = v.split_whitespace().any(|f| f == "hypervisor");
            }
            _ => {}
        }
    }
    Ok(cpu)
}

pub fn read(root: &Root) -> Result<Cpu, ProbeError> {
    Ok(root.parse_opt("/proc/cpuinfo", parse)?.unwrap_or_default())
}

pub fn kernel_release(root: &Root) -> Result<Option<String>, ProbeError> {
    Ok(root
        .read_opt("/proc/sys/kernel/osrelease")?
        .map(|s| s.trim().to_string()))
}

/// The host's name (/proc/sys/kernel/hostname), stored with each run.
pub fn hostname(root: &Root) -> Option<String> {
    root.read_opt("/proc/sys/kernel/hostname")
        .ok()
        .flatten()
        .map(|s| s.trim().to_string())
}

/// The base page size of this process's kernel (sysconf).
pub fn base_page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

/// The CPUs this process may run on (its affinity mask: a cpuset or `taskset` narrows it), in
/// ascending order; CPU ids need not start at 0 or be contiguous.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is the empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: this thread's mask into a valid set of the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: c < CPU_SETSIZE.
        .filter(|c| unsafe { libc::CPU_ISSET(*c, &set) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn flags_and_identity() {
        let c = parse("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nflags\t\t: fpu pse pdpe1gb\n\nprocessor\t: 1\nvendor_id\t: Other\n").unwrap();
        assert_eq!(c.vendor.as_deref(), Some("GenuineIntel"));
        assert_eq!(c.model, Some(85));
        assert!(c.pse && c.pdpe1gb);
        assert_eq!(c.logical_cpus, 2);
        assert_eq!(c.page_sizes(4096), vec![4096, 2 << 20, 1 << 30]);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") { let _ = parse(&s); }
    }
}
