//! Folio sizes of a long-lived process, read a little at a time: each call walks its page
//! tables (pagemap + kpageflags) for at most a time budget and resumes where it stopped, so a
//! watcher (the exporter) never holds a large process for long; a pass over all its mappings
//! that completes replaces the published histogram.

use super::coverage::PageMap;
use crate::probe::process::parse_smaps;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One step reads at most this much address space (aligned, so no folio up to 2 MiB is cut).
const STEP: u64 = 32 << 20;

pub struct FolioScan {
    pid: u32,
    pagemap: PageMap,
    ranges: Vec<(u64, u64)>,
    /// Index into `ranges` and the address reached in it.
    at: (usize, u64),
    partial: BTreeMap<u64, u64>,
    /// The last complete pass: folio size → resident bytes, and when it ended.
    pub last: Option<(BTreeMap<u64, u64>, Instant)>,
}

/// Why a process's folio sizes cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Not root: kpageflags is unreadable. Not an error of the process; folio sizes are off.
    #[error("{0}")]
    Unavailable(String),
    /// The process exited.
    #[error("process {0} exited")]
    Gone(u32),
    #[error("process {pid}: {source}")]
    Io {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
}

fn gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

impl FolioScan {
    pub fn new(pid: u32) -> Result<FolioScan, ScanError> {
        let mut pagemap = PageMap::open(Some(pid)).map_err(|source| {
            if gone(&source) {
                ScanError::Gone(pid)
            } else {
                ScanError::Io { pid, source }
            }
        })?;
        // One thread: the budget is wall time spent in the target's page tables.
        pagemap.workers = 1;
        Ok(FolioScan {
            pid,
            pagemap,
            ranges: Vec::new(),
            at: (0, 0),
            partial: BTreeMap::new(),
            last: None,
        })
    }

    fn io(&self, source: std::io::Error) -> ScanError {
        if gone(&source) {
            ScanError::Gone(self.pid)
        } else {
            ScanError::Io {
                pid: self.pid,
                source,
            }
        }
    }

    /// A new pass: the mappings as they are now.
    fn restart(&mut self) -> Result<(), ScanError> {
        let maps =
            std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).map_err(|e| self.io(e))?;
        self.ranges = parse_smaps(&maps)
            .map_err(|e| ScanError::Io {
                pid: self.pid,
                source: std::io::Error::other(e.to_string()),
            })?
            .iter()
            .filter(|m| m.path != "[vsyscall]")
            .map(|m| (m.start, m.end))
            .collect();
        self.at = (0, self.ranges.first().map_or(0, |r| r.0));
        self.partial.clear();
        Ok(())
    }

    /// How far the pass underway has walked, 0–1 of the address space it covers; `None` when
    /// none is underway (between passes, or before the first step).
    pub fn progress(&self) -> Option<f64> {
        let total: u64 = self.ranges.iter().map(|(a, b)| b - a).sum();
        if total == 0 {
            return None;
        }
        let (i, addr) = self.at;
        let done: u64 = self.ranges[..i.min(self.ranges.len())]
            .iter()
            .map(|(a, b)| b - a)
            .sum::<u64>()
            + self
                .ranges
                .get(i)
                .map_or(0, |(a, b)| addr.clamp(*a, *b) - a);
        Some(done as f64 / total as f64)
    }

    /// Walk for about `budget` (one step may run past it), publishing a pass when it completes;
    /// a new pass starts once the last one is `every` old. Returns the time spent.
    pub fn advance(&mut self, budget: Duration, every: Duration) -> Result<Duration, ScanError> {
        let t = Instant::now();
        if self.ranges.is_empty() {
            if self
                .last
                .as_ref()
                .is_some_and(|(_, at)| every > at.elapsed())
            {
                return Ok(Duration::ZERO);
            }
            self.restart()?;
        }
        while budget > t.elapsed() {
            let Some(&(start, end)) = self.ranges.get(self.at.0) else {
                // Pass complete.
                self.last = Some((std::mem::take(&mut self.partial), Instant::now()));
                self.ranges.clear();
                break;
            };
            let a = self.at.1.max(start);
            let b = ((a / STEP + 1) * STEP).min(end);
            match self.pagemap.folios(a, b) {
                Ok(Ok(h)) => {
                    for (size, bytes) in h {
                        *self.partial.entry(size).or_insert(0) += bytes;
                    }
                }
                Ok(Err(why)) => return Err(ScanError::Unavailable(why)),
                Err(e) if gone(&e) => return Err(ScanError::Gone(self.pid)),
                // A mapping that changed under the walk: skip the rest of it this pass.
                Err(_) => {
                    self.at = (self.at.0 + 1, 0);
                    continue;
                }
            }
            self.at = if b >= end {
                (self.at.0 + 1, 0)
            } else {
                (self.at.0, b)
            };
        }
        Ok(t.elapsed())
    }
}
