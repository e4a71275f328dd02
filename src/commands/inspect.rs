//! `hugelab inspect`, `top`, `collapse` and the hidden `hold-memory` test helper.

use super::options::TopSort;
use super::{UsageError, print_json};
use crate::analyze::inspect::{self, Context, Kind, TlbReach};
use crate::analyze::vm;
use crate::backing::{Backing, Region};
use crate::collect::coverage::PageMap;
pub use crate::model::inspect::{
    CollapseResult, CollapseRow, InspectResult, Instance, MappingReport, ProcessReport, TopRow,
};
use crate::probe::Root;
use crate::probe::process::{Mapping, ProcStatus, Rollup, parse_smaps, parse_status};
use crate::units::{Bytes, parse_positive_duration};
use anyhow::Context as _;
use clap::Args;
use std::collections::BTreeMap;
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

fn read_proc(pid: u32, file: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("process {pid} does not exist (or exited)"),
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "/proc/{pid}/{file}: permission denied (another user's process: run as root)"
        ),
        _ => anyhow::anyhow!("/proc/{pid}/{file}: {e}"),
    })
}

/// Inspect one process: smaps (always), folio sizes (within `budget`, where readable).
pub fn inspect_pid(
    pid: u32,
    thp: &crate::probe::thp::Thp,
    budget: Duration,
) -> anyhow::Result<ProcessReport> {
    let t = Instant::now();
    let status =
        parse_status(&read_proc(pid, "status")?).with_context(|| format!("/proc/{pid}/status"))?;
    let mut notes = Vec::new();
    // Folio sizes (pagemap + kpageflags) are read over the ranges of /proc/PID/maps while
    // another thread reads smaps; both take the target's mmap lock for reading, briefly.
    let ranges: Vec<(u64, u64)> = parse_smaps(&read_proc(pid, "maps")?)
        .with_context(|| format!("/proc/{pid}/maps"))?
        .iter()
        .filter(|m| m.path != "[vsyscall]")
        .map(|m| (m.start, m.end))
        .collect();
    let pagemap = match PageMap::open(Some(pid)) {
        Ok(p) => Some(p),
        Err(e) => {
            notes.push(format!(
                "folio sizes unavailable ({e}); coverage from smaps, mTHP not visible"
            ));
            None
        }
    };
    let (smaps, mut scanned) = std::thread::scope(|s| {
        let smaps = s.spawn(|| read_proc(pid, "smaps"));
        let mut scanned: Option<BTreeMap<(u64, u64), BTreeMap<u64, u64>>> = None;
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
            scanned = ok.then_some(out);
        }
        (smaps.join().expect("smaps reader panicked"), scanned)
    });
    let maps = parse_smaps(&smaps?).with_context(|| format!("/proc/{pid}/smaps"))?;
    let cmdline: Vec<String> = read_proc(pid, "cmdline")
        .unwrap_or_default()
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let heap = inspect::java_heap(&maps, &cmdline);
    let vm = vm::hypervisor(&status.name, &cmdline).map(|hv| {
        let mut decl = vm::declared(hv, &cmdline);
        if hv == vm::Hypervisor::Firecracker
            && let Some(f) = cmdline
                .iter()
                .position(|a| a == "--config-file")
                .and_then(|i| cmdline.get(i + 1))
        {
            // Relative to the VMM's working directory.
            let path = std::path::Path::new(&format!("/proc/{pid}/cwd")).join(f);
            if let Ok(text) = std::fs::read_to_string(path) {
                decl = vm::firecracker_declared(&text);
            }
        }
        (hv, vm::locate(&decl, &maps))
    });
    let guest: Vec<usize> = vm
        .iter()
        .flat_map(|(_, loc)| loc.iter().filter_map(|(_, i)| *i))
        .collect();
    let ctx = Context {
        thp: thp.clone(),
        status: status.clone(),
    };
    if maps.is_empty() {
        notes.push("no user memory (a kernel thread, or a zombie)".into());
    }
    let mut folio_total: Option<BTreeMap<u64, u64>> = scanned.as_ref().map(|_| BTreeMap::new());
    let mut mappings = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        let base = inspect::kind(m);
        let kind = if Some(i) == heap {
            Kind::JavaHeap
        } else if guest.contains(&i) && base != Kind::Hugetlb {
            Kind::GuestRam
        } else {
            base
        };
        let resident = inspect::resident_bytes(m);
        // hugetlb comes from smaps (its page size is exact there); the rest from folios.
        let folios = scanned
            .as_mut()
            .and_then(|sc| sc.remove(&(m.start, m.end)))
            .filter(|_| !inspect::is_hugetlb(m) && resident > 0);
        if let (Some(tot), Some(h)) = (folio_total.as_mut(), folios.as_ref()) {
            for (s, b) in h {
                *tot.entry(*s).or_insert(0) += b;
            }
        }
        if inspect::is_hugetlb(m)
            && let Some(tot) = folio_total.as_mut()
        {
            *tot.entry(m.field("KernelPageSize")).or_insert(0) += resident;
        }
        let huge = inspect::huge_bytes(m, folios.as_ref());
        let coverage = (resident > 0).then(|| huge as f64 / resident as f64);
        mappings.push(MappingReport {
            start: m.start,
            end: m.end,
            perms: m.perms.clone(),
            kind,
            path: m.path.clone(),
            size: m.size(),
            resident,
            anon_huge_pages: m.field("AnonHugePages"),
            private_hugetlb: m.field("Private_Hugetlb"),
            shared_hugetlb: m.field("Shared_Hugetlb"),
            kernel_page_size: m.field("KernelPageSize"),
            thp_eligible: m.fields.get("THPeligible").map(|v| *v == 1),
            vm_flags: m.vm_flags.clone(),
            why_not_huge: inspect::why_not_huge(
                m,
                if kind == Kind::GuestRam { base } else { kind },
                coverage.unwrap_or(1.0),
                &ctx,
            ),
            tlb: inspect::tlb_reach(m, folios.as_ref()),
            folios,
            huge_bytes: huge,
            coverage,
        });
    }
    notes.dedup();
    let guest_ram = vm.map(|(hv, located)| {
        let regions: Vec<vm::Region> = mappings.iter().map(region).collect();
        vm::guest_ram(hv, located, &regions, &pool_free())
    });
    let resident: u64 = mappings.iter().map(|m| m.resident).sum();
    let huge: u64 = mappings.iter().map(|m| m.huge_bytes).sum();
    let tlb = mappings.iter().fold(TlbReach::default(), |a, m| TlbReach {
        now: a.now + m.tlb.now,
        all_4k: a.all_4k + m.tlb.all_4k,
        all_2m: a.all_2m + m.tlb.all_2m,
    });
    Ok(ProcessReport {
        pid,
        name: status.name,
        thp_enabled: status.thp_enabled,
        resident,
        huge_bytes: huge,
        coverage: (resident > 0).then(|| huge as f64 / resident as f64),
        folios: folio_total,
        tlb,
        mappings,
        guest_ram,
        notes,
        elapsed_ms: t.elapsed().as_secs_f64() * 1000.0,
    })
}

/// A mapping's resident bytes by page size, for the guest-RAM summary.
fn region(m: &MappingReport) -> vm::Region {
    let pages = if m.kind == Kind::Hugetlb {
        vec![vm::PageShare {
            page_size: m.kernel_page_size,
            hugetlb: true,
            bytes: m.resident,
        }]
    } else {
        match &m.folios {
            Some(h) => h
                .iter()
                .map(|(&page_size, &bytes)| vm::PageShare {
                    page_size,
                    hugetlb: false,
                    bytes,
                })
                .collect(),
            None => vec![
                vm::PageShare {
                    page_size: 2 << 20,
                    hugetlb: false,
                    bytes: m.huge_bytes,
                },
                vm::PageShare {
                    page_size: 4096,
                    hugetlb: false,
                    bytes: m.resident.saturating_sub(m.huge_bytes),
                },
            ],
        }
    };
    vm::Region {
        start: m.start,
        end: m.end,
        resident: m.resident,
        pages,
        reasons: m.why_not_huge.clone(),
    }
}

/// Free bytes per hugetlb page size (HugePages_Free), empty where unreadable.
fn pool_free() -> BTreeMap<u64, u64> {
    crate::probe::hugetlb::read(&Root::system())
        .unwrap_or_default()
        .iter()
        .map(|p| (p.page_size, p.bytes(p.free)))
        .collect()
}

/// Every process id in /proc, ascending.
pub fn all_pids() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

pub fn run(a: InspectArgs) -> anyhow::Result<i32> {
    let mut pids = a.pids.clone();
    for name in &a.name {
        let found: Vec<u32> = all_pids()
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == name)
            })
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
    for pid in all_pids() {
        let Ok(st) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|_| ())
            .and_then(|t| parse_status(&t).map_err(|_| ()))
        else {
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
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
            unreadable += (st.vm_rss.is_some()) as usize;
            continue;
        };
        let Ok(r) = Rollup::parse(&text) else {
            continue;
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
        let cmdline = read_proc(r.pid, "cmdline").unwrap_or_default();
        let argv: Vec<String> = cmdline.split('\0').take(1).map(String::from).collect();
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
    let status: ProcStatus = parse_status(&read_proc(a.pid, "status")?)?;
    let maps: Vec<Mapping> = parse_smaps(&read_proc(a.pid, "smaps")?)?;
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
    let after: Vec<Mapping> = parse_smaps(&read_proc(a.pid, "smaps")?)?;
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
