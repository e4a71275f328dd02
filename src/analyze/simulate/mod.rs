//! The simulation study behind the statistics engine: coverage of the paired intervals on
//! skewed, bimodal and outlier-ridden data; the false-positive rate of sequential stopping in
//! A/A runs, with and without drift; runs to a verdict against the fixed designs; power lost to
//! outliers. Deterministic (seeded) and pure; `scripts/study/simulation.sh` runs it through
//! `tests/stats_simulation.rs` and stores its table in `docs/study/simulation.txt`, which
//! docs/statistics.md quotes whole, and CI reruns it at 100 replications against the check
//! table stored beside it.
//!
//! It is compiled with the library, for the tests and the judge bench, and the product never
//! calls it. The one hook it has into production code, a sizing planted in place of
//! `analyze::lifetimes::Tuning`'s own, exists in the unit tests only (`cfg(test)`).
//!
//! * this module — the table's rows and the whole study;
//! * `noise` — the seeded generators: run-level noise models, paired scenarios, three arms;
//! * `designs` — each design replicated: fixed with Holm, sequential, group-sequential, the
//!   planner's power, interval coverage;
//! * `production` — rows that simulate what `run` itself does;
//! * `fleet` — autocorrelated fleets for `judge`, and its rows;
//! * `lifetimes` — warm services: blocks nested in server lifetimes with an instance effect;
//! * `bursts` — the burst length chosen from the noise, on hosts simulated in time;
//! * `tail` — the p95 contrast's block bootstrap: coverage and A/A false verdicts.

mod bursts;
mod designs;
mod fleet;
mod lifetimes;
mod noise;
mod production;
mod tail;

pub use bursts::{Burst, Host, best_fixed, burst_rows, replicate as replicate_host};
pub use designs::{
    FixedOutcome, SequentialOutcome, coverage, cs_false_positives, fixed_power, fixed_three_arms,
    planner_power, run_sequential, sequential_three_arms,
};
pub use fleet::{Fleet, Judging, Looked, Looks, judge_fleets, judge_looks, judge_rows};
pub use lifetimes::{forecast_study, lifetime_rows};
pub use noise::{Noise, Rng, Scenario, ThreeArms};
pub use production::production_rows;
pub use tail::tail_rows;

use crate::analyze::sequential::GroupSequential;
use crate::analyze::verdict::{blocks_needed, unpaired_runs_needed};

/// One line of the study's table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub study: String,
    pub measured: f64,
    pub target: String,
    pub pass: bool,
}

/// The whole study at `reps` replications (4,000 in CI and in the stored study).
/// Its groups are seeded apart and independent, so each runs on a thread of its own; the rows
/// come back in the same order.
pub fn study(reps: usize) -> Vec<Row> {
    // Hosts simulated in time, 30 minutes a run: a tenth of the replications.
    let bursts = |reps: usize| burst_rows((reps / 10).max(100));
    let groups: [&(dyn Fn(usize) -> Vec<Row> + Sync); 9] = [
        &coverage_rows,
        &false_positive_rows,
        &published_rows,
        &outlier_rows,
        &production_rows,
        &judge_rows,
        &lifetime_rows,
        &bursts,
        &tail_rows,
    ];
    std::thread::scope(|sc| {
        let threads: Vec<_> = groups.iter().map(|g| sc.spawn(move || g(reps))).collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("a simulation thread does not panic"))
            .collect()
    })
}

/// The standard error of a rate `p` from `n` replications.
pub(super) fn se(p: f64, n: usize) -> f64 {
    (p * (1.0 - p) / n as f64).sqrt()
}

/// The paired intervals' coverage under three kinds of noise, at 95% and 99%.
fn coverage_rows(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let noises = [
        ("lognormal", Noise::Lognormal { sigma: 0.05 }),
        (
            "bimodal THP hit/miss",
            Noise::Bimodal {
                sigma: 0.02,
                p: 0.3,
                penalty: 0.25,
            },
        ),
        ("1% at +22σ", Noise::Outliers { sigma: 0.05 }),
    ];
    for (i, (name, noise)) in noises.iter().enumerate() {
        for conf in [0.95, 0.99] {
            let s = Scenario {
                effect: 0.03,
                sd_block: 0.1,
                noise: *noise,
                drift_per_block: 0.0,
            };
            let c = coverage(s, 30, conf, reps, 100 + i as u64);
            rows.push(Row {
                study: format!("coverage, {name}, 30 blocks, {:.0}%", conf * 100.0),
                measured: c,
                target: format!("≥ {:.3}", conf - 0.01),
                pass: c >= conf - 0.01,
            });
        }
    }
    rows
}

/// A/A false positives of the group-sequential design (with and without drift) and of the
/// confidence sequence looked at every 5 blocks.
fn false_positive_rows(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for (alpha, drift) in [
        (0.05, 0.0),
        (0.01, 0.0),
        (0.05, 0.05 / 100.0),
        (0.01, 0.05 / 100.0),
    ] {
        let design = GroupSequential::new(5, 100, alpha);
        let s = Scenario {
            effect: 0.0,
            sd_block: 0.1,
            noise: Noise::Lognormal { sigma: 0.05 },
            drift_per_block: drift,
        };
        let o = run_sequential(s, &design, reps * 4, 7 + (alpha * 1000.0) as u64);
        let limit = alpha + 2.0 * se(alpha, reps * 4);
        rows.push(Row {
            study: format!(
                "A/A false positives, sequential K=5, α={alpha}{}",
                if drift > 0.0 { ", +5% drift" } else { "" }
            ),
            measured: o.reject_rate,
            target: format!("≤ {limit:.4}"),
            pass: o.reject_rate <= limit,
        });
    }
    for alpha in [0.05, 0.01] {
        let s = Scenario {
            effect: 0.0,
            sd_block: 0.1,
            noise: Noise::Lognormal { sigma: 0.05 },
            drift_per_block: 0.05 / 100.0,
        };
        let fp = cs_false_positives(s, alpha, 500, reps, 11);
        let limit = alpha + 2.0 * se(alpha, reps);
        rows.push(Row {
            study: format!(
                "A/A false positives, confidence sequence checked every 5 blocks to 500, α={alpha}"
            ),
            measured: fp,
            target: format!("≤ {limit:.4}"),
            pass: fp <= limit,
        });
    }
    rows
}

/// The published 40-day comparison (1.1% effect, 10% CV, within-block correlation 0.9,
/// 99.99%, 80% power): runs to a verdict sequentially, its power, and the fixed designs' runs.
fn published_rows(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let (cv, rho, effect, conf, power) = (0.1f64, 0.9f64, 0.011f64, 0.9999f64, 0.8f64);
    let sd_d = (2.0 * (1.0 - rho)).sqrt() * cv;
    let design = GroupSequential::plan(5, sd_d, effect, crate::stats::Level(conf).alpha(), power);
    let s = Scenario {
        effect: -(1.0 + effect).ln(),
        sd_block: (rho).sqrt() * cv,
        noise: Noise::Lognormal {
            sigma: (1.0 - rho).sqrt() * cv,
        },
        drift_per_block: 0.0,
    };
    let o = run_sequential(s, &design, reps.max(100), 99);
    rows.push(Row {
        study: format!(
            "runs to verdict, 1.1% effect, sequential paired (max {} runs)",
            2 * design.max_blocks
        ),
        measured: o.mean_runs,
        target: "≤ 800".into(),
        pass: o.mean_runs <= 800.0,
    });
    rows.push(Row {
        study: "power of that design".into(),
        measured: o.reject_rate,
        target: "≥ 0.75".into(),
        pass: o.reject_rate >= 0.75,
    });
    let paired = (2 * blocks_needed(sd_d, effect, conf, power)) as f64;
    rows.push(Row {
        study: "runs, fixed paired design (formula)".into(),
        measured: paired,
        target: "≈ 758".into(),
        pass: (700.0..850.0).contains(&paired),
    });
    rows.push(Row {
        study: "runs, fixed unpaired design (formula)".into(),
        measured: unpaired_runs_needed(cv, effect, conf, power) as f64,
        target: "≈ 7,412".into(),
        pass: (7_300.0..7_500.0).contains(&(unpaired_runs_needed(cv, effect, conf, power) as f64)),
    });
    rows
}

/// Power lost to 1% of runs at +22σ, at a size with about 80% power on clean data.
fn outlier_rows(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let clean = Scenario {
        effect: 0.02,
        sd_block: 0.1,
        noise: Noise::Lognormal { sigma: 0.05 },
        drift_per_block: 0.0,
    };
    let n = blocks_needed((2.0f64).sqrt() * 0.05, (0.02f64).exp() - 1.0, 0.95, 0.8);
    let p_clean = fixed_power(clean, n, 0.05, reps * 2, 5);
    let p_dirty = fixed_power(
        Scenario {
            noise: Noise::Outliers { sigma: 0.05 },
            ..clean
        },
        n,
        0.05,
        reps * 2,
        5,
    );
    rows.push(Row {
        study: format!(
            "power lost to 1% outliers at +22σ ({n} blocks, {p_clean:.3} → {p_dirty:.3})"
        ),
        measured: p_clean - p_dirty,
        target: "≤ 0.10".into(),
        pass: p_clean - p_dirty <= 0.10,
    });
    rows
}
