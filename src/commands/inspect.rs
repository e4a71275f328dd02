//! `hugelab inspect`, `top`, `collapse` and `hold-memory` (memory with a known backing, for
//! examples and tests).

use super::options::TopSort;
use super::{UsageError, print_json};
use crate::analyze::inspect::{self, Kind};
use crate::analyze::vm;
use crate::backing::{Backing, Region};
pub use crate::model::inspect::{
    CollapseResult, CollapseRow, InspectResult, Instance, MappingReport, ProcessReport, TopRow,
};
use crate::probe::Root;
use crate::probe::process::{Mapping, Proc, ProcError, ProcStatus, all_pids};
use crate::units::{Bytes, parse_positive_duration};
use anyhow::Context as _;
use clap::Args;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.inspect/1";

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Process ids
    pub pids: Vec<u32>,
    /// Inspect every process whose name (comm) is this (repeatable)
    #[arg(long)]
    pub name: Vec<String>,
    /// One row per mapping
    #[arg(long)]
    pub maps: bool,
    /// Show mappings with less resident memory too (default: mappings ≥ 1 MiB resident)
    #[arg(long)]
    pub all: bool,
    /// Print the folio sizes (mTHP 16K…1M, 2M) of each mapping that holds mTHP, as lines
    /// below the table
    #[arg(long)]
    pub folios: bool,
    /// Time budget per process for folio sizes (pagemap); beyond it, smaps only
    #[arg(long, default_value = "2s", value_parser = parse_positive_duration)]
    pub budget: Duration,
    /// Also read each PID with its descendants as one instance (a server and its workers,
    /// shared memory counted once), and show the hugetlb pools' reservations
    #[arg(long)]
    pub tree: bool,
    #[command(flatten)]
    pub out: crate::commands::options::Json,
}

/// Inspect one process: its snapshot (collect) and the report built from it (analyze).
fn inspect_pid(
    pid: u32,
    thp: &crate::probe::thp::Thp,
    budget: Duration,
) -> anyhow::Result<ProcessReport> {
    let snap = crate::collect::snapshot::take(&Proc::system(pid), budget)?;
    Ok(inspect::report(
        snap,
        thp,
        &crate::probe::hugetlb::free_bytes(&Root::system()),
    ))
}

pub fn run(a: InspectArgs) -> anyhow::Result<i32> {
    let mut pids = a.pids.clone();
    for name in &a.name {
        let found: Vec<u32> = all_pids(&Root::system())
            .into_iter()
            .filter(|p| Proc::system(*p).comm().as_deref() == Some(name.as_str()))
            .collect();
        if found.is_empty() {
            return Err(
                UsageError(format!("no process named {name:?} (see `hugelab top`)")).into(),
            );
        }
        pids.extend(found);
    }
    if pids.is_empty() {
        return Err(UsageError("give one or more PIDs, or --name COMM".into()).into());
    }
    let thp = crate::probe::thp::read(&Root::system()).context("reading THP settings")?;
    let mut processes = Vec::new();
    let mut errors = Vec::new();
    for pid in pids {
        match inspect_pid(pid, &thp, a.budget) {
            Ok(mut r) => {
                if !a.maps {
                    r.mappings
                        .retain(|m| !m.why_not_huge.is_empty() && m.resident >= 1 << 20);
                } else if !a.all {
                    r.mappings
                        .retain(|m| m.resident >= 1 << 20 || m.huge_bytes > 0);
                }
                processes.push(r)
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    let instances: Vec<Instance> = if a.tree {
        processes
            .iter()
            .map(|p| Instance {
                pid: p.pid,
                name: p.name.clone(),
                memory: crate::collect::server::read(p.pid as i32),
            })
            .collect()
    } else {
        Vec::new()
    };
    let maps_hugetlb = processes.iter().any(|p| {
        p.mappings
            .iter()
            .any(|m| m.private_hugetlb + m.shared_hugetlb > 0)
    }) || instances.iter().any(|i| i.memory.hugetlb_total() > 0);
    let pools = if a.tree || maps_hugetlb {
        crate::probe::hugetlb::read(&Root::system())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.total > 0)
            .collect()
    } else {
        Vec::new()
    };
    let res = InspectResult {
        schema: SCHEMA,
        processes,
        errors,
        instances,
        pools,
    };
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::inspect::render(&res, a.maps, a.folios));
    }
    Ok(if res.processes.is_empty() { 1 } else { 0 })
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The order of the rows
    #[arg(long, value_enum, default_value_t = TopSort::Rss)]
    pub sort: TopSort,
    /// Rows to show
    #[arg(long, short = 'n', default_value_t = 20, allow_negative_numbers = true, value_parser = super::parse_count)]
    pub limit: usize,
    /// Full detail (smaps and folio sizes) instead of the cheap smaps_rollup
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub out: crate::commands::options::Json,
}

pub fn top(a: TopArgs) -> anyhow::Result<i32> {
    let thp = crate::probe::thp::read(&Root::system()).context("reading THP settings")?;
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for pid in all_pids(&Root::system()) {
        let proc = Proc::system(pid);
        let Ok(st) = proc.status() else {
            continue;
        };
        if a.full {
            match inspect_pid(pid, &thp, Duration::from_millis(500)) {
                Ok(r) if r.resident > 0 => rows.push(TopRow {
                    pid,
                    name: r.name,
                    thp_enabled: r.thp_enabled,
                    resident: r.resident,
                    anon_huge_pages: r.mappings.iter().map(|m| m.anon_huge_pages).sum(),
                    hugetlb: r
                        .mappings
                        .iter()
                        .map(|m| m.private_hugetlb + m.shared_hugetlb)
                        .sum(),
                    huge_bytes: r.huge_bytes,
                    coverage: r.coverage,
                    guest_ram: r.guest_ram,
                }),
                Ok(_) => {}
                Err(_) => unreadable += 1,
            }
            continue;
        }
        let r = match proc.rollup() {
            Ok(r) => r,
            Err(ProcError::Other(_)) => continue,
            Err(_) => {
                unreadable += (st.vm_rss.is_some()) as usize;
                continue;
            }
        };
        if r.resident() == 0 {
            continue;
        }
        rows.push(TopRow {
            pid,
            name: st.name,
            thp_enabled: st.thp_enabled,
            resident: r.resident(),
            anon_huge_pages: r.anon_huge,
            hugetlb: r.hugetlb,
            huge_bytes: r.huge(),
            coverage: Some(r.huge() as f64 / r.resident() as f64),
            guest_ram: None,
        });
    }
    match a.sort {
        TopSort::Coverage => rows.sort_by(|x, y| {
            y.coverage
                .unwrap_or(0.0)
                .total_cmp(&x.coverage.unwrap_or(0.0))
                .then(y.resident.cmp(&x.resident))
        }),
        TopSort::Huge => rows.sort_by_key(|r| std::cmp::Reverse(r.huge_bytes)),
        TopSort::Rss => rows.sort_by_key(|r| std::cmp::Reverse(r.resident)),
    }
    rows.truncate(a.limit);
    // A VM's guest RAM needs its smaps and command line: read for hypervisor processes only.
    for r in rows.iter_mut().filter(|r| r.guest_ram.is_none()) {
        let argv: Vec<String> = Proc::system(r.pid).cmdline().into_iter().take(1).collect();
        if vm::hypervisor(&r.name, &argv).is_some()
            && let Ok(p) = inspect_pid(r.pid, &thp, Duration::from_millis(500))
        {
            r.guest_ram = p.guest_ram;
        }
    }
    if a.out.json {
        #[derive(serde::Serialize)]
        struct TopJson<'a> {
            schema: &'static str,
            rows: &'a [TopRow],
            unreadable_processes: usize,
        }
        print_json(&TopJson {
            schema: "hugelab.top/1",
            rows: &rows,
            unreadable_processes: unreadable,
        })?;
    } else {
        print!(
            "{}",
            crate::render::inspect::render_top(&rows, unreadable, a.full)
        );
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct CollapseArgs {
    /// The process whose memory is collapsed
    pub pid: u32,
    /// Only this range, ADDR-ADDR in hex (default: every eligible anonymous mapping)
    #[arg(long)]
    pub range: Option<String>,
    #[command(flatten)]
    pub out: crate::commands::options::Json,
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

pub fn collapse(a: CollapseArgs) -> anyhow::Result<i32> {
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
    let targets: Vec<(u64, u64, Kind)> = maps
        .iter()
        .filter_map(|m| {
            let k = inspect::kind(m);
            let (s, e) = match range {
                Some((rs, re)) => (m.start.max(rs), m.end.min(re)),
                None => (m.start, m.end),
            };
            let wanted = match range {
                Some(_) => s < e,
                None => crate::backing::collapse::eligible(m),
            };
            wanted.then_some((s, e, k))
        })
        .collect();
    if targets.is_empty() {
        return Err(UsageError(format!(
            "process {} has no eligible anonymous mapping{} (see `hugelab inspect {} --maps`)",
            a.pid,
            if range.is_some() {
                " in that range"
            } else {
                ""
            },
            a.pid
        ))
        .into());
    }
    let huge_in = |maps: &[Mapping], s: u64, e: u64| -> (u64, u64) {
        maps.iter()
            .filter(|m| m.start < e && m.end > s)
            .fold((0, 0), |(h, r), m| {
                (h + m.field("AnonHugePages"), r + m.field("Rss"))
            })
    };
    let mut rows = Vec::new();
    for (s, e, k) in targets {
        let (before, resident) = huge_in(&maps, s, e);
        let t = Instant::now();
        let r = crate::backing::collapse::collapse_range(&pidfd, s, e);
        rows.push(CollapseRow {
            start: s,
            end: e,
            kind: k,
            requested: e - s,
            huge_before: before,
            huge_after: 0,
            resident,
            elapsed_ms: t.elapsed().as_secs_f64() * 1000.0,
            error: r.err().map(|e| crate::backing::collapse::explain_error(&e)),
        });
    }
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

#[derive(Debug, Args)]
pub struct HoldMemoryArgs {
    /// 4k, thp, hugetlb-2m, hugetlb-1g, mthp-<size> or `plain` (no madvise at all)
    #[arg(long)]
    pub backing: String,
    /// How much to map, e.g. 64M, 1G
    #[arg(long)]
    pub size: Bytes,
    /// PR_SET_THP_DISABLE before mapping
    #[arg(long)]
    pub thp_disable: bool,
    /// Offset the region by 4 KiB from a 2 MiB boundary
    #[arg(long)]
    pub unaligned: bool,
    /// Reserve nothing and touch one page per GiB (a huge, mostly empty mapping)
    #[arg(long)]
    pub sparse: bool,
    /// After faulting in, give back three of every four 4 KiB pages (fragments free memory; with a
    /// size near MemAvailable, later huge-page faults must compact)
    #[arg(long)]
    pub fragment: bool,
    /// How long to hold the memory before exiting
    #[arg(long, default_value_t = 3600)]
    pub seconds: u64,
}

/// Map and fault in memory with a known backing, print `ready START END`, and wait.
pub fn hold_memory(a: HoldMemoryArgs) -> anyhow::Result<i32> {
    if a.thp_disable {
        crate::sys::set_thp_disable(true)?;
    }
    let (backing, plain) = match a.backing.as_str() {
        "plain" => (Backing::Base, true),
        b => (b.parse::<Backing>().map_err(UsageError)?, false),
    };
    let region = if a.sparse {
        Region::map_sparse(a.size.0, 1 << 30)?
    } else {
        let mut r = if plain {
            Region::map_plain(a.size.0, a.unaligned)?
        } else {
            Region::map(a.size.0, backing)?
        };
        r.populate()?;
        if a.fragment {
            r.fragment()?;
        }
        r
    };
    println!(
        "ready {:x} {:x}",
        region.start(),
        region.start() + region.mapped_len() as u64
    );
    std::thread::sleep(Duration::from_secs(a.seconds));
    Ok(0)
}
