//! `hugelab top`: every process by resident memory, huge coverage or huge bytes; with --full
//! each one's report (mTHP from folio sizes, guest RAM of a hypervisor).

use super::{UsageError, print_json};
use crate::analyze::vm;
use crate::experiment::process::inspect_pid;
use crate::model::inspect::TopRow;
use crate::options::TopSort;
use crate::probe::Root;
use crate::probe::process::{Proc, ProcError, all_pids};
use anyhow::Context as _;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The order of the rows
    #[arg(long, value_enum, default_value_t = TopSort::Rss)]
    pub sort: TopSort,
    /// Rows to show
    #[arg(long, short = 'n', default_value_t = 20, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub limit: usize,
    /// Full detail (smaps and folio sizes) instead of the cheap smaps_rollup
    #[arg(long, conflicts_with = "cgroups")]
    pub full: bool,
    /// cgroups instead of processes (pods, containers, systemd units): the kernel's own
    /// accounting of each group's memory and huge pages (memory.stat, the hugetlb controller),
    /// cgroup v1 or v2
    #[arg(long)]
    pub cgroups: bool,
    /// With --cgroups: how many levels below the root to read (kubelet's containers sit 4 deep)
    #[arg(long, default_value_t = 4, requires = "cgroups")]
    pub depth: usize,
    #[command(flatten)]
    pub out: crate::options::Json,
}

pub fn run(a: TopArgs) -> anyhow::Result<i32> {
    if a.cgroups {
        return cgroups(&a);
    }
    let thp = crate::probe::thp::read(&Root::system()).context("reading THP settings")?;
    let (mut rows, unreadable) = rows(&a, &thp);
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

/// A row for every process with resident memory (from smaps_rollup, or a full inspection with
/// --full), and how many could not be read.
fn rows(a: &TopArgs, thp: &crate::probe::thp::Thp) -> (Vec<TopRow>, usize) {
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for pid in all_pids(&Root::system()) {
        let proc = Proc::system(pid);
        let Ok(st) = proc.status() else {
            continue;
        };
        if a.full {
            match inspect_pid(pid, thp, Duration::from_millis(500)) {
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
    (rows, unreadable)
}

/// `top --cgroups`: every group down to `--depth`, sorted like processes (memory, share on huge
/// pages, huge bytes).
fn cgroups(a: &TopArgs) -> anyhow::Result<i32> {
    use crate::model::cgroup::{CgroupRow, CgroupTop};
    use crate::probe::cgroup;
    let root = Root::system();
    let h = cgroup::hierarchies(&root).context("reading /proc/mounts")?;
    if h.is_empty() {
        return Err(UsageError(
            "no cgroup hierarchy has the memory or hugetlb controller mounted here (see /proc/mounts): nothing per cgroup to show".into(),
        )
        .into());
    }
    let groups = cgroup::walk(&root, &h, a.depth).context("reading the cgroups")?;
    let groups_read = groups.len();
    let mut rows: Vec<CgroupRow> = groups.into_iter().map(CgroupRow::from).collect();
    match a.sort {
        TopSort::Coverage => rows.sort_by(|x, y| {
            y.share
                .unwrap_or(0.0)
                .total_cmp(&x.share.unwrap_or(0.0))
                .then(y.total_bytes.cmp(&x.total_bytes))
        }),
        TopSort::Huge => rows.sort_by_key(|r| std::cmp::Reverse(r.huge_bytes)),
        TopSort::Rss => rows.sort_by_key(|r| std::cmp::Reverse(r.total_bytes)),
    }
    rows.truncate(a.limit);
    let t = CgroupTop {
        schema: "hugelab.top-cgroups/1",
        hierarchies: h.describe(),
        depth: a.depth,
        groups_read,
        rows,
    };
    if a.out.json {
        print_json(&t)?;
    } else {
        print!("{}", crate::render::cgroups::top(&t));
    }
    Ok(0)
}
