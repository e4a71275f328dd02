//! Which measured arm to advise for a VM.

use super::host::host_advice;
use crate::analyze::experiment::ExperimentAnalysis;
use crate::analyze::verdict::Verdict;
use crate::backing::qemu::QemuBacking;
pub use crate::model::vm::VmAdvice;

/// The backing to recommend from a run's report: the arm with the largest improvement over the
/// baseline on the primary metric among those whose interval says better (FASTER) and whose
/// trials were never flagged. Without one, no configuration is advised (keeping the baseline is
/// not a measured improvement). `backings[i]` is arm i's QEMU backing.
pub fn advise(
    report: &ExperimentAnalysis,
    backings: &[Option<QemuBacking>],
    guest: u64,
    nodes: usize,
) -> Option<VmAdvice> {
    let primary = report.primary()?;
    let names: Vec<&str> = primary.arms.iter().map(|a| a.arm.as_str()).collect();
    let flagged = |n: &str| report.evidence.iter().any(|e| e.arm == n && e.flagged > 0);
    let best = primary
        .contrasts
        .iter()
        .filter_map(|(n, c)| c.as_ref().map(|c| (n, c)))
        .filter(|(n, c)| c.verdict == Verdict::Faster && !flagged(n))
        .max_by(|a, b| a.1.percent.point.abs().total_cmp(&b.1.percent.point.abs()));
    let Some((arm, c)) = best else {
        return Some(VmAdvice {
            arm: None,
            because: format!(
                "no backing was measurably better than the baseline {} on {} (more blocks narrow the intervals)",
                report.baseline, primary.metric.name
            ),
            advice: None,
        });
    };
    let because = format!(
        "{arm} was better than {} on {}: {:+.1}% [{}, {}] ({} blocks)",
        report.baseline,
        primary.metric.name,
        c.percent.point,
        c.percent
            .lo
            .map_or("-".into(), |v| crate::units::fmt_bound(v, 1)),
        c.percent
            .hi
            .map_or("-".into(), |v| crate::units::fmt_bound(v, 1)),
        c.blocks
    );
    let i = names.iter().position(|n| *n == arm)?;
    let backing = (*backings.get(i)?)?;
    Some(VmAdvice {
        arm: Some(arm.clone()),
        because,
        advice: Some(host_advice(backing, guest, nodes, 1)),
    })
}
