//! Rows for warm services: two arms' servers restarted every few blocks, each lifetime with an
//! instance effect of its own per arm (SD 2%) on top of burst noise (SD 4% per block). The
//! analysis `run` does (lifetime means, signed-rank over lifetimes) must hold its level on A/A
//! and cover a real effect; the same data analysed per block (bursts taken as independent
//! replicates) shows why lifetimes are the unit.

use super::noise::Rng;
use super::{Row, se};
use crate::analyze::experiment::{TrialData, log_ratios};
use crate::analyze::stats::hodges_lehmann;

/// One simulated warm run: `lifetimes` × `per` blocks of two arms, arm 1 at `effect` (log).
fn warm_run(effect: f64, lifetimes: usize, per: usize, rng: &mut Rng) -> Vec<TrialData> {
    let mut out = Vec::new();
    let mut block = 0;
    for l in 0..lifetimes {
        let inst = [0.02 * rng.gauss(), 0.02 * rng.gauss()];
        for _ in 0..per {
            let common = 0.05 * rng.gauss();
            for (arm, own) in inst.iter().enumerate() {
                let shift = if arm == 1 { effect } else { 0.0 };
                let v = common + own + 0.04 * rng.gauss() + shift;
                out.push(TrialData {
                    block,
                    arm,
                    ok: true,
                    metrics: [("tps".to_string(), 1000.0 * v.exp())].into(),
                    lifetime: Some(l),
                    ..Default::default()
                });
            }
            block += 1;
        }
    }
    out
}

/// Share of runs whose interval excludes 0, and share that covers `effect`, analysed by
/// lifetimes (`nested`) or per block.
fn replicate(effect: f64, conf: f64, nested: bool, reps: usize, seed: u64) -> (f64, f64) {
    let mut rng = Rng::new(seed);
    let (mut excl, mut cover) = (0usize, 0usize);
    for _ in 0..reps {
        let mut t = warm_run(effect, 20, 5, &mut rng);
        if !nested {
            t.iter_mut().for_each(|x| x.lifetime = None);
        }
        let d = log_ratios(&t, 1, 0, "tps");
        let Some(e) = hodges_lehmann(&d, conf) else {
            continue;
        };
        let (Some(lo), Some(hi)) = (e.lo, e.hi) else {
            continue;
        };
        excl += usize::from(lo > 0.0 || hi < 0.0);
        cover += usize::from(lo <= effect && effect <= hi);
    }
    (excl as f64 / reps as f64, cover as f64 / reps as f64)
}

pub fn lifetime_rows(reps: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let conf = 0.99;
    let alpha = 1.0 - conf;
    let (aa, _) = replicate(0.0, conf, true, reps, 71);
    let limit = alpha + 2.0 * se(alpha, reps);
    rows.push(Row {
        study: "warm services, A/A, 20 lifetimes × 5 blocks (instance SD 2%, burst SD 4%), 99%: false verdicts".into(),
        measured: aa,
        target: format!("≤ {limit:.4}"),
        pass: aa <= limit,
    });
    let (_, cov) = replicate(0.03f64.ln_1p(), conf, true, reps, 72);
    let target = conf - 2.0 * se(conf, reps);
    rows.push(Row {
        study: "warm services, +3%, same lifetimes, 99%: coverage by lifetime means".into(),
        measured: cov,
        target: format!("≥ {target:.4}"),
        pass: cov >= target,
    });
    let (naive, _) = replicate(0.0, conf, false, reps, 73);
    rows.push(Row {
        study: "warm services, A/A analysed per burst (lifetimes ignored), 99%: false verdicts (why lifetimes are the unit)".into(),
        measured: naive,
        target: format!("≥ {:.2} (3× the nominal level)", 3.0 * alpha),
        pass: naive >= 3.0 * alpha,
    });
    rows
}
