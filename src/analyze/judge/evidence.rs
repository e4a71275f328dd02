//! The backing evidence of a judgement: each group's mean huge-page coverage over the window
//! (from the exporter's series), the hosts of the group meant to be on huge pages that were
//! not, FLAGGED when that group was not or the other was as much as it, and the kernel's
//! activity per group.

use super::{HostRow, Window, host_rows};
use crate::collect::prometheus::Series;
pub use crate::model::judge::{Evidence, HugeOn, KernelRow, WindowCoverage};

/// Coverage at or above this means a group's services were on huge pages: `run`'s FLAGGED
/// threshold (`analyze::flagged`), applied to the exporter's per-process coverage series (the
/// exporter reads smaps_rollup totals, not regions: the memory that matters is not judged here).
pub const HUGE_COVERAGE: f64 = crate::analyze::flagged::FELL_BACK_BELOW;

/// The backing evidence from each group's coverage series over the window, and FLAGGED when
/// the group meant to be on huge pages was not, or the other was as much as it.
pub fn evidence(
    canary: &[Series],
    baseline: &[Series],
    w: &Window,
    huge_on: HugeOn,
    cgroups: Option<&str>,
) -> Evidence {
    let whose = crate::model::judge::whose(cgroups);
    let rows = |ss: &[Series], is_canary: bool| host_rows(ss, w, is_canary);
    let (c, b) = (rows(canary, true), rows(baseline, false));
    let mean = |r: &[HostRow]| {
        (!r.is_empty()).then(|| r.iter().map(|h| h.mean).sum::<f64>() / r.len() as f64)
    };
    let (cc, bc) = (mean(&c), mean(&b));
    let pct = |v: f64| format!("{:.0}%", v * 100.0);
    let mut flagged = None;
    let mut hosts_without = Vec::new();
    let mut check = |group: &str, rows: &[HostRow], cov: Option<f64>| {
        hosts_without.extend(
            rows.iter()
                .filter(|h| h.mean < HUGE_COVERAGE)
                .map(|h| h.host.clone()),
        );
        if let Some(v) = cov
            && v < HUGE_COVERAGE
            && flagged.is_none()
        {
            flagged = Some(format!(
                "the {group}'s {whose} were not on huge pages: mean coverage {} over the window ({} of {} hosts below {})",
                pct(v),
                rows.iter().filter(|h| h.mean < HUGE_COVERAGE).count(),
                rows.len(),
                pct(HUGE_COVERAGE)
            ));
        }
    };
    match huge_on {
        HugeOn::Canary => check("canary", &c, cc),
        HugeOn::Baseline => check("baseline", &b, bc),
        HugeOn::Both => {
            check("canary", &c, cc);
            check("baseline", &b, bc);
        }
    }
    let other = match huge_on {
        HugeOn::Canary => Some(("baseline", bc, "canary", cc)),
        HugeOn::Baseline => Some(("canary", cc, "baseline", bc)),
        HugeOn::Both => None,
    };
    if flagged.is_none()
        && let Some((name, Some(o), meant, Some(m))) = other
        && o >= HUGE_COVERAGE
        && o >= 0.9 * m
    {
        flagged = Some(format!(
            "the {name} was on huge pages as much as the {meant} ({} vs {} mean coverage): the change did not change the backing",
            pct(o),
            pct(m)
        ));
    }
    Evidence {
        canary_coverage: cc,
        baseline_coverage: bc,
        hosts_without,
        flagged,
        kernel: Vec::new(),
        before: None,
        cgroups: cgroups.map(str::to_string),
    }
}

/// The before window's coverage into `e`, and FLAGGED when the canary had already changed in
/// it: on huge pages before a change that puts it there (or off them before a change that
/// takes it off, while the baseline was on them) — then the before window does not calibrate
/// the groups.
pub fn before_evidence(
    canary: &[Series],
    baseline: &[Series],
    w: &Window,
    huge_on: HugeOn,
    e: &mut Evidence,
) {
    let (c, b) = (window_mean(canary, w), window_mean(baseline, w));
    let pct = |v: f64| format!("{:.0}%", v * 100.0);
    let already = match (huge_on, c, b) {
        (HugeOn::Canary, Some(c), _) if c >= HUGE_COVERAGE => Some(format!(
            "on huge pages in the before window (mean coverage {})",
            pct(c)
        )),
        (HugeOn::Baseline, Some(c), Some(b)) if c < HUGE_COVERAGE && b >= HUGE_COVERAGE => {
            Some(format!(
                "off huge pages in the before window (mean coverage {} against the baseline's {})",
                pct(c),
                pct(b)
            ))
        }
        _ => None,
    };
    if let Some(what) = already
        && e.flagged.is_none()
    {
        e.flagged = Some(format!(
            "the canary was already changed in the before window: its watched processes were {what}, so that window does not show the groups without the change; give a before window that ends before the change reached the canary"
        ));
    }
    e.before = Some(WindowCoverage {
        canary: c,
        baseline: b,
    });
}

/// Mean over the window of a group's series (each host weighs the same).
pub fn window_mean(series: &[Series], w: &Window) -> Option<f64> {
    let r = host_rows(series, w, true);
    (!r.is_empty()).then(|| r.iter().map(|h| h.mean).sum::<f64>() / r.len() as f64)
}
