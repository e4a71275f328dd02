//! `hugelab inspect PID…`: where each process's memory is, on which page sizes, why a mapping
//! is not huge, and (with --tree) a server's processes as one instance.

use super::{UsageError, print_json};
use crate::experiment::process::inspect_pid;
use crate::model::cgroup::CgroupInstance;
use crate::model::inspect::{InspectResult, Instance};
use crate::probe::Root;
use crate::probe::process::{Proc, all_pids};
use crate::units::parse_positive_duration;
use anyhow::Context as _;
use clap::Args;
use std::time::Duration;

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
    /// A cgroup's processes as one (path from the hierarchy's root, e.g.
    /// /kubepods.slice/… or /system.slice/postgresql.service), beside the kernel's own
    /// accounting of the group (memory.stat, the hugetlb controller); repeatable
    #[arg(long, value_name = "PATH")]
    pub cgroup: Vec<String>,
    /// Hot memory: clear each process's referenced bits, wait DURATION (e.g. 10s), and show
    /// what was touched, the TLB entries it needs at 4 KiB, 2 MiB and 1 GiB, and that against
    /// the reach `bench tlb` measured. Needs root or the process's owner; it perturbs reclaim's
    /// aging (pages look idle until touched again)
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub hot: Option<Duration>,
    #[command(flatten)]
    pub out: crate::options::Json,
    #[command(flatten)]
    pub store: crate::options::Database,
}

pub fn run(a: InspectArgs) -> anyhow::Result<i32> {
    let pids = pids(&a)?;
    let cgroups = cgroup_instances(&a.cgroup)?;
    if pids.is_empty() && cgroups.is_empty() {
        return Err(
            UsageError("give one or more PIDs, --name COMM or --cgroup PATH".into()).into(),
        );
    }
    // The hot window first: the reports below then see the memory as it is after it.
    let (hot, tlb) = match a.hot {
        Some(window) => hot_sets(&a, &pids, window),
        None => (Vec::new(), None),
    };
    let (processes, errors) = processes(&a, pids)?;
    let (instances, pools) = tree(&a, &processes);
    let res = InspectResult {
        schema: SCHEMA,
        processes,
        errors,
        instances,
        pools,
        hot,
        tlb,
        cgroups,
    };
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::inspect::render(&res, a.maps, a.folios));
    }
    Ok(if res.processes.is_empty() && res.cgroups.is_empty() {
        1
    } else {
        0
    })
}

/// With --tree, each process's tree as one instance; the hugetlb pools where --tree asks or
/// a process maps hugetlb memory.
fn tree(
    a: &InspectArgs,
    processes: &[crate::model::inspect::ProcessReport],
) -> (Vec<Instance>, Vec<crate::probe::hugetlb::Pool>) {
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
    (instances, pools)
}

/// The pids given, and those of the processes --name names (each name must find one).
fn pids(a: &InspectArgs) -> Result<Vec<u32>, UsageError> {
    let mut pids = a.pids.clone();
    for name in &a.name {
        let found: Vec<u32> = all_pids(&Root::system())
            .into_iter()
            .filter(|p| Proc::system(*p).comm().as_deref() == Some(name.as_str()))
            .collect();
        if found.is_empty() {
            return Err(UsageError(format!(
                "no process named {name:?} (see `hugelab top`)"
            )));
        }
        pids.extend(found);
    }
    Ok(pids)
}

/// Each process's report, its mappings kept as --maps and --all ask, and the errors of those
/// that could not be read.
fn processes(
    a: &InspectArgs,
    pids: Vec<u32>,
) -> anyhow::Result<(Vec<crate::model::inspect::ProcessReport>, Vec<String>)> {
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
    Ok((processes, errors))
}

/// Each `--cgroup PATH`: the kernel's figures for the group, then its processes' smaps read
/// as one right after.
fn cgroup_instances(paths: &[String]) -> anyhow::Result<Vec<CgroupInstance>> {
    use crate::probe::cgroup;
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let root = Root::system();
    let h = cgroup::hierarchies(&root).context("reading /proc/mounts")?;
    let mut out = Vec::new();
    for p in paths {
        let Some(g) = cgroup::read(&root, &h, p).with_context(|| format!("reading cgroup {p}"))?
        else {
            return Err(UsageError(format!(
                "--cgroup {p}: no such cgroup ({}); `hugelab top --cgroups` lists them",
                h.describe()
            ))
            .into());
        };
        let pids = cgroup::procs(&root, &h, p)?;
        let ids: Vec<i32> = pids.iter().map(|p| *p as i32).collect();
        out.push(CgroupInstance {
            cgroup: g.into(),
            memory: crate::collect::server::read_pids(&ids),
            pids,
        });
    }
    Ok(out)
}

/// `--hot`: each process's hot memory over the window, placed against the reach `bench tlb`
/// measured here, and the context the text needs.
fn hot_sets(
    a: &InspectArgs,
    pids: &[u32],
    window: Duration,
) -> (
    Vec<crate::model::inspect::HotSet>,
    Option<crate::model::inspect::HotContext>,
) {
    let mut sets = Vec::new();
    let mut errors = Vec::new();
    for w in crate::collect::hot::hot_window(pids, window) {
        match w.mappings {
            Ok(maps) => sets.push(crate::analyze::hot::hot_set(
                w.pid,
                &w.name,
                window.as_secs_f64(),
                &maps,
            )),
            Err(e) => errors.push(e),
        }
    }
    let measured = crate::stored_runs::measured_tlb(&a.store.db);
    if let Some(m) = &measured {
        for s in &mut sets {
            let named = [(s.pid.to_string(), s.entries.at_4k)];
            s.need = crate::analyze::tlb::needs(&named, m).pop();
        }
    }
    let context = crate::model::inspect::HotContext {
        measured,
        db: a
            .store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path)
            .display()
            .to_string(),
        geometry: crate::probe::tlb::read(),
        errors,
    };
    (sets, Some(context))
}
