//! `hugelab collapse PID [--range A-B]`: MADV_COLLAPSE of another process's eligible
//! anonymous mappings through process_madvise, with the huge bytes before and after.

use super::{UsageError, print_json};
use crate::analyze::inspect::{self, Kind};
use crate::model::inspect::{CollapseResult, CollapseRow};
use crate::probe::process::{Mapping, Proc, ProcStatus};
use clap::Args;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct CollapseArgs {
    /// The process whose memory is collapsed
    pub pid: u32,
    /// Only this range, ADDR-ADDR in hex (default: every eligible anonymous mapping)
    #[arg(long)]
    pub range: Option<String>,
    #[command(flatten)]
    pub out: crate::options::Json,
}

fn parse_range(s: &str) -> Result<(u64, u64), UsageError> {
    let bad = || {
        UsageError(format!(
            "invalid --range {s:?}: use START-END in hex, e.g. 7f0000000000-7f0040000000"
        ))
    };
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let p = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).map_err(|_| bad());
    let (a, b) = (p(a)?, p(b)?);
    if b <= a {
        return Err(bad());
    }
    Ok((a, b))
}

pub fn run(a: CollapseArgs) -> anyhow::Result<i32> {
    let t0 = Instant::now();
    let range = a.range.as_deref().map(parse_range).transpose()?;
    let proc = Proc::system(a.pid);
    let status: ProcStatus = proc.status()?;
    let maps: Vec<Mapping> = proc.smaps()?;
    let pidfd = crate::sys::pidfd_open(a.pid).map_err(|e| {
        anyhow::anyhow!(
            "pidfd_open({}): {}",
            a.pid,
            crate::backing::collapse::explain_error(&e)
        )
    })?;
    let targets = targets(&maps, range);
    if targets.is_empty() {
        let within = if range.is_some() {
            " in that range"
        } else {
            ""
        };
        return Err(UsageError(format!(
            "process {} has no eligible anonymous mapping{within} (see `hugelab inspect {} --maps`)",
            a.pid, a.pid
        ))
        .into());
    }
    let mut rows = collapse(&pidfd, &maps, targets);
    let after: Vec<Mapping> = proc.smaps()?;
    for row in &mut rows {
        row.huge_after = huge_in(&after, row.start, row.end).0;
    }
    let res_total: u64 = rows.iter().map(|r| r.resident).sum();
    let cov = |f: fn(&CollapseRow) -> u64| {
        (res_total > 0).then(|| rows.iter().map(f).sum::<u64>() as f64 / res_total as f64)
    };
    let res = CollapseResult {
        schema: "hugelab.collapse/1",
        pid: a.pid,
        name: status.name,
        coverage_before: cov(|r| r.huge_before),
        coverage_after: cov(|r| r.huge_after),
        rows,
        elapsed_ms: t0.elapsed().as_secs_f64() * 1000.0,
    };
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::inspect::render_collapse(&res));
    }
    Ok(if res.rows.iter().all(|r| r.error.is_some()) {
        1
    } else {
        0
    })
}

/// The ranges to collapse: each mapping within `range`, or every eligible one.
fn targets(maps: &[Mapping], range: Option<(u64, u64)>) -> Vec<(u64, u64, Kind)> {
    maps.iter()
        .filter_map(|m| {
            let (s, e) = match range {
                Some((rs, re)) => (m.start.max(rs), m.end.min(re)),
                None => (m.start, m.end),
            };
            let wanted = match range {
                Some(_) => s < e,
                None => crate::backing::collapse::eligible(m),
            };
            wanted.then_some((s, e, inspect::kind(m)))
        })
        .collect()
}

/// The THP and resident bytes of the mappings that overlap `s..e`.
fn huge_in(maps: &[Mapping], s: u64, e: u64) -> (u64, u64) {
    maps.iter()
        .filter(|m| m.start < e && m.end > s)
        .fold((0, 0), |(h, r), m| {
            (h + m.field("AnonHugePages"), r + m.field("Rss"))
        })
}

/// Each target collapsed, timed, with what it held before (`huge_after` is filled later, from
/// one reading after them all).
fn collapse(
    pidfd: &std::os::fd::OwnedFd,
    maps: &[Mapping],
    targets: Vec<(u64, u64, Kind)>,
) -> Vec<CollapseRow> {
    targets
        .into_iter()
        .map(|(s, e, k)| {
            let (before, resident) = huge_in(maps, s, e);
            let t = Instant::now();
            let r = crate::backing::collapse::collapse_range(pidfd, s, e);
            CollapseRow {
                start: s,
                end: e,
                kind: k,
                requested: e - s,
                huge_before: before,
                huge_after: 0,
                resident,
                elapsed_ms: t.elapsed().as_secs_f64() * 1000.0,
                error: r.err().map(|e| crate::backing::collapse::explain_error(&e)),
            }
        })
        .collect()
}
