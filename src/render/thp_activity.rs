//! The answer's line on what the kernel's THP machinery did during each arm's trials: the
//! per-size `hugepages-*/stats` counters (faults and fallbacks, splits, swap-outs, shared
//! memory), the underused-THP shrinker and collapses from /proc/vmstat, and the partly mapped
//! huge pages at the peak — the ones that moved, in words.

use super::words::wrap_hanging;
use crate::model::analysis::ArmEvidence;
use crate::model::analysis::ExperimentAnalysis;
use std::collections::BTreeMap;

/// Per-size stats worth their own words; any other stat that moved is named as the kernel
/// names it.
const WORDED: &[&str] = &[
    "anon_fault_alloc",
    "anon_fault_fallback",
    "anon_fault_fallback_charge",
    "split",
    "split_deferred",
    "split_failed",
    "swpout",
    "swpout_fallback",
    "shmem_alloc",
    "shmem_fallback",
    "shmem_fallback_charge",
];

/// /proc/vmstat counters the per-size stats do not already count, with their words.
const VMSTAT: &[(&str, &str)] = &[
    ("thp_underused_split_page", "huge pages split as underused"),
    ("thp_collapse_alloc", "huge pages collapsed"),
    ("thp_collapse_alloc_failed", "collapses failed"),
    ("thp_split_pmd", "huge mappings split to 4 KiB page tables"),
];

/// A mean count: whole above 10, one decimal below.
fn count(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `part` as a percentage of `part + rest`.
fn pct(part: f64, rest: f64) -> String {
    format!("{:.0}%", 100.0 * part / (part + rest))
}

/// The per-size stats of one arm, as (size, stat) → mean, in size order.
fn per_size(e: &ArmEvidence) -> BTreeMap<(u64, String), f64> {
    e.mean_kernel
        .iter()
        .chain(e.mean_gauges.iter())
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix("mthp.")?;
            let (size, stat) = rest.split_once('.')?;
            let bytes = size.parse::<crate::units::Bytes>().ok()?.0;
            Some(((bytes, stat.to_string()), *v))
        })
        .collect()
}

/// What moved for one arm, in words.
fn phrases(e: &ArmEvidence) -> Vec<String> {
    let stats = per_size(e);
    let mut sizes: Vec<u64> = stats.keys().map(|(s, _)| *s).collect();
    sizes.dedup();
    let mut out = Vec::new();
    for size in sizes {
        let get = |k: &str| stats.get(&(size, k.to_string())).copied().unwrap_or(0.0);
        let name = crate::units::Bytes(size);
        let mut said = Vec::new();
        let (alloc, fell) = (get("anon_fault_alloc"), get("anon_fault_fallback"));
        if alloc + fell > 0.0 {
            said.push(format!(
                "{} huge faults, {} fell back",
                count(alloc + fell),
                pct(fell, alloc)
            ));
        }
        let (shm, shm_fell) = (get("shmem_alloc"), get("shmem_fallback"));
        if shm + shm_fell > 0.0 {
            said.push(format!(
                "{} shared-memory huge allocations, {} fell back",
                count(shm + shm_fell),
                pct(shm_fell, shm)
            ));
        }
        for (k, words) in [
            ("split", "split"),
            ("split_deferred", "queued for a deferred split"),
            ("split_failed", "splits failed"),
            ("swpout", "swapped out whole"),
            ("swpout_fallback", "split to be swapped out"),
        ] {
            if get(k) > 0.0 {
                said.push(format!("{} {words}", count(get(k))));
            }
        }
        if get("nr_anon_partially_mapped") > 0.0 {
            said.push(format!(
                "{} partly mapped at the peak",
                count(get("nr_anon_partially_mapped"))
            ));
        }
        for ((s, k), v) in stats.range((size, String::new())..) {
            if *s != size {
                break;
            }
            if !k.starts_with("nr_") && !WORDED.contains(&k.as_str()) && *v > 0.0 {
                said.push(format!("{k} {}", count(*v)));
            }
        }
        if !said.is_empty() {
            out.push(format!("{name}: {}", said.join(", ")));
        }
    }
    for (k, words) in VMSTAT {
        if let Some(v) = e.mean_kernel.get(*k).filter(|v| **v > 0.0) {
            out.push(format!("{} {words}", count(*v)));
        }
    }
    out
}

/// One line per arm whose THP machinery moved during its trials (none when nothing did).
pub fn lines(r: &ExperimentAnalysis) -> Vec<String> {
    let per_arm: Vec<(String, Vec<String>)> = r
        .evidence
        .iter()
        .map(|e| (e.arm.clone(), phrases(e)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if per_arm.is_empty() {
        return Vec::new();
    }
    // Under a duet every arm's burst of a block ran at once: each arm's machine-wide counts
    // are every arm's together, and are said to be.
    let shared = r.evidence.iter().any(|e| e.kernel_shared > 0);
    let mut out = wrap_hanging(
        if shared {
            "kernel THP activity per trial (means; machine-wide counters over every arm's burst at once — the duet — so each arm's counts are all the arms' together; gauges at the peak):"
        } else {
            "kernel THP activity per trial (means; machine-wide counters, gauges at the peak):"
        },
        2,
    );
    for (arm, p) in per_arm {
        out.extend(wrap_hanging(&format!("  {arm}: {}", p.join("; ")), 4));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(kernel: &[(&str, f64)], gauges: &[(&str, f64)]) -> ArmEvidence {
        let map = |v: &[(&str, f64)]| v.iter().map(|(k, x)| (k.to_string(), *x)).collect();
        ArmEvidence {
            arm: "always".into(),
            trials: 4,
            mean_kernel: map(kernel),
            mean_gauges: map(gauges),
            ..Default::default()
        }
    }

    #[test]
    fn what_moved_is_said_per_size_and_the_rest_is_silent() {
        let e = arm(
            &[
                ("mthp.2M.anon_fault_alloc", 97.0),
                ("mthp.2M.anon_fault_fallback", 3.0),
                ("mthp.2M.split_deferred", 12.0),
                ("mthp.2M.zswpout", 2.0),
                ("mthp.64K.anon_fault_alloc", 8.0),
                ("thp_underused_split_page", 412.0),
                ("thp_fault_alloc", 97.0),
                ("compact_stall", 5.0),
            ],
            &[
                ("mthp.2M.nr_anon_partially_mapped", 4.0),
                ("mthp.2M.nr_anon", 60.0),
            ],
        );
        assert_eq!(
            phrases(&e),
            [
                "64K: 8.0 huge faults, 0% fell back",
                "2M: 100 huge faults, 3% fell back, 12 queued for a deferred split, 4.0 partly mapped at the peak, zswpout 2.0",
                "412 huge pages split as underused"
            ]
        );
        // Nothing moved: no line at all.
        assert!(phrases(&arm(&[("compact_stall", 1.0)], &[("mthp.2M.nr_anon", 9.0)])).is_empty());
    }

    /// Under a duet the machine-wide counts of each arm are every arm's at once: the line says so.
    #[test]
    fn counts_every_arm_shared_are_said_to_be_shared() {
        let mut e = arm(&[("mthp.2M.anon_fault_alloc", 97.0)], &[]);
        let r = |e: &ArmEvidence| crate::model::analysis::ExperimentAnalysis {
            baseline: "never".into(),
            effect: 0.01,
            confidence: 0.99,
            design: Default::default(),
            metrics: Vec::new(),
            evidence: vec![e.clone()],
            conditions: Vec::new(),
            warmup: None,
            stalls: Vec::new(),
            tails: Vec::new(),
            warning_kinds: Vec::new(),
            unchanged_costs: Vec::new(),
        };
        assert!(!lines(&r(&e)).join(" ").contains("duet"));
        e.kernel_shared = 4;
        let shared = lines(&r(&e))
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            shared.contains("the duet") && shared.contains("all the arms' together"),
            "{shared}"
        );
        assert!(
            lines(&r(&e))
                .iter()
                .all(|l| l.chars().count() <= crate::render::words::WIDTH)
        );
    }
}
