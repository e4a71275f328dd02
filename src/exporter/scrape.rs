//! One scrape: the machine's status (the probes `status` uses), the watched processes —
//! smaps_rollup read less often for a process whose walk costs more than `--budget`, and, as
//! root, each one's folio-size pass advanced by at most `--budget` — and the exporter's health.

use super::ExporterArgs;
use super::stalls::Stalls;
use crate::collect::folio_scan::{FolioScan, ScanError};
use crate::error::UsageError;
use crate::model::cgroup::CgroupRow;
use crate::model::exporter::{CgroupScrape, ExporterHealth, Scrape, WatchedProcess};
use crate::probe::Root;
use crate::probe::process::{Rollup, comm};
use crate::probe::status;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What the exporter remembers of one watched process between scrapes.
struct Watch {
    comm: String,
    /// The totals of the last smaps walk, the share of the memory that matters on huge pages
    /// (`analyze::flagged`, `None` when too small to judge), and when it was read.
    rollup: Option<(Rollup, Option<f64>, Instant)>,
    /// Scrapes to skip before the next smaps_rollup read (its last read cost more than the budget).
    skip: u64,
    scan: Option<FolioScan>,
}

pub struct Exporter {
    root: Root,
    pids: Vec<u32>,
    names: Vec<String>,
    top: Option<usize>,
    budget: Duration,
    folio_every: Duration,
    watched: BTreeMap<u32, Watch>,
    /// Why folio sizes are off (not root), said once in the errors and never retried.
    folios_unavailable: Option<String>,
    pub health: ExporterHealth,
    /// `--trace`: the stall histograms the trace thread keeps.
    stalls: Option<std::sync::Arc<std::sync::Mutex<Stalls>>>,
    cgroups: Cgroups,
}

/// The cgroup walk between scrapes: how many groups and how deep, and the last rows (a walk
/// that cost more than the budget is repeated less often, like a process's smaps).
struct Cgroups {
    top: usize,
    depth: usize,
    last: Option<(Vec<CgroupRow>, usize, Instant)>,
    skip: u64,
}

impl Exporter {
    pub fn new(a: &ExporterArgs) -> Result<Exporter, UsageError> {
        Exporter::with_root(a, Root::system())
    }

    /// An exporter reading the machine under `root` (fixtures in tests; processes are always
    /// this machine's).
    pub fn with_root(a: &ExporterArgs, root: Root) -> Result<Exporter, UsageError> {
        if a.budget.is_zero() || a.budget > Duration::from_secs(10) {
            return Err(UsageError(format!(
                "--budget {:?} must be between 1ms and 10s",
                a.budget
            )));
        }
        {
            use crate::analyze::trace::TraceKind;
            let stalls = [
                TraceKind::Compaction,
                TraceKind::Reclaim,
                TraceKind::Migrate,
            ];
            if let Some(x) = a.trace.iter().find(|k| !stalls.contains(k)) {
                return Err(UsageError(format!(
                    "--trace {}: the exporter keeps stall histograms only: compaction, reclaim, migrate",
                    x.name()
                )));
            }
        }
        if a.once
            && let Some(p) = a.pid.iter().find(|p| comm(**p).is_none())
        {
            return Err(UsageError(format!(
                "--pid {p}: no such process (see ps, or use --name COMM to follow a process by name)"
            )));
        }
        if a.top == Some(0) {
            return Err(UsageError("--top 0 watches nothing; give N ≥ 1".into()));
        }
        Ok(Exporter {
            root,
            pids: a.pid.clone(),
            names: a.name.clone(),
            top: a.top,
            budget: a.budget,
            folio_every: a.folio_every,
            watched: BTreeMap::new(),
            folios_unavailable: None,
            stalls: None,
            cgroups: Cgroups {
                top: a.cgroups,
                depth: a.cgroup_depth,
                last: None,
                skip: 0,
            },
            health: ExporterHealth {
                budget_s: a.budget.as_secs_f64(),
                ..Default::default()
            },
        })
    }

    fn error(&mut self, source: &str) {
        *self.health.errors.entry(source.into()).or_insert(0) += 1;
    }

    /// The processes to watch this scrape: named pids that still exist, processes by name, and
    /// the largest by VmRSS.
    fn selection(&self) -> Vec<(u32, String)> {
        let mut out: BTreeMap<u32, String> = BTreeMap::new();
        for &pid in &self.pids {
            if let Some(c) = comm(pid) {
                out.insert(pid, c);
            }
        }
        if self.names.is_empty() && self.top.is_none() {
            return out.into_iter().collect();
        }
        let mut by_rss = Vec::new();
        for pid in crate::probe::process::all_pids(&Root::system()) {
            let Some(c) = comm(pid) else { continue };
            if self.names.contains(&c) {
                out.insert(pid, c.clone());
            }
            if self.top.is_some()
                && let Ok(st) = crate::probe::process::Proc::system(pid).status()
                && let Some(rss) = st.vm_rss
            {
                by_rss.push((rss, pid, c));
            }
        }
        if let Some(n) = self.top {
            by_rss.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, pid, c) in by_rss.into_iter().take(n) {
                out.insert(pid, c);
            }
        }
        out.into_iter().collect()
    }

    /// One watched process's numbers, or `None` when it is gone (its series drop).
    fn process(&mut self, pid: u32, comm: String) -> Option<WatchedProcess> {
        let root_folios = self.folios_unavailable.is_none();
        let (budget, every) = (self.budget, self.folio_every);
        let w = self.watched.entry(pid).or_insert_with(|| Watch {
            comm: comm.clone(),
            rollup: None,
            skip: 0,
            scan: None,
        });
        if w.comm != comm {
            // The pid was reused by another program.
            *w = Watch {
                comm: comm.clone(),
                rollup: None,
                skip: 0,
                scan: None,
            };
        }
        let mut walked = Duration::ZERO;
        let mut errors: Vec<&str> = Vec::new();
        if w.skip > 0 && w.rollup.is_some() {
            w.skip -= 1;
        } else {
            let t = Instant::now();
            // One walk of /proc/PID/smaps: its totals (what smaps_rollup sums) and its regions,
            // so the memory that matters is judged by the rule `run` uses.
            let mem = crate::collect::server::read_pids(&[pid as i32]);
            if mem.processes == 1 {
                let r = Rollup {
                    rss: mem.rss,
                    anon_huge: mem.anon_huge,
                    shmem_pmd: mem.shmem_pmd,
                    file_pmd: mem.file_pmd,
                    hugetlb: mem.hugetlb_total(),
                    pss: 0,
                };
                let share =
                    crate::analyze::flagged::judge(crate::backing::arm::Expect::Huge, &mem, None)
                        .map(|j| j.share);
                w.rollup = Some((r, share, Instant::now()));
            } else if !crate::probe::process::Proc::system(pid).exists() {
                return None;
            } else {
                errors.push("process");
            }
            let cost = t.elapsed();
            walked += cost;
            // Skip as many scrapes as this read cost budgets: the mean walk per scrape stays
            // within --budget.
            w.skip = (cost.as_secs_f64() / budget.as_secs_f64()).ceil() as u64 - 1;
        }
        let mut unavailable = None;
        if root_folios && walked < budget {
            if w.scan.is_none() {
                match FolioScan::new(pid) {
                    Ok(s) => w.scan = Some(s),
                    Err(ScanError::Gone(_)) => return None,
                    Err(_) => errors.push("folios"),
                }
            }
            if let Some(scan) = w.scan.as_mut() {
                match scan.advance(budget - walked, every) {
                    Ok(d) => walked += d,
                    Err(ScanError::Gone(_)) => return None,
                    Err(ScanError::Unavailable(why)) => {
                        unavailable = Some(why);
                        w.scan = None;
                    }
                    Err(ScanError::Io { .. }) => {
                        errors.push("folios");
                        w.scan = None;
                    }
                }
            }
        }
        let (r, matters, at) = w.rollup?;
        let folios = w.scan.as_ref().and_then(|s| s.last.clone());
        let folio_pass_progress = w.scan.as_ref().and_then(FolioScan::progress);
        let out = WatchedProcess {
            pid,
            comm,
            resident: r.resident(),
            huge: BTreeMap::from([
                ("anon_thp".to_string(), r.anon_huge),
                ("shmem_pmd".to_string(), r.shmem_pmd),
                ("file_pmd".to_string(), r.file_pmd),
                ("hugetlb".to_string(), r.hugetlb),
            ]),
            coverage: (r.resident() > 0).then(|| r.huge() as f64 / r.resident() as f64),
            matters,
            rollup_age_s: at.elapsed().as_secs_f64(),
            folios_age_s: folios.as_ref().map(|(_, t)| t.elapsed().as_secs_f64()),
            folios: folios.map(|(f, _)| f),
            folio_pass_progress,
        };
        self.health.max_walk_s = self.health.max_walk_s.max(walked.as_secs_f64());
        for e in errors {
            self.error(e);
        }
        if let Some(why) = unavailable {
            self.folios_unavailable = Some(why);
            self.error("folios");
        }
        Some(out)
    }

    /// Collect one scrape.
    pub fn scrape(&mut self) -> anyhow::Result<Scrape> {
        let t = Instant::now();
        let status = match status::probe(&self.root) {
            Ok(s) => s,
            Err(e) => {
                self.error("status");
                return Err(anyhow::Error::new(e).context("probing the machine"));
            }
        };
        let selection = self.selection();
        let mut processes = Vec::new();
        for (pid, comm) in selection {
            if let Some(p) = self.process(pid, comm) {
                processes.push(p);
            }
        }
        let live: Vec<u32> = processes.iter().map(|p| p.pid).collect();
        // Folio sizes promised (as root) for a process whose first pass has not completed —
        // or not started, where reading its smaps took the whole budget.
        let waiting = if self.folios_unavailable.is_none() {
            processes.iter().filter(|p| p.folios.is_none()).count() as u64
        } else {
            0
        };
        self.health
            .pending
            .insert("process_folio_bytes".into(), waiting);
        let watched_up: Vec<(u32, bool)> =
            self.pids.iter().map(|p| (*p, live.contains(p))).collect();
        self.watched.retain(|pid, _| live.contains(pid));
        self.health.scrapes += 1;
        self.health.last_duration_s = t.elapsed().as_secs_f64();
        let (stalls, trace_lost) = match &self.stalls {
            Some(s) => {
                let s = s.lock().unwrap_or_else(|e| e.into_inner());
                (s.histograms(), Some(s.lost))
            }
            None => (Vec::new(), None),
        };
        Ok(Scrape {
            status,
            processes,
            watched_up,
            health: self.health.clone(),
            version: env!("CARGO_PKG_VERSION"),
            stalls,
            trace_lost,
            cgroups: self.cgroups(),
        })
    }

    /// The largest cgroups by memory (the root left out: the machine-wide series are its),
    /// read again once the walk's cost is within the budget.
    fn cgroups(&mut self) -> Option<CgroupScrape> {
        use crate::probe::cgroup;
        let budget = self.budget;
        let c = &mut self.cgroups;
        if c.top == 0 {
            return None;
        }
        if c.skip > 0 && c.last.is_some() {
            c.skip -= 1;
        } else {
            let t = Instant::now();
            let walked =
                cgroup::hierarchies(&self.root).and_then(|h| cgroup::walk(&self.root, &h, c.depth));
            match walked {
                Ok(groups) => {
                    let read = groups.len().saturating_sub(1);
                    let mut rows: Vec<CgroupRow> = groups
                        .into_iter()
                        .filter(|g| g.path != "/")
                        .map(CgroupRow::from)
                        .collect();
                    rows.sort_by(|x, y| {
                        y.total_bytes
                            .cmp(&x.total_bytes)
                            .then(x.group.path.cmp(&y.group.path))
                    });
                    rows.truncate(c.top);
                    crate::model::cgroup::mark_leaves(&mut rows);
                    c.last = Some((rows, read, Instant::now()));
                }
                Err(_) => {
                    *self.health.errors.entry("cgroups".into()).or_insert(0) += 1;
                }
            }
            let cost = t.elapsed();
            c.skip = ((cost.as_secs_f64() / budget.as_secs_f64()).ceil() as u64).saturating_sub(1);
        }
        let (rows, read, at) = c.last.as_ref()?;
        Some(CgroupScrape {
            rows: rows.clone(),
            read: *read,
            age_s: at.elapsed().as_secs_f64(),
        })
    }

    /// `--trace`: the histograms the trace thread fills, exported with every scrape.
    pub fn set_stalls(&mut self, stalls: std::sync::Arc<std::sync::Mutex<Stalls>>) {
        self.stalls = Some(stalls);
    }

    /// Why folio sizes are not exported, if they are not.
    pub fn folio_note(&self) -> Option<&str> {
        self.folios_unavailable.as_deref()
    }
}
