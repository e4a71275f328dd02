//! The forecast study: the half-way forecast's range, drawn in every run, tested one-sided
//! against the level the answer prints. At about 1,000 runs a process it tells 85% from 90%;
//! `scripts/study/forecast.sh` runs it and stores its table in `docs/study/forecast.txt`,
//! which docs/statistics.md quotes and a fast test checks. CI's rows (see
//! [`prediction_rows`]) draw the range in 200 runs: enough to catch a gross defect.

use super::{HEAVY, KNOWN, Process, RESAMPLED_RUNS, ROOMY, SHARED, replicate_analysed, sized_run};
use crate::analyze::experiment::log_ratios;
use crate::analyze::lifetimes::tuning::RANGE_LEVEL;
use crate::analyze::simulate::{Rng, Row, se};
use crate::analyze::verdict::design::paired_interval;
use crate::model::verdict::Design;

/// The one-sided test's normal quantile: a row fails when its coverage is below the printed
/// level by more than 1.645 standard errors (a 5% test of "holds at the level").
const ONE_SIDED_Z: f64 = 1.645;

/// For each process of the warm services' rows, `runs` sized runs at 99%, each drawing its
/// half-way range: the share that held the half-width reached, tested one-sided against
/// [`RANGE_LEVEL`]. Each process runs on a thread of its own.
pub fn forecast_study(runs: usize) -> Vec<Row> {
    let conf = 0.99;
    let three = Process {
        replicas: 3,
        ..ROOMY
    };
    let shared = Process {
        shared: SHARED,
        ..three
    };
    let sequence = Design::Sequential {
        n_opt: crate::analyze::verdict::SEQUENTIAL_N_OPT,
    };
    let cases: [(&str, Process, &Design, u64); 6] = [
        ("burst SD 6%, instance SD 1.5%", KNOWN, &Design::Fixed, 176),
        (
            "burst SD 9.6% with lag-1 autocorrelation 0.3, no instance spread",
            ROOMY,
            &Design::Fixed,
            177,
        ),
        (
            "heavy tails: burst SD 2.5%, one in twelve 15% further off",
            HEAVY,
            &Design::Fixed,
            181,
        ),
        (
            "burst SD 6%, instance SD 1.5%, a confidence sequence as --sequential prints",
            KNOWN,
            &sequence,
            185,
        ),
        (
            "3 replicas, burst SD 9.6% with lag-1 autocorrelation 0.3",
            three,
            &Design::Fixed,
            180,
        ),
        (
            "3 replicas sharing a restart's effect (SD 5%), burst SD 9.6%",
            shared,
            &Design::Fixed,
            183,
        ),
    ];
    std::thread::scope(|sc| {
        let threads: Vec<_> = cases
            .iter()
            .map(|&(label, pr, design, seed)| {
                sc.spawn(move || {
                    let (held, ranged) = resampled_coverage(pr, (conf, design), runs, seed);
                    row(label, held, ranged)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a simulation thread does not panic"))
            .collect()
    })
}

/// The row of one process: `held` of `ranged` half-way ranges held the half-width reached.
fn row(label: &str, held: usize, ranged: usize) -> Row {
    let level = RANGE_LEVEL;
    let measured = held as f64 / ranged.max(1) as f64;
    let floor = level - ONE_SIDED_Z * se(level, ranged.max(1));
    Row {
        study: format!(
            "forecast study ({label}): the half-way forecast's {:.0}% range held the half-width reached, {held} of {ranged} runs",
            level * 100.0
        ),
        measured,
        target: format!("≥ {floor:.4}"),
        pass: ranged > 0 && measured >= floor,
    }
}

/// Over `runs` sized runs of `pr`, each drawing its half-way range: how many ranges held the
/// half-width the run reached, and how many runs drew one.
fn resampled_coverage(
    pr: Process,
    (conf, design): (f64, &Design),
    runs: usize,
    seed: u64,
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut held, mut ranged) = (0, 0);
    for _ in 0..runs {
        let (t, said) = sized_run(0.0, (conf, design), (None, true), pr, &mut rng);
        let d = log_ratios(&t, 1, 0, "tps");
        let Some((Some(lo), Some(hi))) = paired_interval(&d, conf, design).map(|e| (e.lo, e.hi))
        else {
            continue;
        };
        if let Some((a, b)) = said.resampled {
            ranged += 1;
            held += usize::from((a..=b).contains(&((hi - lo) / 2.0)));
        }
    }
    (held, ranged)
}

/// The half-width reached over the one predicted, after the pilot, at half-way (out of sample:
/// from the first half's lifetimes alone) and at the end, for `pr`: within 30% either way; and
/// the pilot's 90% range (Satterthwaite's degrees of freedom over both levels) holding the
/// half-width reached in at least 80% of the runs — where the noise is normal. The range is
/// what a normal spread allows (the precision line says so); on heavy tails it holds less
/// often, and that row shows it.
pub(super) fn prediction_rows(
    label: &str,
    pr: Process,
    reps: usize,
    conf: f64,
    seed: u64,
) -> Vec<Row> {
    prediction_rows_of(label, pr, (reps, seed), (conf, &Design::Fixed))
}

/// [`prediction_rows`] for the interval `design` prints.
fn prediction_rows_of(
    label: &str,
    pr: Process,
    (reps, seed): (usize, u64),
    (conf, design): (f64, &Design),
) -> Vec<Row> {
    let (_, _, [pilot, half, end, held, resampled]) =
        replicate_analysed(0.0, (conf, design), None, pr, (reps, seed), |_| {});
    let mut rows: Vec<Row> = [
        ("after the pilot", pilot),
        ("at half-way", half),
        ("at the end", end),
    ]
    .into_iter()
    .map(|(when, r)| Row {
        study: format!(
            "warm services sized from the run ({label}): median half-width reached over the one predicted {when}"
        ),
        measured: r,
        target: "0.70–1.30".into(),
        pass: (0.7..=1.3).contains(&r),
    })
    .collect();
    let normal = pr.far.0 == 0.0;
    // Two standard errors below the printed level at CI's size: a gross defect fails here;
    // the stored forecast study (about 1,000 runs a process) tests the level itself.
    let level = crate::model::run::RANGE_LEVEL;
    let resampled_floor = level - 2.0 * se(level, RESAMPLED_RUNS);
    // On heavy tails the pilot's range claims no level (it is the range a normal spread
    // allows, and the answer says so): the row shows how far it falls, and fails only on a
    // range grossly wrong, as the normal rows do.
    rows.push(Row {
        study: format!(
            "warm services sized from the run ({label}): the pilot's 90% range (a normal spread's) holds the half-width reached{}",
            if normal { "" } else { " — no level claimed on these tails" }
        ),
        measured: held,
        target: if normal { "≥ 0.80" } else { "≥ 0.50" }.into(),
        pass: held >= if normal { 0.80 } else { 0.50 },
    });
    rows.push(Row {
        study: format!(
            "warm services sized from the run ({label}): the half-way forecast's 90% range (the first half's lifetimes resampled) holds the half-width reached"
        ),
        measured: resampled,
        target: format!("≥ {resampled_floor:.3}"),
        pass: resampled >= resampled_floor,
    });
    rows
}

/// The forecast rows of the sizing, one process each (see [`prediction_rows`]).
pub(super) fn forecast_rows(reps: usize, conf: f64) -> [super::Part; 4] {
    [
        Box::new(move || prediction_rows("burst SD 6%, instance SD 1.5%", KNOWN, reps, conf, 76)),
        Box::new(move || {
            prediction_rows(
                "burst SD 9.6% with lag-1 autocorrelation 0.3, no instance spread",
                ROOMY,
                reps,
                conf,
                77,
            )
        }),
        Box::new(move || {
            prediction_rows(
                "heavy tails: burst SD 2.5%, one in twelve 15% further off",
                HEAVY,
                reps,
                conf,
                81,
            )
        }),
        // Under --sequential and --target-halfwidth the answer prints a confidence sequence
        // over the lifetime means, wider than the fixed interval: the forecast is of it.
        Box::new(move || {
            prediction_rows_of(
                "burst SD 6%, instance SD 1.5%, a confidence sequence as --sequential prints",
                KNOWN,
                (reps, 85),
                (
                    conf,
                    &Design::Sequential {
                        n_opt: crate::analyze::verdict::SEQUENTIAL_N_OPT,
                    },
                ),
            )
        }),
    ]
}

#[cfg(test)]
mod tests {
    /// A coverage below the level by more than the one-sided margin fails its row; one within
    /// it passes; no drawn range is no pass.
    #[test]
    fn a_row_fails_below_the_level_by_more_than_its_margin() {
        assert!(super::row("x", 900, 1000).pass);
        assert!(super::row("x", 886, 1000).pass);
        assert!(!super::row("x", 883, 1000).pass);
        assert!(!super::row("x", 850, 1000).pass);
        assert!(!super::row("x", 0, 0).pass);
    }
}
