//! Fleets for `judge`: hosts whose values are AR(1) in time on a shared diurnal curve with
//! traffic shocks, judged as `judge` does; and the study's rows for it.

use super::Row;
use super::noise::Rng;
use crate::analyze::verdict::Design;

/// Rows for `judge`: A/A fleets (3 vs 3 hosts, 24 h at a 30 s step, 10-minute blocks, 99%)
/// whose hosts are autocorrelated from mildly to strongly must not get a direction more often
/// than the nominal 1%; a real +5% must be covered at 99%; and the same strongly autocorrelated
/// A/A data judged per sample (Mann–Whitney, as Kayenta does) alarm far above 1%, which shows
/// the data are hard enough for the first rows to mean something.
pub fn judge_rows(reps: usize) -> Vec<Row> {
    let se = |p: f64, n: usize| (p * (1.0 - p) / n as f64).sqrt();
    let n = (reps / 8).max(200);
    let fleet = |phi: f64, effect: f64| Fleet {
        hosts: 3,
        step: 30.0,
        hours: 24.0,
        phi,
        sigma: 0.1,
        effect,
    };
    let mut rows = Vec::new();
    let limit = 0.01 + 2.0 * se(0.01, n);
    for (phi, what) in [(0.9, "5 min"), (0.99, "50 min")] {
        let (wrong, _, _) = judge_fleets(fleet(phi, 0.0), 600.0, 0.99, n, 31, false);
        rows.push(Row {
            study: format!(
                "judge A/A, 3 vs 3 hosts, 24 h at 30 s, AR(1) φ={phi}/step (correlated over ~{what}), 10m blocks, 99%: false directions"
            ),
            measured: wrong,
            target: format!("≤ {limit:.4}"),
            pass: wrong <= limit,
        });
    }
    let (_, covered, _) = judge_fleets(fleet(0.9, 0.05), 600.0, 0.99, n, 32, false);
    let target = 0.99 - 2.0 * se(0.99, n);
    rows.push(Row {
        study: "judge +5% on the canary, φ=0.9/step, 99%: the interval covers +5%".into(),
        measured: covered,
        target: format!("≥ {target:.4}"),
        pass: covered >= target,
    });
    let m = (n / 4).max(50);
    let (_, _, naive) = judge_fleets(fleet(0.99, 0.0), 600.0, 0.99, m, 33, true);
    rows.push(Row {
        study: "the same φ=0.99 A/A judged per sample (Mann–Whitney on every 30 s sample, Kayenta's way), 99%: false alarms".into(),
        measured: naive,
        target: "≥ 0.1000".into(),
        pass: naive >= 0.1,
    });
    rows
}

/// A simulated fleet for `judge`: `hosts` per group sampled every `step` seconds for `hours`.
/// Each host's log value is an AR(1) with lag-1 correlation `phi` per step and marginal SD
/// `sigma`, on a diurnal curve (±30%) and traffic shocks shared by every host (which pairing by
/// time must cancel); the canary's values are multiplied by 1 + `effect`.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    pub hosts: usize,
    pub step: f64,
    pub hours: f64,
    pub phi: f64,
    pub sigma: f64,
    pub effect: f64,
}

impl Fleet {
    pub fn series(
        &self,
        rng: &mut Rng,
    ) -> (
        Vec<crate::collect::prometheus::Series>,
        Vec<crate::collect::prometheus::Series>,
    ) {
        use crate::collect::prometheus::Series;
        let n = (self.hours * 3600.0 / self.step) as usize;
        let day = 86_400.0;
        let mut shock = 0.0;
        let shared: Vec<f64> = (0..n)
            .map(|i| {
                shock = 0.95 * shock + 0.2 * (1.0 - 0.95f64.powi(2)).sqrt() * rng.gauss();
                let t = i as f64 * self.step;
                (1.0 + 0.3 * (2.0 * std::f64::consts::PI * t / day).sin()).ln() + shock
            })
            .collect();
        let innovation = self.sigma * (1.0 - self.phi * self.phi).sqrt();
        let mut host = |canary: bool, h: usize| {
            let mut x = self.sigma * rng.gauss();
            let lift = if canary {
                (1.0 + self.effect).ln()
            } else {
                0.0
            };
            let points = shared
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    x = self.phi * x + innovation * rng.gauss();
                    (i as f64 * self.step, (s + x + lift).exp())
                })
                .collect();
            Series {
                labels: [(
                    "instance".to_string(),
                    format!("{}-{h}", if canary { "canary" } else { "base" }),
                )]
                .into(),
                points,
            }
        };
        let c = (0..self.hosts).map(|h| host(true, h)).collect();
        let b = (0..self.hosts).map(|h| host(false, h)).collect();
        (c, b)
    }
}

/// What `judge` concludes on `reps` simulated fleets: the share of false directions (FASTER or
/// SLOWER when the truth is 0, or the wrong one), the share of intervals covering the truth, and
/// the share a per-sample Mann–Whitney test (Kayenta's judge) would have alarmed on.
pub fn judge_fleets(
    f: Fleet,
    interval: f64,
    confidence: f64,
    reps: usize,
    seed: u64,
    per_sample: bool,
) -> (f64, f64, f64) {
    use crate::analyze::judge::{Settings, Window, judge, prepare};
    use crate::analyze::verdict::{Better, Verdict};
    let mut rng = Rng::new(seed);
    let truth = (1.0 + f.effect).ln();
    let (mut wrong, mut covered, mut naive) = (0usize, 0usize, 0usize);
    let w = Window {
        start: 0.0,
        end: f.hours * 3600.0,
        interval,
    };
    let settings = Settings {
        effect: 0.01,
        confidence,
        design: Design::Fixed,
    };
    for _ in 0..reps {
        let (c, b) = f.series(&mut rng);
        let p = prepare("m", Better::Lower, false, &c, &b, &w);
        let j = judge(vec![p], &settings).remove(0);
        if let Some(ct) = &j.contrast {
            let pct = ct.percent;
            let (lo, hi) = (
                pct.lo.unwrap_or(f64::NEG_INFINITY),
                pct.hi.unwrap_or(f64::INFINITY),
            );
            let t = f.effect * 100.0;
            if lo <= t && t <= hi {
                covered += 1;
            }
            let wrong_way = match ct.verdict {
                Verdict::Faster => truth >= 0.0,
                Verdict::Slower => truth <= 0.0,
                _ => false,
            };
            if wrong_way {
                wrong += 1;
            }
        }
        let logs = |s: &[crate::collect::prometheus::Series]| -> Vec<f64> {
            s.iter()
                .flat_map(|s| s.points.iter().map(|p| p.1.ln()))
                .collect()
        };
        if per_sample
            && let Some(s) =
                crate::analyze::stats::mann_whitney_shift(&logs(&c), &logs(&b), confidence)
            && s.estimate.excludes(0.0)
        {
            naive += 1;
        }
    }
    let r = reps as f64;
    (wrong as f64 / r, covered as f64 / r, naive as f64 / r)
}
