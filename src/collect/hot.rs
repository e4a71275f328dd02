//! A process's hot memory: its referenced bits cleared (`/proc/PID/clear_refs`), a window
//! waited out, then each mapping's `Referenced` read from `smaps` — the memory touched in the
//! window. Clearing the bits makes pages look idle to reclaim until touched again (it perturbs
//! reclaim's aging), and needs the process's owner or root. Hugetlb mappings are not tracked
//! this way (the kernel neither clears nor reports their referenced bits); this kernel has no
//! idle-page tracking or DAMON, the finer tools for the same question.

use crate::probe::process::{Mapping, Proc};
use std::time::Duration;

/// One process's mappings at the end of the window, or why they could not be read.
pub struct Window {
    pub pid: u32,
    pub name: String,
    pub mappings: Result<Vec<Mapping>, String>,
}

fn clear(pid: u32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "1")
}

/// Clear the referenced bits of `pid` and its descendants (a server before a load); the
/// processes that refused, with why.
pub fn clear_tree(pid: i32) -> Vec<String> {
    crate::probe::process::tree(pid)
        .into_iter()
        .filter_map(|p| {
            clear(p as u32)
                .err()
                .map(|e| format!("/proc/{p}/clear_refs: {e}"))
        })
        .collect()
}

/// Clear every process's referenced bits, wait `window` (blocking, once for all), read smaps.
pub fn hot_window(pids: &[u32], window: Duration) -> Vec<Window> {
    let cleared: Vec<(u32, Result<(), String>)> = pids
        .iter()
        .map(|&pid| {
            (
                pid,
                clear(pid).map_err(|e| {
                    format!(
                        "cannot clear the referenced bits of {pid} (/proc/{pid}/clear_refs: {e}); it needs the process's owner or root{}",
                        if e.kind() == std::io::ErrorKind::PermissionDenied {
                            format!(" — {}", crate::probe::process::denied_hint())
                        } else {
                            String::new()
                        }
                    )
                }),
            )
        })
        .collect();
    std::thread::sleep(window);
    cleared
        .into_iter()
        .map(|(pid, ok)| {
            let p = Proc::system(pid);
            Window {
                pid,
                name: p.comm().unwrap_or_default(),
                mappings: ok.and_then(|_| {
                    p.smaps()
                        .map_err(|e| format!("reading /proc/{pid}/smaps: {e}"))
                }),
            }
        })
        .collect()
}
