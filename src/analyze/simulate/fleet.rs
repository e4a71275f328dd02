//! Fleets for `judge`: hosts whose values are AR(1) in time on a shared diurnal curve with
//! traffic shocks, judged as `judge` does; and the study's rows for it.

use super::noise::Rng;
use super::{Row, se};
use crate::analyze::verdict::Design;

/// Rows for `judge`: A/A fleets (3 vs 3 hosts, 24 h at a 30 s step, 10-minute blocks, 99%)
/// whose hosts are autocorrelated from mildly to strongly must not get a direction more often
/// than the nominal 1%; a real +5% must be covered at 99%; and the same strongly autocorrelated
/// A/A data judged per sample (Mann–Whitney, as Kayenta does) alarm far above 1%, which shows
/// the data are hard enough for the first rows to mean something.
pub fn judge_rows(reps: usize) -> Vec<Row> {
    let n = (reps / 8).max(200);
    let fleet = |phi: f64, effect: f64| Fleet {
        hosts: 3,
        step: 30.0,
        hours: 24.0,
        phi,
        sigma: 0.1,
        effect,
        ..Fleet::default()
    };
    let mut rows = Vec::new();
    let limit = 0.01 + 2.0 * se(0.01, n);
    for (phi, what) in [(0.9, "5 min"), (0.99, "50 min")] {
        let (wrong, _) = judge_fleets(fleet(phi, 0.0), 600.0, 0.99, n, 31, Judging::After);
        rows.push(Row {
            study: format!(
                "judge A/A, 3 vs 3 hosts, 24 h at 30 s, AR(1) φ={phi}/step (correlated over ~{what}), 10m blocks, 99%: false directions"
            ),
            measured: wrong,
            target: format!("≤ {limit:.4}"),
            pass: wrong <= limit,
        });
    }
    let (_, covered) = judge_fleets(fleet(0.9, 0.05), 600.0, 0.99, n, 32, Judging::After);
    let target = 0.99 - 2.0 * se(0.99, n);
    rows.push(Row {
        study: "judge +5% on the canary, φ=0.9/step, 99%: the interval covers +5%".into(),
        measured: covered,
        target: format!("≥ {target:.4}"),
        pass: covered >= target,
    });
    let m = (n / 4).max(50);
    let (naive, _) = judge_fleets(fleet(0.99, 0.0), 600.0, 0.99, m, 33, Judging::PerSample);
    rows.push(Row {
        study: "the same φ=0.99 A/A judged per sample (Mann–Whitney on every 30 s sample, Kayenta's way), 99%: false alarms".into(),
        measured: naive,
        target: "≥ 0.1000".into(),
        pass: naive >= 0.1,
    });
    rows.extend(before_rows(n, se));
    rows.extend(look_rows(n));
    rows
}

/// Rows for a canary judged at every look, as `judge --webhook` is asked by Flagger (and
/// `--follow` looks): 20 looks ten minutes apart, the first over the canary's first hour. Judged
/// by the confidence sequence over a window that grows from the first look, an A/A canary is
/// rolled back (WORSE at some look) no more often than 1 − confidence, and a canary truly 5%
/// worse is caught within its looks — more often than by the fixed test over a sliding hour,
/// which never sees more than an hour of the canary.
fn look_rows(n: usize) -> Vec<Row> {
    let fleet = |effect: f64| Fleet {
        hosts: 3,
        step: 30.0,
        hours: 4.25,
        phi: 0.6,
        sigma: 0.1,
        effect,
        ..Fleet::default()
    };
    let what = "3 vs 3 hosts, φ=0.6/step, 20 looks 10 min apart from the first hour's, 99%";
    let limit = 0.01 + 2.0 * se(0.01, n);
    let mut rows = Vec::new();
    let aa = judge_looks(fleet(0.0), 0.99, n, 51, Looks::Growing);
    rows.push(Row {
        study: format!(
            "judge at every look (the webhook's confidence sequence), A/A, {what}: false rollbacks over a canary's life"
        ),
        measured: aa.rolled_back,
        target: format!("≤ {limit:.4}"),
        pass: aa.rolled_back <= limit,
    });
    let m = (n / 2).max(100);
    let worse = judge_looks(fleet(0.05), 0.99, m, 52, Looks::Growing);
    let sliding = judge_looks(fleet(0.05), 0.99, m, 52, Looks::Sliding);
    rows.push(Row {
        study: format!(
            "the same, the canary 5% worse: caught within 20 looks (mean look {:.1}; the fixed test over a sliding hour {:.3})",
            worse.mean_look, sliding.rolled_back
        ),
        measured: worse.rolled_back,
        target: "≥ 0.7500, above the sliding hour's".into(),
        pass: worse.rolled_back >= 0.75 && worse.rolled_back > sliding.rolled_back,
    });
    rows
}

/// How a canary's looks choose their window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Looks {
    /// From the first look's beginning to each look, by the confidence sequence (the webhook).
    Growing,
    /// The last hour at each look, by the fixed design (a fixed test repeated).
    Sliding,
}

/// What looking at a canary again and again concluded over `reps` canaries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Looked {
    /// The share rolled back: WORSE at some look.
    pub rolled_back: f64,
    /// The mean look at which those were.
    pub mean_look: f64,
}

/// `reps` canaries judged at 20 looks ten minutes apart after a first hour, as `looks` says,
/// with `judge`'s own code (the metric lower-better: a rise is WORSE).
pub fn judge_looks(f: Fleet, confidence: f64, reps: usize, seed: u64, looks: Looks) -> Looked {
    use crate::analyze::judge::{Groups, Settings, Window, judge, prepare};
    use crate::analyze::verdict::{Better, Verdict};
    let (interval, first, gap) = (600.0, 3600.0, 600.0);
    let settings = Settings {
        effect: 0.01,
        confidence,
        design: match looks {
            Looks::Growing => Design::Sequential {
                n_opt: crate::analyze::verdict::SEQUENTIAL_N_OPT,
            },
            Looks::Sliding => Design::Fixed,
        },
        groups: Groups::Hosts,
    };
    let mut rng = Rng::new(seed);
    let (mut rolled, mut at) = (0usize, 0usize);
    for _ in 0..reps {
        let (c, b) = f.series(&mut rng);
        for k in 0..20 {
            let end = first + k as f64 * gap;
            let start = match looks {
                Looks::Growing => 0.0,
                Looks::Sliding => end - first,
            };
            let w = Window {
                start,
                end,
                interval,
            };
            let p = prepare("m", Better::Lower, false, (&c, &b), &w, None);
            let j = judge(vec![p], &settings).remove(0);
            if j.contrast.is_some_and(|ct| ct.verdict == Verdict::Slower) {
                rolled += 1;
                at += k + 1;
                break;
            }
        }
    }
    Looked {
        rolled_back: rolled as f64 / reps as f64,
        mean_look: if rolled > 0 {
            at as f64 / rolled as f64
        } else {
            0.0
        },
    }
}

/// Rows for `judge --before`, on fleets like real ones: 6 vs 6 hosts, 8 h judged after an 8 h
/// before window at 15 s, AR(1) at φ = 0.97 a step, a shared diurnal swing and an incident, and
/// each host at its own level (SD 3%). With the before window the interval covers a true −4%
/// and A/A fleets get no more directions than 1%; without it, hosts as units keep the coverage;
/// judged by time pairing only (as `judge` did before host composition), the interval describes
/// the hosts drawn rather than the change, and under-covers — which is why the others exist.
fn before_rows(n: usize, se: impl Fn(f64, usize) -> f64) -> Vec<Row> {
    let fleet = |effect: f64| Fleet {
        hosts: 6,
        step: 15.0,
        hours: 8.0,
        phi: 0.97,
        sigma: 0.05,
        effect,
        host_sd: 0.03,
        before_hours: 8.0,
        incident: true,
    };
    let what = "6 vs 6 hosts at levels SD 3%, 8 h after 8 h before at 15 s, φ=0.97, 99%";
    let floor = 0.99 - 2.0 * se(0.99, n);
    let limit = 0.01 + 2.0 * se(0.01, n);
    let mut rows = Vec::new();
    let (_, covered) = judge_fleets(fleet(-0.04), 600.0, 0.99, n, 41, Judging::Before);
    rows.push(Row {
        study: format!("judge --before, {what}: the interval covers a true −4%"),
        measured: covered,
        target: format!("≥ {floor:.4}"),
        pass: covered >= floor,
    });
    let (wrong, _) = judge_fleets(fleet(0.0), 600.0, 0.99, n, 42, Judging::Before);
    rows.push(Row {
        study: format!("judge --before, A/A, {what}: false directions"),
        measured: wrong,
        target: format!("≤ {limit:.4}"),
        pass: wrong <= limit,
    });
    let (_, covered) = judge_fleets(fleet(-0.04), 600.0, 0.99, n, 43, Judging::After);
    rows.push(Row {
        study: "the same fleets without --before (hosts as units in the interval): covers −4%"
            .into(),
        measured: covered,
        target: format!("≥ {floor:.4}"),
        pass: covered >= floor,
    });
    let (_, covered) = judge_fleets(fleet(-0.04), 600.0, 0.99, n, 43, Judging::TimeOnly);
    rows.push(Row {
        study: "the same fleets by time pairing only (no before, no hosts): covers −4%".into(),
        measured: covered,
        target: "≤ 0.8000".into(),
        pass: covered <= 0.8,
    });
    rows
}

/// A simulated fleet for `judge`: `hosts` per group sampled every `step` seconds for
/// `before_hours` then `hours`. Each host's log value is an AR(1) with lag-1 correlation `phi`
/// per step and marginal SD `sigma`, around the host's own level (drawn with SD `host_sd`), on
/// a diurnal curve (±30%) and traffic shocks shared by every host (which pairing by time must
/// cancel), with a shared incident (+50% for half an hour) in the judged hours if `incident`;
/// the canary's values are multiplied by 1 + `effect` after the first `before_hours`.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    pub hosts: usize,
    pub step: f64,
    pub hours: f64,
    pub phi: f64,
    pub sigma: f64,
    pub effect: f64,
    pub host_sd: f64,
    pub before_hours: f64,
    pub incident: bool,
}

impl Default for Fleet {
    fn default() -> Self {
        Fleet {
            hosts: 3,
            step: 30.0,
            hours: 24.0,
            phi: 0.9,
            sigma: 0.1,
            effect: 0.0,
            host_sd: 0.0,
            before_hours: 0.0,
            incident: false,
        }
    }
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
        let changed = self.before_hours * 3600.0;
        let n = ((self.before_hours + self.hours) * 3600.0 / self.step) as usize;
        let day = 86_400.0;
        let mut shock = 0.0;
        let incident = self
            .incident
            .then(|| changed + rng.uniform() * (self.hours - 0.5) * 3600.0);
        let shared: Vec<f64> = (0..n)
            .map(|i| {
                shock = 0.95 * shock + 0.2 * (1.0 - 0.95f64.powi(2)).sqrt() * rng.gauss();
                let t = i as f64 * self.step;
                let spike = match incident {
                    Some(at) if (at..at + 1800.0).contains(&t) => 1.5f64.ln(),
                    _ => 0.0,
                };
                (1.0 + 0.3 * (2.0 * std::f64::consts::PI * t / day).sin()).ln() + shock + spike
            })
            .collect();
        let innovation = self.sigma * (1.0 - self.phi * self.phi).sqrt();
        let mut host = |canary: bool, h: usize| {
            let mut x = self.sigma * rng.gauss();
            let level = if self.host_sd > 0.0 {
                self.host_sd * rng.gauss()
            } else {
                0.0
            };
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
                    let t = i as f64 * self.step;
                    let lift = if t >= changed { lift } else { 0.0 };
                    (t, (s + x + level + lift).exp())
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

/// How a simulated fleet is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judging {
    /// As `judge` without a before window: the judged hours, host composition in the interval.
    After,
    /// As `judge --before`: the judged hours against the before hours.
    Before,
    /// Time pairing only (what `judge` did before host composition; switchback's one host).
    TimeOnly,
    /// Every sample as an independent observation: a Mann–Whitney test on all of them, as
    /// Kayenta's judge does.
    PerSample,
}

/// What `judge` concludes on `reps` simulated fleets: the share of false directions (FASTER or
/// SLOWER when the truth is 0, or the wrong one) and the share of intervals covering the truth.
/// `PerSample` gives the share of fleets its test alarmed on, and no coverage.
pub fn judge_fleets(
    f: Fleet,
    interval: f64,
    confidence: f64,
    reps: usize,
    seed: u64,
    judging: Judging,
) -> (f64, f64) {
    use crate::analyze::judge::{Groups, Settings, Window, judge, prepare};
    use crate::analyze::verdict::{Better, Verdict};
    let mut rng = Rng::new(seed);
    let truth = (1.0 + f.effect).ln();
    let (mut wrong, mut covered) = (0usize, 0usize);
    let changed = f.before_hours * 3600.0;
    let w = Window {
        start: changed,
        end: changed + f.hours * 3600.0,
        interval,
    };
    let before = Window {
        start: 0.0,
        end: changed,
        interval,
    };
    let settings = Settings {
        effect: 0.01,
        confidence,
        design: Design::Fixed,
        groups: if judging == Judging::TimeOnly {
            Groups::OneHost
        } else {
            Groups::Hosts
        },
    };
    for _ in 0..reps {
        let (c, b) = f.series(&mut rng);
        if judging == Judging::PerSample {
            let logs = |s: &[crate::collect::prometheus::Series]| -> Vec<f64> {
                s.iter()
                    .flat_map(|s| s.points.iter().filter(|p| p.0 >= changed).map(|p| p.1.ln()))
                    .collect()
            };
            if let Some(s) = crate::stats::mann_whitney_shift(&logs(&c), &logs(&b), confidence)
                && s.estimate.excludes(0.0)
            {
                wrong += 1;
            }
            continue;
        }
        let pre = (judging == Judging::Before).then_some(((c.as_slice(), b.as_slice()), &before));
        let p = prepare("m", Better::Lower, false, (&c, &b), &w, pre);
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
    }
    let r = reps as f64;
    (wrong as f64 / r, covered as f64 / r)
}
