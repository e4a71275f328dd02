//! The measuring loop of a bench: regions set up and verified, then rounds that run every
//! backing once in random order.

use super::settings::BenchSettings;
use super::{CellEvidence, Plan, Skipped};
use crate::analyze::bench::Observation;
use crate::analyze::coverage::huge_coverage;
use crate::backing::{Backing, Region};
use crate::collect::coverage::{RegionEvidence, region_evidence};
use crate::collect::perf::Counters;
use crate::collect::{deltas, huge_counters};
use crate::probe::Root;
use crate::probe::pmu::PerfEvent;
use crate::probe::status::Status;
use crate::render::progress::Observer;
use crate::units::Bytes;
use crate::workload::{self, Sample, Workload, kernels};
use anyhow::Context;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::collections::BTreeMap;
use std::time::Instant;

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

/// Where a bench reads and counts: injected so that tests can point it at a fake root.
pub struct Instruments<'a> {
    /// Where the kernel's huge-page counters are read (`/` live).
    pub root: Root,
    pub counters: Counters,
    pub obs: &'a mut dyn Observer,
    /// Receives each round's new observations and the evidence so far, to save them.
    pub sink: &'a mut dyn FnMut(&[Observation], &[CellEvidence]),
}

impl Instruments<'_> {
    /// The counters a bench opens on this machine.
    pub fn counters(st: &Status, plan: &Plan) -> Counters {
        Counters::open(&EVENTS, &st.cpu, plan.threads > 1)
    }
}

/// What a bench measured.
pub struct Measured {
    pub observations: Vec<Observation>,
    pub evidence: Vec<CellEvidence>,
    pub notes: Vec<String>,
}

struct Bench<'p, 'e, 's> {
    plan: &'p Plan,
    st: &'p Status,
    sys: &'p mut BenchSettings<'s>,
    env: Instruments<'e>,
    rng: rand::rngs::SmallRng,
    skipped: &'p mut Vec<Skipped>,
    observations: Vec<Observation>,
    evidence: Vec<CellEvidence>,
}

/// Whether backing `b` is measured at `size`.
fn active(b: &Backing, skipped: &[Skipped], size: u64) -> bool {
    !skipped
        .iter()
        .any(|s| s.backing == *b && s.size.is_none_or(|x| x == size))
}

/// Run the plan. `skipped` backings are left out; everything else is measured.
pub fn execute(
    plan: &Plan,
    st: &Status,
    skipped: &mut Vec<Skipped>,
    sys: &mut BenchSettings,
    env: Instruments,
) -> anyhow::Result<Measured> {
    let mut notes = Vec::new();
    let hw: Vec<&(PerfEvent, String)> = env
        .counters
        .unavailable
        .iter()
        .filter(|(e, _)| *e != PerfEvent::PageFaults)
        .collect();
    if let Some((_, why)) = hw.first() {
        let names: Vec<&str> = hw.iter().map(|(e, _)| e.name()).collect();
        notes.push(format!("not counted: {} — {why}", names.join(", ")));
    }
    let mut bench = Bench {
        plan,
        st,
        sys,
        env,
        rng: rand::rngs::SmallRng::seed_from_u64(plan.seed),
        skipped,
        observations: Vec::new(),
        evidence: Vec::new(),
    };
    let resident: Vec<Workload> = plan
        .workloads
        .iter()
        .copied()
        .filter(|w| w.uses_resident_region())
        .collect();
    for &size in &plan.sizes {
        if !resident.is_empty() {
            bench.resident(size, &resident)?;
        }
        for &w in plan.workloads.iter().filter(|w| !w.uses_resident_region()) {
            bench.fresh(size, w)?;
        }
    }
    Ok(Measured {
        observations: bench.observations,
        evidence: bench.evidence,
        notes,
    })
}

impl Bench<'_, '_, '_> {
    /// The resident workloads at one size: one region per backing, set up and verified once,
    /// then every round runs each workload on each region.
    fn resident(&mut self, size: u64, resident: &[Workload]) -> anyhow::Result<()> {
        let Bench {
            plan,
            st,
            sys,
            env,
            rng,
            skipped,
            observations,
            evidence,
        } = self;
        let Instruments {
            root,
            counters,
            obs,
            sink,
        } = env;
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
            let before = huge_counters(root);
            let r = sys.with_mthp(b, st, || {
                Region::map(size, b).and_then(|mut r| r.prepare().map(|_| r))
            })?;
            match r {
                Ok(r) => {
                    setup_counters.push(deltas(&before, &huge_counters(root)));
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
        link_chains(&mut regions, resident, plan.seed);
        let region_ev: Vec<RegionEvidence> = regions
            .iter()
            .map(|r| region_evidence(r.start(), r.mapped_len() as u64))
            .collect::<std::io::Result<_>>()
            .context("reading the regions' smaps and pagemap")?;
        // The cells' evidence now, so that each round is saved with its coverage.
        let ev0 = evidence.len();
        for ((r, ev), kc) in regions.iter().zip(&region_ev).zip(&setup_counters) {
            evidence.extend(resident.iter().map(|&w| CellEvidence {
                workload: w,
                size,
                backing: r.backing(),
                coverage: huge_coverage(r.backing(), ev),
                region: ev.clone(),
                kernel_counters: kc.clone(),
                per_op: BTreeMap::new(),
            }));
        }
        // Calibrate op counts on the baseline so every backing does the same work.
        let ops = calibrate_ops(regions.first(), resident, plan);
        let mut per_op: Vec<BTreeMap<Workload, PerOp>> =
            regions.iter().map(|_| BTreeMap::new()).collect();
        let mut order: Vec<usize> = (0..regions.len()).collect();
        for round in 0..=plan.rounds {
            let warmup = round == 0;
            if !warmup {
                obs.step(&format!("{}: round {round}/{}", Bytes(size), plan.rounds));
            }
            let saved = observations.len();
            order.shuffle(rng);
            for &i in &order {
                for &w in resident {
                    counters.start();
                    let samples: Vec<Sample> = match w {
                        Workload::Touch => vec![workload::run_touch(
                            &regions[i],
                            ops[&w],
                            plan.threads,
                            plan.seed ^ round as u64,
                        )],
                        Workload::Chase => vec![workload::run_chase(&regions[i], ops[&w])],
                        Workload::Tlb => vec![workload::run_tlb(&regions[i], ops[&w])],
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
                    record(observations, samples, size, regions[i].backing(), round - 1);
                }
            }
            sink(&observations[saved..], evidence);
        }
        // The per-operation counts are known once the rounds are done.
        let cells = evidence[ev0..].chunks_mut(resident.len());
        for ((r, cells), counted) in regions.iter().zip(cells).zip(&per_op) {
            for (cell, w) in cells.iter_mut().zip(resident) {
                debug_assert_eq!(cell.backing, r.backing());
                cell.per_op = counted.get(w).map(PerOp::mean).unwrap_or_default();
            }
        }
        Ok(())
    }

    /// One fresh-memory workload at one size: each round maps, first-touches and unmaps a new
    /// region per backing.
    fn fresh(&mut self, size: u64, w: Workload) -> anyhow::Result<()> {
        let Bench {
            plan,
            st,
            sys,
            env,
            rng,
            skipped,
            observations,
            evidence,
        } = self;
        let Instruments {
            root,
            counters,
            obs,
            sink,
        } = env;
        let fresh_saved = observations.len();
        let mut backings: Vec<Backing> = plan
            .backings
            .iter()
            .copied()
            .filter(|b| active(b, skipped, size))
            .collect();
        // Committing less than one page would measure zeroing a whole page, not commit speed.
        backings.retain(|b| fits_a_page(*b, size, w, skipped));
        let mut first: BTreeMap<Backing, (RegionEvidence, BTreeMap<String, u64>)> = BTreeMap::new();
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
            order.shuffle(rng);
            for &b in &order {
                if failed.contains(&b) {
                    continue;
                }
                let want_evidence = round == 1;
                let before = want_evidence.then(|| huge_counters(root));
                let mut ev = None;
                let samples = sys.with_mthp(b, st, || {
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
                            deltas(&before, &huge_counters(root)),
                        ),
                    );
                }
                per_op
                    .entry(b)
                    .or_insert_with(PerOp::new)
                    .add(&counts, samples[0].ops);
                record(observations, samples, size, b, round - 1);
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
        sink(&observations[fresh_saved..], evidence);
        Ok(())
    }
}

/// Whether a region of `size` holds at least one page of backing `b`; if not, `b` is skipped
/// at that size (committing less than a page would measure zeroing a whole page).
fn fits_a_page(b: Backing, size: u64, w: Workload, skipped: &mut Vec<Skipped>) -> bool {
    let fits = b.page_size() <= size;
    if !fits {
        skipped.push(Skipped {
            below_page: true,
            backing: b,
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
}

/// The chase workloads' pointer chains: built once in the first region (a page chase for
/// `tlb`, a random cycle for `chase`) and copied to the others, so every backing walks the same.
fn link_chains(regions: &mut [Region], resident: &[Workload], seed: u64) {
    let chain = if resident.contains(&Workload::Tlb) {
        Some(kernels::build_page_chase as fn(&mut [u64], u64))
    } else if resident.contains(&Workload::Chase) {
        Some(kernels::build_chase as fn(&mut [u64], u64))
    } else {
        None
    };
    if let Some(build) = chain
        && let Some((first, rest)) = regions.split_first_mut()
    {
        build(first.as_words_mut(), seed);
        for r in rest {
            r.as_words_mut().copy_from_slice(first.as_words());
        }
    }
}

/// Operations per round for each resident workload, timed on the baseline's region so that a
/// round lasts about `--iteration-time` and every backing does the same work.
fn calibrate_ops(
    base: Option<&Region>,
    resident: &[Workload],
    plan: &Plan,
) -> BTreeMap<Workload, u64> {
    let mut ops: BTreeMap<Workload, u64> = BTreeMap::new();
    if let Some(base) = base {
        for &w in resident {
            let probe_ops = 20_000u64;
            let t = Instant::now();
            match w {
                Workload::Touch => {
                    workload::run_touch(base, probe_ops, 1, plan.seed);
                }
                Workload::Chase => {
                    workload::run_chase(base, probe_ops);
                }
                Workload::Tlb => {
                    workload::run_tlb(base, probe_ops);
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
    ops
}
