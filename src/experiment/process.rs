//! experiment: a process read into its report: a snapshot of its memory (`collect::snapshot`: smaps and
//! folio sizes under a time budget) and the report built from it (`analyze::inspect`) — what
//! `inspect`, `top --full` and `run`'s `watch=` arms share.

use crate::analyze::inspect::{ProcessReport, report};
use crate::probe::Root;
use crate::probe::process::Proc;
use crate::probe::thp::Thp;
use std::time::Duration;

/// Inspect one process of this machine, spending at most `budget` on its folio sizes.
pub fn inspect_pid(pid: u32, thp: &Thp, budget: Duration) -> anyhow::Result<ProcessReport> {
    let snap = crate::collect::snapshot::take(&Proc::system(pid), budget)?;
    Ok(report(
        snap,
        thp,
        &crate::probe::hugetlb::free_bytes(&Root::system()),
    ))
}
