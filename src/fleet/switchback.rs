//! `hugelab judge --switchback`: one host, a system-wide setting alternated between two arms
//! in pairs of periods (random order within each pair) through the guard while the service
//! keeps its real load; then each pair is one block — the change's period against the
//! baseline's — judged from this host's series in Prometheus like a canary against a baseline.
//! For services that cannot be restarted per trial. Settings are restored at the end, on
//! Ctrl-C (after the period in progress is cut short) and by the guard on a crash.

use super::{JudgeArgs, check_common, fill, judge_all, matchers, now, record, token};
use crate::analyze::judge::Window;
use crate::analyze::verdict::Design;
use crate::backing::arm::{Arm, ProcessConfig};
use crate::collect::prometheus::{Prometheus, Series};
use crate::control::{self, Guard, Knob};
use crate::error::UsageError;
use crate::model::judge::{JudgeResult, Period, Switchback};
use crate::units::fmt_span;
use std::time::{Duration, Instant};

fn check(a: &JudgeArgs) -> Result<String, UsageError> {
    check_common(a)?;
    let host = matchers("host", a.host.as_deref().unwrap_or_default())?;
    if a.arms.len() != 2 {
        return Err(UsageError(format!(
            "--switchback alternates two arms, the baseline then the change (got {}): e.g. --arm off=thp=madvise --arm on=thp=always",
            a.arms.len()
        )));
    }
    for arm in &a.arms {
        if arm.process != ProcessConfig::default() || arm.expect.is_some() {
            return Err(UsageError(format!(
                "--arm {}={}: --switchback changes system-wide settings only (thp=, defrag=, shmem=, mthp.SIZE=, hugetlb.SIZE=…); per-process keys need a restart per trial — use `hugelab run --server` for those",
                arm.name, arm.spec
            )));
        }
    }
    if a.arms.iter().all(|arm| arm.system.is_empty()) {
        return Err(UsageError(
            "neither --arm changes a system setting; give the change, e.g. --arm off=thp=madvise --arm on=thp=always".into(),
        ));
    }
    let (period, burn, step) = (
        a.period.as_secs_f64(),
        a.burn_in.as_secs_f64(),
        a.step.as_secs_f64(),
    );
    if burn + 2.0 * step > period {
        return Err(UsageError(format!(
            "--period {} leaves fewer than 2 samples at --step {} after the --burn-in {}; give a longer period or a shorter burn-in or step",
            fmt_span(period),
            fmt_span(step),
            fmt_span(burn)
        )));
    }
    Ok(host)
}

/// The knobs either arm sets, once each, in a stable order.
fn touched(arms: &[Arm]) -> Vec<Knob> {
    let mut out: Vec<Knob> = Vec::new();
    for (k, _) in arms.iter().flat_map(|a| &a.system) {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// Put `arm`'s settings in force: its own values, the machine's originals for knobs only the
/// other arm sets.
fn apply(g: &mut Guard, arm: &Arm, knobs: &[Knob]) -> anyhow::Result<()> {
    for k in knobs {
        let want = match arm.system.iter().find(|(x, _)| x == k) {
            Some((_, v)) => v.clone(),
            None => match g.original(k) {
                Some(o) => o.to_string(),
                None => continue,
            },
        };
        let applied = g.set(*k, &want)?;
        if !applied.honoured() {
            anyhow::bail!(
                "{k}: asked {want}, the kernel gave {}; the switchback would not compare what it claims",
                applied.actual
            );
        }
    }
    Ok(())
}

/// Sleep until `until` (unix seconds) or a deferred signal; true when stopped by the signal.
fn wait(until: f64) -> bool {
    while now() < until {
        if control::stop_requested() {
            return true;
        }
        std::thread::sleep(Duration::from_secs_f64((until - now()).clamp(0.0, 0.2)));
    }
    control::stop_requested()
}

/// Each complete pair's periods as one slot of `period` seconds: the points of `arm`'s period
/// after the burn-in, moved to `pair × period + offset`.
fn slots(series: &[Series], periods: &[Period], arm: usize, burn: f64, period: f64) -> Vec<Series> {
    series
        .iter()
        .map(|s| Series {
            labels: s.labels.clone(),
            points: s
                .points
                .iter()
                .filter_map(|(t, v)| {
                    let p = periods
                        .iter()
                        .find(|p| p.arm == arm && *t >= p.start + burn && *t < p.end)?;
                    let offset = (t - p.start).min(period * 0.999_999);
                    Some((p.pair as f64 * period + offset, *v))
                })
                .collect(),
        })
        .collect()
}

pub fn run(a: &JudgeArgs) -> anyhow::Result<JudgeResult> {
    let host = check(a)?;
    let token = token(a)?;
    let period = a.period.as_secs_f64();
    let mut rng = crate::rng::XorShift::new(a.seed);
    let order: Vec<[usize; 2]> = (0..a.pairs)
        .map(|_| if rng.below(2) == 0 { [0, 1] } else { [1, 0] })
        .collect();
    let knobs = touched(&a.arms);
    crate::eprintln_safe!(
        "switchback on {{{host}}}: {} pairs of {} periods ({} then {} in random order within each pair, seed {}), about {} in all; Ctrl-C stops after restoring the settings",
        a.pairs,
        fmt_span(period),
        a.arms[0].name,
        a.arms[1].name,
        a.seed,
        fmt_span(period * 2.0 * a.pairs as f64)
    );
    control::defer_first_signal("stopping the switchback; the settings are restored");
    let mut guard = Guard::system()?;
    let mut periods: Vec<Period> = Vec::new();
    let mut stopped = None;
    'pairs: for (k, pair) in order.iter().enumerate() {
        for &arm in pair {
            apply(&mut guard, &a.arms[arm], &knobs)?;
            let start = now();
            crate::eprintln_safe!(
                "pair {}/{}: {} ({}) for {}",
                k + 1,
                a.pairs,
                a.arms[arm].name,
                a.arms[arm].spec,
                fmt_span(period)
            );
            if wait(start + period) {
                stopped = Some(format!("a signal during pair {}", k + 1));
                break 'pairs;
            }
            periods.push(Period {
                pair: k,
                arm,
                start,
                end: now(),
            });
        }
    }
    let restored: Vec<String> = guard.restore().iter().map(|r| r.describe()).collect();
    for r in &restored {
        crate::eprintln_safe!("restored {r}");
    }
    drop(guard);
    // Only pairs with both periods complete are blocks: a signal can only leave the last pair
    // with one, so the complete pairs are 0..n.
    let pairs = periods.len() / 2;
    periods.retain(|p| p.pair < pairs);
    let (Some(first), Some(last)) = (periods.first().copied(), periods.last().copied()) else {
        anyhow::bail!(
            "stopped before a pair of periods was complete; nothing judged (the settings are restored)"
        );
    };
    // Let the last period's samples reach Prometheus (one scrape interval at most, taken as the
    // step).
    std::thread::sleep(a.step + Duration::from_secs(1));
    let started = Instant::now();
    let mut prom = Prometheus::new(&a.prometheus, token, a.timeout);
    let burn = a.burn_in.as_secs_f64();
    let window = Window {
        start: 0.0,
        end: pairs as f64 * period,
        interval: period,
    };
    let step = a.step.as_secs_f64();
    let mut judged = judge_all(
        a,
        (&window, (first.start, last.end)),
        None,
        (&Design::Fixed, crate::analyze::judge::Groups::OneHost),
        |what, q, _| {
            let s = prom
                .query_range(&fill(q, &host), first.start, last.end, step)
                .map_err(|e| anyhow::anyhow!("{e}\n  while fetching {what} for this host"))?;
            Ok((
                slots(&s, &periods, 1, burn, period),
                slots(&s, &periods, 0, burn, period),
            ))
        },
    )?;
    // Samples of one slot come from two periods that did not run side by side: a per-sample
    // autocorrelation across them would be a number about nothing.
    for m in &mut judged.0 {
        m.autocorrelation.per_step = None;
    }
    Ok(record(
        a,
        (
            format!("{host} in {} periods", a.arms[1].name),
            format!("{host} in {} periods", a.arms[0].name),
        ),
        (first.start, last.end, &window),
        Design::Fixed,
        judged,
        &prom,
        started,
        1,
        Some(Switchback {
            host,
            arms: [
                (a.arms[0].name.clone(), a.arms[0].spec.clone()),
                (a.arms[1].name.clone(), a.arms[1].spec.clone()),
            ],
            period_s: period,
            seed: a.seed,
            periods,
            restored,
            stopped,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_each_arm_s_points_after_the_burn_in_in_its_pair_s_slot() {
        let s = vec![Series {
            labels: Default::default(),
            points: (0..40).map(|t| (1000.0 + t as f64, t as f64)).collect(),
        }];
        // Pair 0: arm 1 on [1000, 1010), arm 0 on [1010, 1020); pair 1: arm 0 then arm 1.
        let p = |pair, arm, start: f64| Period {
            pair,
            arm,
            start,
            end: start + 10.0,
        };
        let periods = vec![
            p(0, 1, 1000.0),
            p(0, 0, 1010.0),
            p(1, 0, 1020.0),
            p(1, 1, 1030.0),
        ];
        let on = slots(&s, &periods, 1, 2.0, 10.0);
        let off = slots(&s, &periods, 0, 2.0, 10.0);
        let ts = |x: &[Series]| x[0].points.iter().map(|p| p.0).collect::<Vec<_>>();
        assert_eq!(ts(&on)[..2], [2.0, 3.0]);
        assert_eq!(ts(&on)[8..10], [12.0, 13.0]);
        assert_eq!(off[0].points[0], (2.0, 12.0));
        assert_eq!(on[0].points.len() + off[0].points.len(), 32);
    }
}
