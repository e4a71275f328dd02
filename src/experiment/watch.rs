//! `watch=<pid|comm>` arms: another process (a VM's QEMU, a database server) whose memory is
//! evidence of the arm. It is read after each trial, off the timed span and on the same
//! schedule for every arm: its resident memory, huge coverage and, for a hypervisor, its guest
//! RAM; an arm whose watched process vanished or lost its huge pages is flagged.

use crate::probe::Root;
use crate::probe::process::comm;
use crate::probe::process::{Proc, all_pids};
use std::time::Duration;

/// Folio sizes of the watched process are read for at most this long per trial.
const BUDGET: Duration = Duration::from_millis(300);
/// A drop in huge coverage larger than this, against the arm's first trial, is a lost backing.
pub const LOST: f64 = 0.10;

pub use crate::model::evidence::Watched;

/// The process `spec` names: a PID, or the one process whose comm is `spec`.
pub fn resolve(spec: &str) -> Result<u32, String> {
    if let Ok(pid) = spec.parse::<u32>() {
        return if Proc::system(pid).exists() {
            Ok(pid)
        } else {
            Err(format!("watch={spec}: no process {pid}"))
        };
    }
    let found: Vec<u32> = all_pids(&Root::system())
        .into_iter()
        .filter(|p| comm(*p).as_deref() == Some(spec))
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "watch={spec}: no process named {spec:?} (names are /proc/PID/comm, 15 characters; or give a PID)"
        )),
        many => Err(format!(
            "watch={spec}: {} processes are named {spec:?} (PIDs {}); give the PID",
            many.len(),
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Read the watched process now.
pub fn observe(spec: &str, pid: u32) -> Watched {
    let gone = Watched {
        spec: spec.to_string(),
        pid: Some(pid),
        name: None,
        alive: false,
        resident: 0,
        huge_bytes: 0,
        coverage: None,
        guest_ram: None,
        reasons: Vec::new(),
        declared_hugetlb: false,
    };
    let Ok(thp) = crate::probe::thp::read(&Root::system()) else {
        return gone;
    };
    let report = super::process::inspect_pid(pid, &thp, BUDGET);
    match report {
        // A zombie (exited, not yet reaped by its parent) has no memory left.
        Ok(r) if r.mappings.is_empty() => gone,
        Ok(r) => {
            let g = r.guest_ram.as_ref();
            Watched {
                name: Some(r.name.clone()),
                alive: true,
                resident: r.resident,
                huge_bytes: r.huge_bytes,
                coverage: g.map(|g| g.huge_share).or(r.coverage),
                guest_ram: g.map(|g| g.summary.clone()),
                reasons: g.map(|g| g.reasons.clone()).unwrap_or_default(),
                declared_hugetlb: g.is_some_and(|g| {
                    g.backends
                        .iter()
                        .all(|b| b.declared.hugetlb || b.pages.iter().any(|p| p.hugetlb))
                }),
                ..gone
            }
        }
        Err(_) => gone,
    }
}

/// Why a trial's watched process is not what the arm promised, if it is not: gone, below the
/// coverage of the arm's first trial by more than [`LOST`], or declared hugetlb and not full.
pub fn flag(w: &Watched, first: Option<f64>) -> Option<String> {
    let who = format!(
        "watched {} (pid {})",
        w.name.as_deref().unwrap_or(&w.spec),
        w.pid.map_or("?".into(), |p| p.to_string())
    );
    if !w.alive {
        return Some(format!("{who} is gone"));
    }
    let cov = w.coverage?;
    if let Some(f) = first
        && cov + LOST < f
    {
        return Some(format!(
            "{who} lost its backing: {:.0}% on huge pages, {:.0}% in this arm's first trial{}",
            cov * 100.0,
            f * 100.0,
            w.reasons
                .first()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
    }
    if w.declared_hugetlb && cov < 0.99 {
        return Some(format!(
            "{who} declares hugetlb guest RAM but only {:.0}% is on huge pages",
            cov * 100.0
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(cov: f64) -> Watched {
        Watched {
            spec: "vm".into(),
            pid: Some(7),
            name: Some("qemu-system-x86".into()),
            alive: true,
            resident: 1 << 30,
            huge_bytes: 0,
            coverage: Some(cov),
            guest_ram: None,
            reasons: vec!["THP is `never` system-wide (transparent_hugepage/enabled)".into()],
            declared_hugetlb: false,
        }
    }

    #[test]
    fn flags_a_lost_backing_a_vanished_process_and_a_short_hugetlb_vm() {
        assert_eq!(flag(&w(0.95), Some(1.0)), None);
        let f = flag(&w(0.5), Some(1.0)).unwrap();
        assert!(
            f.contains("lost its backing: 50% on huge pages, 100% in this arm's first trial")
                && f.contains("THP is `never`"),
            "{f}"
        );
        let gone = Watched {
            alive: false,
            ..w(0.0)
        };
        assert_eq!(
            flag(&gone, Some(1.0)).unwrap(),
            "watched qemu-system-x86 (pid 7) is gone"
        );
        let h = Watched {
            declared_hugetlb: true,
            ..w(0.9)
        };
        assert!(flag(&h, None).unwrap().contains("declares hugetlb"));
    }

    #[test]
    fn resolves_pids_and_names() {
        let me = std::process::id();
        assert_eq!(resolve(&me.to_string()), Ok(me));
        assert!(
            resolve("4294967")
                .unwrap_err()
                .contains("no process 4294967")
        );
        assert!(
            resolve("no-such-comm-x")
                .unwrap_err()
                .contains("no process named")
        );
    }
}
