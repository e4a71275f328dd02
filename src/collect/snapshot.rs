//! A snapshot of one process's memory for `inspect`, `top --full` and `run`'s `watch=` arms:
//! its status, smaps, command line and, within a time budget, the folio sizes of every range
//! (pagemap + kpageflags). The report is built from it in `analyze::inspect::report`.

use crate::collect::coverage::PageMap;
use crate::probe::process::{Mapping, Proc, ProcError, ProcStatus};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What was read of one process.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub pid: u32,
    pub status: ProcStatus,
    /// /proc/PID/smaps.
    pub maps: Vec<Mapping>,
    pub cmdline: Vec<String>,
    /// The text of `--config-file FILE` (relative to the process's working directory), for a
    /// VMM that declares its guest RAM there (Firecracker).
    pub config_file: Option<String>,
    /// Folio bytes by size per (start, end) range, when every range was scanned in time.
    pub folios: Option<BTreeMap<(u64, u64), BTreeMap<u64, u64>>>,
    /// Why folio sizes are missing or partial.
    pub notes: Vec<String>,
    pub elapsed: Duration,
}

/// Read one process: smaps (always), folio sizes (within `budget`, where readable). Folio
/// sizes are read over the ranges of /proc/PID/maps while another thread reads smaps; both
/// take the target's mmap lock for reading, briefly.
pub fn take(p: &Proc, budget: Duration) -> Result<Snapshot, ProcError> {
    let t = Instant::now();
    let pid = p.pid;
    let status = p.status()?;
    let mut notes = Vec::new();
    let ranges: Vec<(u64, u64)> = p
        .maps()?
        .iter()
        .filter(|m| m.path != "[vsyscall]")
        .map(|m| (m.start, m.end))
        .collect();
    let pagemap = match PageMap::open(Some(pid)) {
        Ok(pm) => Some(pm),
        Err(e) => {
            notes.push(format!(
                "folio sizes unavailable ({e}); coverage from smaps, mTHP not visible"
            ));
            None
        }
    };
    let (smaps, folios) = std::thread::scope(|s| {
        let smaps = s.spawn(|| p.smaps());
        let mut folios: Option<BTreeMap<(u64, u64), BTreeMap<u64, u64>>> = None;
        if let Some(pm) = pagemap {
            let mut out = BTreeMap::new();
            let mut ok = true;
            for &(a, b) in &ranges {
                if t.elapsed() > budget {
                    notes.push(format!("--budget {} ms reached: folio sizes not read for every mapping; coverage from smaps", budget.as_millis()));
                    ok = false;
                    break;
                }
                match pm.folios(a, b) {
                    Ok(Ok(h)) => {
                        out.insert((a, b), h);
                    }
                    Ok(Err(why)) => {
                        notes.push(why);
                        ok = false;
                        break;
                    }
                    Err(e)
                        if e.raw_os_error() == Some(libc::ESRCH)
                            || e.kind() == std::io::ErrorKind::NotFound =>
                    {
                        notes.push(format!(
                            "process {pid} exited during the scan; what was read is shown"
                        ));
                        ok = false;
                        break;
                    }
                    Err(_) => {} // a mapping that changed mid-scan: its smaps numbers stand
                }
            }
            folios = ok.then_some(out);
        }
        (smaps.join().expect("smaps reader panicked"), folios)
    });
    let maps = smaps?;
    let cmdline = p.cmdline();
    let config_file = cmdline
        .iter()
        .position(|a| a == "--config-file")
        .and_then(|i| cmdline.get(i + 1))
        .and_then(|f| p.read_in_cwd(f));
    Ok(Snapshot {
        pid,
        status,
        maps,
        cmdline,
        config_file,
        folios,
        notes,
        elapsed: t.elapsed(),
    })
}
