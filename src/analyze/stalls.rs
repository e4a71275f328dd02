//! Direct compaction and direct reclaim stalls as a cost of every run: per trial the kernel's
//! own count over the trial (`/proc/vmstat` `compact_stall`, the sum of `allocstall_*`), each
//! arm against the baseline by paired blocks — the difference per trial (Hodges–Lehmann of the
//! per-block differences, signed-rank interval), at the run's level split (Bonferroni) over every
//! arm and kind. A kind no trial stalled on is left out; trials whose counters other arms' trials
//! shared (a duet block) are not used, as the count is not theirs alone.

use crate::model::analysis::{StallCount, TrialData};
use crate::model::verdict::Verdict;
use std::collections::BTreeMap;

/// The kinds counted, with the counters each sums.
const KINDS: [(&str, &str); 2] = [
    ("direct compaction stalls", "compact_stall"),
    ("direct reclaim stalls", "allocstall"),
];

/// One counter's delta from a trial's vmstat deltas; `allocstall` sums every zone's
/// (`allocstall_normal`, `allocstall_movable`, …). A counter absent did not move.
pub fn counted(kernel: &BTreeMap<String, f64>, key: &str) -> f64 {
    kernel
        .iter()
        .filter(|(k, _)| k.as_str() == key || (key == "allocstall" && k.starts_with("allocstall_")))
        .map(|(_, v)| v)
        .sum()
}

/// A trial's count of one kind, when it read the counters on its own.
fn count(t: &TrialData, key: &str) -> Option<f64> {
    if !t.ok || t.kernel_shared {
        return None;
    }
    Some(counted(t.kernel.as_ref()?, key))
}

/// Every non-baseline arm against the baseline, for each kind some trial stalled on.
pub fn stall_counts(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    confidence: f64,
) -> Vec<StallCount> {
    let kinds: Vec<(&str, &str)> = KINDS
        .into_iter()
        .filter(|(_, c)| trials.iter().any(|t| count(t, c).is_some_and(|n| n > 0.0)))
        .collect();
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let m = (kinds.len() * others.len()).max(1);
    let level = crate::stats::Level(confidence).split(m).get();
    let mut out = Vec::new();
    for (kind, counter) in kinds {
        for &arm in &others {
            let of = |a: usize, block: usize| {
                trials
                    .iter()
                    .find(|t| t.arm == a && t.block == block)
                    .and_then(|t| count(t, counter))
            };
            let mut blocks: Vec<usize> = trials.iter().map(|t| t.block).collect();
            blocks.sort_unstable();
            blocks.dedup();
            let pairs: Vec<(f64, f64)> = blocks
                .into_iter()
                .filter_map(|b| Some((of(arm, b)?, of(baseline, b)?)))
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let d: Vec<f64> = pairs.iter().map(|(a, b)| a - b).collect();
            let Some(e) = crate::stats::hodges_lehmann(&d, level) else {
                continue;
            };
            let verdict = match (e.lo, e.hi) {
                (Some(lo), _) if lo > 0.0 => Verdict::Slower,
                (_, Some(hi)) if hi < 0.0 => Verdict::Faster,
                _ => Verdict::Inconclusive,
            };
            let mean =
                |f: fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / pairs.len() as f64;
            out.push(StallCount {
                kind: kind.to_string(),
                arm: arms[arm].clone(),
                baseline: arms[baseline].clone(),
                arm_mean: mean(|p| p.0),
                baseline_mean: mean(|p| p.1),
                blocks: pairs.len(),
                difference: e,
                level,
                verdict,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(block: usize, arm: usize, stalls: f64, reclaim: f64, shared: bool) -> TrialData {
        TrialData {
            block,
            arm,
            ok: true,
            kernel: Some(
                [
                    ("compact_stall".to_string(), stalls),
                    ("allocstall_normal".to_string(), reclaim),
                    ("allocstall_movable".to_string(), reclaim),
                    ("thp_fault_alloc".to_string(), 100.0),
                ]
                .into(),
            ),
            kernel_shared: shared,
            ..Default::default()
        }
    }

    #[test]
    fn an_arm_that_stalls_in_every_block_costs_more_stalls_and_one_that_does_not_is_not_shown() {
        // `madvise` compacts 5–7 times a trial where `never` does not; nobody reclaims.
        let trials: Vec<TrialData> = (0..12)
            .flat_map(|b| {
                [
                    trial(b, 0, 0.0, 0.0, false),
                    trial(b, 1, 5.0 + (b % 3) as f64, 0.0, false),
                ]
            })
            .collect();
        let names = ["never".to_string(), "madvise".to_string()];
        let s = stall_counts(&names, 0, &trials, 0.99);
        assert_eq!(s.len(), 1, "reclaim never stalled: {s:?}");
        let c = &s[0];
        assert_eq!(
            (c.kind.as_str(), c.arm.as_str()),
            ("direct compaction stalls", "madvise")
        );
        assert_eq!(c.blocks, 12);
        assert_eq!(c.verdict, Verdict::Slower);
        assert!(c.difference.lo.unwrap() > 0.0 && (c.arm_mean - 6.0).abs() < 1e-9);
        assert_eq!(c.level, 0.99);
    }

    #[test]
    fn reclaim_sums_every_zone_and_the_level_splits_over_arms_and_kinds() {
        let trials: Vec<TrialData> = (0..12)
            .flat_map(|b| {
                [
                    trial(b, 0, 1.0, 0.0, false),
                    trial(b, 1, 1.0, 2.0, false),
                    trial(b, 2, 1.0, 0.0, false),
                ]
            })
            .collect();
        let names = ["a".to_string(), "b".to_string(), "c".to_string()];
        let s = stall_counts(&names, 0, &trials, 0.99);
        assert_eq!(s.len(), 4, "2 kinds × 2 arms: {s:?}");
        assert!((s[0].level - (1.0 - 0.01 / 4.0)).abs() < 1e-12);
        let b = s
            .iter()
            .find(|c| c.arm == "b" && c.kind.contains("reclaim"))
            .unwrap();
        assert_eq!(b.difference.point, 4.0, "two zones of 2 each");
        assert_eq!(b.verdict, Verdict::Slower);
        let c = s
            .iter()
            .find(|c| c.arm == "c" && c.kind.contains("compaction"))
            .unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive, "the same in every block");
    }

    #[test]
    fn counts_other_arms_shared_are_not_used() {
        let trials: Vec<TrialData> = (0..12)
            .flat_map(|b| [trial(b, 0, 0.0, 0.0, true), trial(b, 1, 5.0, 0.0, true)])
            .collect();
        let names = ["a".to_string(), "b".to_string()];
        assert!(stall_counts(&names, 0, &trials, 0.99).is_empty());
    }
}
