//! Per-trial noise evidence: what else the machine did while a trial ran. CPU steal (the host
//! ran another guest), CPU pressure stalls (PSI `cpu some`: something runnable waited), and
//! the CPU time of every other process (busy time minus the child's and hugelab's own).

pub use crate::model::trial::gathered::TrialNoise;

use crate::probe::Root;
use crate::probe::noise::NoiseReading;

/// Nanoseconds per USER_HZ tick of /proc/stat.
pub(crate) fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / if hz > 0 { hz as u64 } else { 100 }
}

/// CPU time (user + system) hugelab itself has used, all threads, ns.
pub fn self_cpu_ns() -> u64 {
    rusage_cpu_ns(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of hugelab's children reaped so far, ns.
pub fn children_cpu_ns() -> u64 {
    rusage_cpu_ns(libc::RUSAGE_CHILDREN)
}

fn rusage_cpu_ns(who: libc::c_int) -> u64 {
    // SAFETY: zeroed rusage is a valid out-parameter for getrusage.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF or RUSAGE_CHILDREN with a valid pointer.
    unsafe { libc::getrusage(who, &mut r) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// A reading taken just before a trial starts (outside its timed span).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    reading: Option<NoiseReading>,
    self_cpu_ns: u64,
}

pub fn mark(root: &Root) -> Mark {
    Mark {
        reading: crate::probe::noise::read(root).ok(),
        self_cpu_ns: self_cpu_ns(),
    }
}

/// The noise between `before` and now, given the child's own CPU time.
pub fn since(root: &Root, before: &Mark, child_cpu_ns: u64) -> Option<TrialNoise> {
    let after = crate::probe::noise::read(root).ok()?;
    let b = before.reading?;
    let t = tick_ns();
    let self_ns = self_cpu_ns().saturating_sub(before.self_cpu_ns);
    let busy = after.cpu.busy().saturating_sub(b.cpu.busy()) * t;
    Some(TrialNoise {
        steal_ns: after.cpu.steal.saturating_sub(b.cpu.steal) * t,
        psi_cpu_some_ns: match (b.psi_cpu_some_us, after.psi_cpu_some_us) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x) * 1000),
            _ => None,
        },
        other_cpu_ns: busy.saturating_sub(child_cpu_ns + self_ns),
        self_cpu_ns: self_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_processes_cpu_is_seen() {
        let root = Root::system();
        let m = mark(&root);
        // Another process burns CPU for ~300 ms; hugelab itself only waits.
        std::process::Command::new("sh")
            .args([
                "-c",
                "end=$(($(date +%s%N)+300000000)); while [ $(date +%s%N) -lt $end ]; do :; done",
            ])
            .status()
            .unwrap();
        let n = since(&root, &m, 0).unwrap();
        // The burner is neither the trial's child nor this process, so it is "other". (This
        // process's own CPU is not bounded here: other tests run on its threads meanwhile.)
        assert!(n.other_cpu_ns >= 100_000_000, "{n:?}");
    }

    #[test]
    fn hugelabs_own_cpu_is_counted_as_its_own() {
        let root = Root::system();
        let m = mark(&root);
        // This thread burns 300 ms of its own CPU time (however long that takes on a busy
        // machine): it must show as self.
        let thread_cpu = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid clock id and a pointer to a live timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let start = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - start < 300_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let n = since(&root, &m, 0).unwrap();
        assert!(n.self_cpu_ns >= 250_000_000, "{n:?}");
    }
}
