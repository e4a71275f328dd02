//! `hugelab bench`: plan (validate sizes, backings, pools and knobs against the probed
//! machine), set up verified regions, run interleaved randomized rounds, analyse, render.

use super::{UsageError, print_json};
use crate::analyze::bench::{Observation, analyse};
use crate::analyze::coverage::huge_coverage;
use crate::backing::{Backing, Region};
use crate::collect::coverage::{RegionEvidence, region_evidence};
use crate::collect::perf::Counters;
use crate::collect::{deltas, huge_counters};
use crate::control::{Guard, Knob};
pub use crate::model::bench::{BenchResult, CellEvidence, Plan, Skipped};
use crate::probe::Root;
use crate::probe::pmu::PerfEvent;
use crate::probe::status::{self, Status};
use crate::render::progress::{Observer, Progress};
use crate::units::{Bytes, parse_duration};
use crate::workload::{self, Sample, Workload, kernels};
use anyhow::Context;
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "hugelab.bench/1";
const DEFAULT_SIZES: [u64; 6] = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30];
/// Memory left to everything else when sizing regions.
const MARGIN_MIN: u64 = 1 << 30;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Workloads: touch, chase, pretouch, stream, fault [default: touch chase pretouch]
    pub workloads: Vec<String>,
    /// Region sizes, comma-separated (K/M/G suffixes) [default: 4K,64K,1M,16M,256M,1G, capped by MemAvailable]
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Page backings, comma-separated: 4k, thp, thp-collapse, hugetlb-2m, hugetlb-1g, mthp-<size>
    /// [default: 4k,thp,hugetlb-2m, plus hugetlb-1g when a 1 GiB page can be had]
    #[arg(long, value_delimiter = ',')]
    pub backings: Vec<String>,
    /// Measured rounds; each round runs every backing once, in random order (≥ 11 for a 99.9% ratio interval)
    #[arg(long, default_value_t = 12)]
    pub rounds: usize,
    /// Target duration of one touch/chase iteration
    #[arg(long, default_value = "20ms", value_parser = parse_duration)]
    pub iteration_time: Duration,
    /// Threads for touch and stream
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Confidence level of intervals
    #[arg(long, default_value_t = 0.999, value_parser = super::parse_confidence)]
    pub confidence: f64,
    /// Seed for round order and access patterns (default: from the clock; printed)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Do not grow hugetlb pools, even as root (skip hugetlb backings the pool cannot serve)
    #[arg(long)]
    pub no_grow: bool,
    /// Print JSON (schema hugelab.bench/1, see docs/json.md)
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr
    #[arg(long, short)]
    pub quiet: bool,
    /// Results database to save the run in (default $XDG_DATA_HOME/hugelab/results.db)
    #[arg(long)]
    pub db: Option<std::path::PathBuf>,
    /// Do not save the run in the results database
    #[arg(long)]
    pub no_save: bool,
}

fn parse_list<T: std::str::FromStr<Err = String>>(items: &[String]) -> Result<Vec<T>, UsageError> {
    let mut out = Vec::new();
    for s in items
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
    {
        out.push(s.parse().map_err(UsageError)?);
    }
    Ok(out)
}

/// Turn arguments plus the probed machine into a plan, or a usage error naming the fix.
pub fn plan(a: &BenchArgs, st: &Status) -> Result<(Plan, Vec<String>), UsageError> {
    let mut notes = Vec::new();
    let mut workloads: Vec<Workload> = parse_list(&a.workloads)?;
    if workloads.is_empty() {
        workloads = vec![Workload::Touch, Workload::Chase, Workload::Pretouch];
    }
    workloads.dedup();
    let explicit_backings = !a.backings.is_empty();
    let mut backings: Vec<Backing> = parse_list(&a.backings)?;
    if backings.is_empty() {
        backings = vec![
            Backing::Base,
            Backing::Thp,
            Backing::Hugetlb { page_size: 2 << 20 },
        ];
        if st.cpu.pdpe1gb && st.hugetlb.iter().any(|p| p.page_size == 1 << 30) {
            backings.push(Backing::Hugetlb { page_size: 1 << 30 });
        }
    }
    if !backings.contains(&Backing::Base) {
        backings.insert(0, Backing::Base);
        notes.push("added the 4k baseline: every ratio is against it".into());
    }
    let mut seen = Vec::new();
    backings.retain(|b| {
        let new = !seen.contains(b);
        seen.push(*b);
        new
    });
    for b in &backings {
        match *b {
            Backing::Mthp { size } if !st.thp.mthp.iter().any(|m| m.size_bytes == size) => {
                let have: Vec<String> = st
                    .thp
                    .mthp
                    .iter()
                    .map(|m| Bytes(m.size_bytes).to_string())
                    .collect();
                return Err(UsageError(format!(
                    "this kernel has no mTHP size {} (available: {})",
                    Bytes(size),
                    if have.is_empty() {
                        "none; mTHP needs Linux 6.8+".into()
                    } else {
                        have.join(", ")
                    }
                )));
            }
            Backing::Hugetlb { page_size }
                if !st.hugetlb.iter().any(|p| p.page_size == page_size) =>
            {
                return Err(UsageError(format!(
                    "this kernel offers no {} hugetlb pages",
                    Bytes(page_size)
                )));
            }
            Backing::Hugetlb { page_size }
                if page_size == 1 << 30 && !st.cpu.pdpe1gb && explicit_backings =>
            {
                return Err(UsageError(
                    "hugetlb-1g: this CPU has no 1 GiB pages (no pdpe1gb flag)".into(),
                ));
            }
            _ => {}
        }
    }
    let available = st.memory.mem_available.unwrap_or(0);
    let margin = MARGIN_MIN.max(available / 10);
    let budget = available.saturating_sub(margin);
    let resident = workloads.iter().any(|w| w.uses_resident_region());
    let mapped = |size: u64| -> u64 {
        let per: Vec<u64> = backings
            .iter()
            .map(|b| size.next_multiple_of(b.page_size()))
            .collect();
        if resident {
            per.iter().sum()
        } else {
            per.into_iter().max().unwrap_or(0)
        }
    };
    let mut sizes: Vec<u64> = Vec::new();
    if a.sizes.is_empty() {
        for s in DEFAULT_SIZES {
            if mapped(s) <= budget {
                sizes.push(s);
            } else {
                notes.push(format!(
                    "default size {} skipped: needs {} with {} backings, MemAvailable {} leaves {}",
                    Bytes(s),
                    Bytes(mapped(s)),
                    backings.len(),
                    Bytes(available),
                    Bytes(budget)
                ));
            }
        }
    } else {
        for s in a.sizes.iter().flat_map(|s| s.split(',')) {
            let b: Bytes = s
                .parse()
                .map_err(|e: crate::units::SizeError| UsageError(e.to_string()))?;
            if b.0 < 4096 {
                return Err(UsageError(format!("size {s:?} is below one 4 KiB page")));
            }
            if mapped(b.0) > budget {
                return Err(UsageError(format!(
                    "size {s} needs {} of memory across {} backings, but MemAvailable is {} and hugelab leaves {} to the rest of the system; use a smaller size or fewer backings",
                    Bytes(mapped(b.0)),
                    backings.len(),
                    Bytes(available),
                    Bytes(margin)
                )));
            }
            sizes.push(b.0);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return Err(UsageError(format!(
            "no size fits in MemAvailable {} minus a {} margin",
            Bytes(available),
            Bytes(margin)
        )));
    }
    if a.rounds < 2 {
        return Err(UsageError(format!(
            "--rounds {} is too few: at least 2 (11 or more for a 99.9% interval)",
            a.rounds
        )));
    }
    super::check_confidence(a.confidence)?;
    if a.threads == 0 || a.threads > 1024 {
        return Err(UsageError(format!(
            "--threads {} must be between 1 and 1024",
            a.threads
        )));
    }
    if st
        .thp
        .enabled
        .as_ref()
        .is_some_and(|e| e.selected == "never")
        && backings
            .iter()
            .any(|b| matches!(b, Backing::Thp | Backing::ThpCollapse))
    {
        notes.push("THP is `never` system-wide: thp backings will get 4 KiB pages (their coverage shows it)".into());
    }
    let seed = super::seed_or_clock(a.seed);
    Ok((
        Plan {
            workloads,
            sizes,
            backings,
            rounds: a.rounds,
            threads: a.threads,
            confidence: a.confidence,
            seed,
            iteration_ns: a.iteration_time.as_nanos().max(1_000_000) as u64,
        },
        notes,
    ))
}

/// Make hugetlb pools and mTHP knobs ready. Returns backings that cannot run, with reasons.
fn prepare_system(
    plan: &Plan,
    st: &Status,
    guard: &mut Option<Guard>,
    grow: bool,
    changed: &mut Vec<String>,
) -> anyhow::Result<Vec<Skipped>> {
    let mut skipped = Vec::new();
    let max_size = plan.sizes.iter().copied().max().unwrap_or(0);
    for &b in &plan.backings {
        match b {
            Backing::Hugetlb { page_size } => {
                let pool = st
                    .hugetlb
                    .iter()
                    .find(|p| p.page_size == page_size)
                    .expect("validated in plan");
                let need = max_size.div_ceil(page_size);
                if pool.available() >= need {
                    continue;
                }
                let short = need - pool.available();
                if !grow || !st.is_root {
                    skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: None,
                        reason: format!(
                            "the {} pool has {} free unreserved pages, {} needed; {}",
                            Bytes(page_size),
                            pool.available(),
                            need,
                            if st.is_root { "drop --no-grow to let hugelab grow it for the run".into() } else { format!("run as root, or `echo {} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`", pool.total + short, page_size / 1024) }
                        ),
                    });
                    continue;
                }
                let g = guard_mut(guard)?;
                let knob = Knob::HugetlbPages {
                    size: page_size,
                    node: None,
                };
                let want = pool.total + short;
                let applied = g.set(knob, &want.to_string())?;
                changed.push(format!(
                    "{knob}: {} → {} (asked {want})",
                    pool.total, applied.actual
                ));
                if applied.actual.parse::<u64>().unwrap_or(0) < want {
                    skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: None,
                        reason: format!("the kernel could only grow the {} pool to {} of {want} pages (memory too fragmented or too little free)", Bytes(page_size), applied.actual),
                    });
                }
            }
            Backing::Mthp { size } => {
                let m = st
                    .thp
                    .mthp
                    .iter()
                    .find(|m| m.size_bytes == size)
                    .expect("validated in plan");
                if m.enabled.as_ref().is_some_and(|e| e.selected == "always") {
                    continue;
                }
                if !st.is_root {
                    skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: None,
                        reason: format!(
                            "mTHP {} is not `always` and changing it needs root",
                            Bytes(size)
                        ),
                    });
                    continue;
                }
                changed.push(format!(
                    "mthp.{}: {} → always while each of its regions faults in (one mTHP size at a time; this affects the whole machine meanwhile)",
                    Bytes(size),
                    m.enabled.as_ref().map_or("-", |e| e.selected.as_str())
                ));
            }
            _ => {}
        }
    }
    Ok(skipped)
}

/// Turn one mTHP size on to `always` while `f` faults memory in, then back, so each
/// mthp-<size> region gets exactly its size (the kernel prefers the largest enabled size).
fn with_mthp<T>(
    b: Backing,
    st: &Status,
    guard: &mut Option<Guard>,
    f: impl FnOnce() -> T,
) -> anyhow::Result<T> {
    let Backing::Mthp { size } = b else {
        return Ok(f());
    };
    let knob = Knob::MthpEnabled { size };
    let already = st.thp.mthp.iter().any(|m| {
        m.size_bytes == size && m.enabled.as_ref().is_some_and(|e| e.selected == "always")
    });
    if already || !st.is_root {
        return Ok(f());
    }
    let g = guard_mut(guard)?;
    g.set(knob, "always")?;
    let out = f();
    let original = g.original(&knob).unwrap_or("never").to_string();
    g.set(knob, &original)?;
    Ok(out)
}

fn guard_mut(guard: &mut Option<Guard>) -> anyhow::Result<&mut Guard> {
    if guard.is_none() {
        *guard = Some(Guard::system()?);
    }
    Ok(guard.as_mut().expect("just set"))
}

fn record(
    observations: &mut Vec<Observation>,
    samples: Vec<Sample>,
    size: u64,
    backing: Backing,
    round: usize,
) {
    observations.extend(samples.into_iter().map(|s| Observation {
        metric: s.metric,
        size,
        backing,
        round,
        value: s.value,
    }));
}

struct PerOp {
    sums: BTreeMap<PerfEvent, f64>,
    n: usize,
}

impl PerOp {
    fn new() -> Self {
        PerOp {
            sums: BTreeMap::new(),
            n: 0,
        }
    }
    fn add(&mut self, counts: &BTreeMap<PerfEvent, u64>, ops: u64) {
        for (e, v) in counts {
            *self.sums.entry(*e).or_insert(0.0) += *v as f64 / ops.max(1) as f64;
        }
        self.n += 1;
    }
    fn mean(&self) -> BTreeMap<PerfEvent, f64> {
        self.sums
            .iter()
            .map(|(e, v)| (*e, v / self.n.max(1) as f64))
            .collect()
    }
}

const EVENTS: [PerfEvent; 5] = [
    PerfEvent::PageFaults,
    PerfEvent::DtlbLoadMisses,
    PerfEvent::DtlbLoads,
    PerfEvent::Cycles,
    PerfEvent::DtlbWalkCycles,
];

/// Run the plan. `skipped` backings are left out; everything else is measured.
pub fn execute(
    plan: &Plan,
    st: &Status,
    skipped: &mut Vec<Skipped>,
    guard: &mut Option<Guard>,
    obs: &mut dyn Observer,
    sink: &mut dyn FnMut(&[Observation], &[CellEvidence]),
) -> anyhow::Result<(Vec<Observation>, Vec<CellEvidence>, Vec<String>)> {
    let root = Root::system();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(plan.seed);
    let mut counters = Counters::open(&EVENTS, &st.cpu, plan.threads > 1);
    let mut notes = Vec::new();
    let hw: Vec<&(PerfEvent, String)> = counters
        .unavailable
        .iter()
        .filter(|(e, _)| *e != PerfEvent::PageFaults)
        .collect();
    if let Some((_, why)) = hw.first() {
        let names: Vec<&str> = hw.iter().map(|(e, _)| e.name()).collect();
        notes.push(format!("not counted: {} — {why}", names.join(", ")));
    }
    let mut observations = Vec::new();
    let mut evidence = Vec::new();
    let active = |b: &Backing, skipped: &[Skipped], size: u64| {
        !skipped
            .iter()
            .any(|s| s.backing == *b && s.size.is_none_or(|x| x == size))
    };

    for &size in &plan.sizes {
        let resident: Vec<Workload> = plan
            .workloads
            .iter()
            .copied()
            .filter(|w| w.uses_resident_region())
            .collect();
        if !resident.is_empty() {
            obs.message(&format!(
                "{}: setting up {} regions",
                Bytes(size),
                plan.backings.len()
            ));
            let mut regions: Vec<Region> = Vec::new();
            let mut setup_counters = Vec::new();
            let usable: Vec<Backing> = plan
                .backings
                .iter()
                .copied()
                .filter(|b| active(b, skipped, size))
                .collect();
            for b in usable {
                let before = huge_counters(&root);
                let r = with_mthp(b, st, guard, || {
                    Region::map(size, b).and_then(|mut r| r.prepare().map(|_| r))
                })?;
                match r {
                    Ok(r) => {
                        setup_counters.push(deltas(&before, &huge_counters(&root)));
                        regions.push(r);
                    }
                    Err(e) => skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: Some(size),
                        reason: e.to_string(),
                    }),
                }
            }
            if resident.contains(&Workload::Chase)
                && let Some((first, rest)) = regions.split_first_mut()
            {
                {
                    kernels::build_chase(first.as_words_mut(), plan.seed);
                    for r in rest {
                        r.as_words_mut().copy_from_slice(first.as_words());
                    }
                }
            }
            let region_ev: Vec<RegionEvidence> = regions
                .iter()
                .map(|r| region_evidence(r.start(), r.mapped_len() as u64))
                .collect::<std::io::Result<_>>()
                .context("reading the regions' smaps and pagemap")?;
            // The cells' evidence now, so that each round is saved with its coverage.
            let ev0 = evidence.len();
            for (i, r) in regions.iter().enumerate() {
                for &w in &resident {
                    evidence.push(CellEvidence {
                        workload: w,
                        size,
                        backing: r.backing(),
                        coverage: huge_coverage(r.backing(), &region_ev[i]),
                        region: region_ev[i].clone(),
                        kernel_counters: setup_counters[i].clone(),
                        per_op: BTreeMap::new(),
                    });
                }
            }
            // Calibrate op counts on the baseline so every backing does the same work.
            let mut ops: BTreeMap<Workload, u64> = BTreeMap::new();
            if let Some(base) = regions.first() {
                for &w in &resident {
                    let probe_ops = 20_000u64;
                    let t = Instant::now();
                    match w {
                        Workload::Touch => {
                            workload::run_touch(base, probe_ops, 1, plan.seed);
                        }
                        Workload::Chase => {
                            workload::run_chase(base, probe_ops);
                        }
                        _ => {}
                    }
                    let per = t.elapsed().as_nanos().max(1) as u64 / probe_ops;
                    ops.insert(
                        w,
                        (plan.iteration_ns / per.max(1)).clamp(10_000, 500_000_000),
                    );
                }
            }
            let mut per_op: Vec<BTreeMap<Workload, PerOp>> =
                regions.iter().map(|_| BTreeMap::new()).collect();
            let mut order: Vec<usize> = (0..regions.len()).collect();
            for round in 0..=plan.rounds {
                let warmup = round == 0;
                if !warmup {
                    obs.step(&format!("{}: round {round}/{}", Bytes(size), plan.rounds));
                }
                let saved = observations.len();
                order.shuffle(&mut rng);
                for &i in &order {
                    for &w in &resident {
                        counters.start();
                        let samples: Vec<Sample> = match w {
                            Workload::Touch => vec![workload::run_touch(
                                &regions[i],
                                ops[&w],
                                plan.threads,
                                plan.seed ^ round as u64,
                            )],
                            Workload::Chase => vec![workload::run_chase(&regions[i], ops[&w])],
                            Workload::Stream => {
                                workload::run_stream(&mut regions[i], plan.threads).to_vec()
                            }
                            _ => unreachable!("resident workloads only"),
                        };
                        let counts = counters.stop();
                        if warmup {
                            continue;
                        }
                        per_op[i]
                            .entry(w)
                            .or_insert_with(PerOp::new)
                            .add(&counts, samples[0].ops);
                        record(
                            &mut observations,
                            samples,
                            size,
                            regions[i].backing(),
                            round - 1,
                        );
                    }
                }
                sink(&observations[saved..], &evidence);
            }
            // The per-operation counts are known once the rounds are done.
            for (i, r) in regions.iter().enumerate() {
                for (wi, w) in resident.iter().enumerate() {
                    evidence[ev0 + i * resident.len() + wi].per_op =
                        per_op[i].get(w).map(PerOp::mean).unwrap_or_default();
                    debug_assert_eq!(evidence[ev0 + i * resident.len() + wi].backing, r.backing());
                }
            }
        }
        for &w in plan.workloads.iter().filter(|w| !w.uses_resident_region()) {
            let fresh_saved = observations.len();
            let mut backings: Vec<Backing> = plan
                .backings
                .iter()
                .copied()
                .filter(|b| active(b, skipped, size))
                .collect();
            // Committing less than one page would measure zeroing a whole page, not commit speed.
            backings.retain(|b| {
                let fits = b.page_size() <= size;
                if !fits {
                    skipped.push(Skipped {
                        below_page: true,
                        backing: *b,
                        size: Some(size),
                        reason: format!(
                            "{} region is smaller than one {} page: {} not measured",
                            Bytes(size),
                            Bytes(b.page_size()),
                            w.name()
                        ),
                    });
                }
                fits
            });
            let mut first: BTreeMap<Backing, (RegionEvidence, BTreeMap<String, u64>)> =
                BTreeMap::new();
            let mut per_op: BTreeMap<Backing, PerOp> = BTreeMap::new();
            let mut failed: Vec<Backing> = Vec::new();
            let mut order = backings.clone();
            for round in 0..=plan.rounds {
                if round > 0 {
                    obs.step(&format!(
                        "{}: {} round {round}/{}",
                        Bytes(size),
                        w.name(),
                        plan.rounds
                    ));
                }
                order.shuffle(&mut rng);
                for &b in &order {
                    if failed.contains(&b) {
                        continue;
                    }
                    let want_evidence = round == 1;
                    let before = want_evidence.then(|| huge_counters(&root));
                    let mut ev = None;
                    let samples = with_mthp(b, st, guard, || {
                        let region = Region::map(size, b)?;
                        counters.start();
                        Ok::<_, std::io::Error>(workload::run_pretouch(region, w, |r| {
                            if want_evidence {
                                ev = Some(region_evidence(r.start(), r.mapped_len() as u64));
                            }
                        }))
                    })?;
                    let samples = match samples {
                        Ok(s) => s,
                        Err(e) => {
                            skipped.push(Skipped {
                                below_page: false,
                                backing: b,
                                size: Some(size),
                                reason: e.to_string(),
                            });
                            failed.push(b);
                            continue;
                        }
                    };
                    let counts = counters.stop();
                    if round == 0 {
                        continue;
                    }
                    if let (Some(before), Some(ev)) = (before, ev) {
                        first.insert(
                            b,
                            (
                                ev.context("reading the region's smaps and pagemap")?,
                                deltas(&before, &huge_counters(&root)),
                            ),
                        );
                    }
                    per_op
                        .entry(b)
                        .or_insert_with(PerOp::new)
                        .add(&counts, samples[0].ops);
                    record(&mut observations, samples, size, b, round - 1);
                }
            }
            for (b, (ev, kc)) in first {
                evidence.push(CellEvidence {
                    workload: w,
                    size,
                    backing: b,
                    coverage: huge_coverage(b, &ev),
                    region: ev,
                    kernel_counters: kc,
                    per_op: per_op.get(&b).map(PerOp::mean).unwrap_or_default(),
                });
            }
            // Fresh-memory rounds are short: saved when this workload's rounds at this size end
            // (their coverage is known from the first round).
            sink(&observations[fresh_saved..], &evidence);
        }
    }
    Ok((observations, evidence, notes))
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let st = status::probe(&Root::system()).context("probing the machine")?;
    let (plan, mut notes) = plan(&a, &st)?;
    let mut obs = Progress::stderr("hugelab bench", a.quiet);
    // One step per measured round of each size: the resident workloads share a round, each
    // fresh-memory workload has its own.
    let resident = plan.workloads.iter().any(|w| w.uses_resident_region()) as usize;
    let fresh = plan
        .workloads
        .iter()
        .filter(|w| !w.uses_resident_region())
        .count();
    let steps = plan.sizes.len() * plan.rounds * (resident + fresh);
    obs.phase("rounds", Some(steps as u64));
    obs.message(&format!(
        "{} × sizes {} × backings {}, {} rounds, seed {}",
        plan.workloads
            .iter()
            .map(|w| w.name())
            .collect::<Vec<_>>()
            .join(","),
        plan.sizes
            .iter()
            .map(|s| Bytes(*s).to_string())
            .collect::<Vec<_>>()
            .join(","),
        plan.backings
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(","),
        plan.rounds,
        plan.seed
    ));
    let mut guard = None;
    let mut changed = Vec::new();
    let mut skipped = prepare_system(&plan, &st, &mut guard, !a.no_grow, &mut changed)?;
    let mut saver = if a.no_save {
        None
    } else {
        match Saver::start(&plan, Some(&st), st.kernel.as_deref(), a.db.as_deref()) {
            Ok(s) => Some(s),
            Err(e) => {
                notes.push(format!("not saved to the results database: {e:#}"));
                None
            }
        }
    };
    let mut save_error: Option<String> = None;
    let mut sink = |o: &[Observation], e: &[CellEvidence]| {
        if let Some(s) = saver.as_mut()
            && let Err(err) = s.add(o, e)
        {
            save_error = Some(format!("{err:#}"));
            saver = None;
        }
    };
    let result = execute(&plan, &st, &mut skipped, &mut guard, &mut obs, &mut sink);
    obs.done();
    if let Some(e) = save_error {
        notes.push(format!("saving stopped: {e}"));
    }
    if let Some(s) = saver.take() {
        match s.finish(if result.is_ok() { "complete" } else { "failed" }) {
            Ok(n) => notes.push(n),
            Err(e) => notes.push(format!("not saved to the results database: {e:#}")),
        }
    }
    if let Some(mut g) = guard.take() {
        for r in g.restore() {
            if !r.ok() {
                notes.push(format!("restore: {}", r.describe()));
            }
        }
    }
    let (observations, evidence, run_notes) = result?;
    notes.extend(run_notes);
    let mut cells = analyse(&observations, Backing::Base, plan.confidence);
    let rank = |b: &Backing| {
        plan.backings
            .iter()
            .position(|x| x == b)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by_key(|c| (c.metric, c.size, rank(&c.backing)));
    let res = BenchResult {
        schema: SCHEMA,
        kernel: st.kernel.clone(),
        cpu: st.cpu.model_name.clone(),
        plan,
        observations,
        cells,
        evidence,
        skipped,
        settings_changed: changed,
        notes,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    if a.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::bench::render(&res));
    }
    Ok(0)
}

/// A bench stored as a run while it runs: the run row at the start, each round's observations as
/// the round ends, so an interrupted bench keeps what it measured. Arms are the backings, one
/// trial per observation, metrics named `<metric>@<size>` (so `results show/export`, `compare`
/// and `report` work on benches too).
pub struct Saver {
    store: crate::store::Store,
    path: std::path::PathBuf,
    id: i64,
    backings: Vec<Backing>,
    seq: i64,
}

fn metric_name(m: crate::workload::Metric, size: u64) -> String {
    format!("{}@{}", m.label().replace(' ', "_"), Bytes(size))
}

impl Saver {
    pub fn start(
        plan: &Plan,
        system: Option<&Status>,
        kernel: Option<&str>,
        db: Option<&std::path::Path>,
    ) -> anyhow::Result<Saver> {
        use crate::analyze::experiment::MetricDef;
        use crate::analyze::verdict::Better;
        let path = db
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(crate::store::default_path);
        let mut store = crate::store::Store::open(&path)?;
        let mut metrics: Vec<MetricDef> = Vec::new();
        for w in &plan.workloads {
            for &m in w.metrics() {
                for &size in &plan.sizes {
                    metrics.push(MetricDef {
                        name: metric_name(m, size),
                        better: if m.higher_is_better() {
                            Better::Higher
                        } else {
                            Better::Lower
                        },
                    });
                }
            }
        }
        let arms: Vec<crate::store::ArmRow> = plan
            .backings
            .iter()
            .enumerate()
            .map(|(i, b)| crate::store::ArmRow {
                idx: i as i64,
                name: b.to_string(),
                spec: format!("bench backing {b}"),
            })
            .collect();
        let stored =
            serde_json::json!({"bench": plan, "baseline": 0, "metrics": metrics, "system": system});
        let command = vec!["hugelab".to_string(), "bench".to_string()];
        let id = store.create_run(Some("bench"), &command, kernel, "running", &stored, &arms)?;
        Ok(Saver {
            store,
            path,
            id,
            backings: plan.backings.clone(),
            seq: 0,
        })
    }

    /// Store observations, each with its cell's coverage evidence where it is known.
    pub fn add(&mut self, obs: &[Observation], evidence: &[CellEvidence]) -> anyhow::Result<()> {
        for o in obs {
            let arm = self
                .backings
                .iter()
                .position(|b| *b == o.backing)
                .unwrap_or(0);
            let ev = evidence
                .iter()
                .find(|e| {
                    e.backing == o.backing
                        && e.size == o.size
                        && e.workload.metrics().contains(&o.metric)
                })
                .map(|e| {
                    serde_json::json!({"coverage": e.coverage, "memory": {"coverage_at_peak": e.coverage.fraction}})
                })
                .unwrap_or(serde_json::Value::Null);
            self.store.add_trial(
                self.id,
                &crate::store::TrialRow {
                    block: o.round as i64,
                    arm_idx: arm as i64,
                    seq: self.seq,
                    ok: true,
                    flagged: None,
                    metrics: [(metric_name(o.metric, o.size), o.value)].into(),
                    evidence: ev,
                },
            )?;
            self.seq += 1;
        }
        Ok(())
    }

    pub fn finish(mut self, status: &str) -> anyhow::Result<String> {
        self.store.finish_run(self.id, status, None)?;
        Ok(format!(
            "saved as run {} in {} (`hugelab results show {}`)",
            self.id,
            self.path.display(),
            self.id
        ))
    }
}
