//! Rows for the tail contrast (`analyze::tail`): the paired block-bootstrap interval of the
//! ratio of two p95s, on trial times with a shared block-to-block drift and lognormal noise,
//! where the arm's whole distribution is the baseline's times a known factor (so its p95 is
//! too). Coverage at the run's level, and the false verdicts of an A/A tail.

use super::noise::Rng;
use super::{Row, se};
use crate::analyze::tail::{MIN_BLOCKS, interval, tail_contrasts};
use crate::model::analysis::TrialData;
use crate::model::verdict::{Better, Verdict};

/// One run: `blocks` paired trials, arm 1 at `factor` times arm 0's distribution.
fn run(blocks: usize, factor: f64, rng: &mut Rng) -> Vec<TrialData> {
    (0..blocks)
        .flat_map(|b| {
            let drift = 0.03 * rng.gauss();
            let v0 = (drift + 0.15 * rng.gauss()).exp();
            let v1 = factor * (drift + 0.15 * rng.gauss()).exp();
            [(0, v0), (1, v1)].map(|(arm, v)| TrialData {
                block: b,
                arm,
                ok: true,
                metrics: [("wall_s".to_string(), v)].into(),
                ..Default::default()
            })
        })
        .collect()
}

/// Over `reps` runs: the share whose interval covers the true change, and the share with a
/// verdict other than INCONCLUSIVE.
fn replicate(blocks: usize, factor: f64, conf: f64, reps: usize, seed: u64) -> (f64, f64) {
    let mut rng = Rng::new(seed);
    let arms = ["a".to_string(), "b".to_string()];
    let truth = (factor - 1.0) * 100.0;
    let (mut cover, mut decided) = (0usize, 0usize);
    for _ in 0..reps {
        let t = run(blocks, factor, &mut rng);
        let c = &tail_contrasts(&arms, 0, &t, "wall_s", Better::Lower, conf)[0];
        // The interval as the contrast computes it, also below the blocks it needs.
        let pairs: Vec<(f64, f64)> = t
            .chunks(2)
            .map(|b| (b[1].metrics["wall_s"], b[0].metrics["wall_s"]))
            .collect();
        let e = interval(&pairs, c.arm_value / c.baseline_value, conf);
        cover +=
            usize::from(e.lo.is_some_and(|lo| lo <= truth) && e.hi.is_some_and(|hi| truth <= hi));
        decided += usize::from(c.verdict != Verdict::Inconclusive);
    }
    (cover as f64 / reps as f64, decided as f64 / reps as f64)
}

pub fn tail_rows(reps: usize) -> Vec<Row> {
    // The bootstrap resamples every block 4,000 times: a tenth of the replications.
    let reps = (reps / 10).max(100);
    let mut rows = Vec::new();
    for conf in [0.95, 0.99] {
        // From the blocks a p95 contrast needs, the interval holds its level; from 20 it does
        // not (why it needs 30): a row that fails if the floor were lowered to where it misses.
        for blocks in [MIN_BLOCKS, 60, 20] {
            let (cov, _) = replicate(blocks, 1.10, conf, reps, 91 + blocks as u64);
            let target = conf - 2.0 * se(conf, reps);
            let (target, pass) = if blocks < MIN_BLOCKS {
                (format!("< {target:.4} (why {MIN_BLOCKS})"), cov < target)
            } else {
                (format!("≥ {target:.4}"), cov >= target)
            };
            rows.push(Row {
                study: format!(
                    "tail: p95 ratio +10%, {blocks} blocks (burst SD 15%), {:.0}% block bootstrap: coverage",
                    conf * 100.0
                ),
                measured: cov,
                target,
                pass,
            });
        }
    }
    let conf = 0.99;
    let (_, aa) = replicate(40, 1.0, conf, reps, 95);
    let limit =
        crate::stats::Level(conf).alpha() + 2.0 * se(crate::stats::Level(conf).alpha(), reps);
    rows.push(Row {
        study: "tail: A/A, 40 blocks, 99% block bootstrap: false verdicts".into(),
        measured: aa,
        target: format!("≤ {limit:.4}"),
        pass: aa <= limit,
    });
    rows
}
