//! Machine states as a factor (`run --condition`): the contrasts within each condition, the
//! interaction (does an arm's effect change between the first condition and another, with an
//! interval), and per arm the state each trial started in and the kernel's compaction and
//! reclaim during it.

use super::experiment::{self, ExperimentAnalysis, MetricDef, TrialData};
pub use super::experiment::{ArmState, ConditionAnalysis, Interaction};
pub use super::trial_data::TrialCondition;
use super::verdict::{Design, holm, holm_levels, to_percent};
pub use crate::model::costs::SHOWN_COUNTERS;
use crate::stats::{mann_whitney_shift, mean_of as mean};
use std::collections::BTreeMap;

fn arm_states(arms: &[String], trials: &[&TrialData]) -> Vec<ArmState> {
    (0..arms.len())
        .map(|a| {
            let cs: Vec<&TrialCondition> = trials
                .iter()
                .filter(|t| t.arm == a && t.ok)
                .filter_map(|t| t.condition.as_ref())
                .collect();
            let mut per_trial = BTreeMap::new();
            for (key, _) in SHOWN_COUNTERS {
                let of = |c: &TrialCondition| super::stalls::counted(&c.kernel, key);
                if let Some(m) = mean(cs.iter().filter(|c| c.kernel_read).map(|c| of(c))) {
                    per_trial.insert(key.to_string(), m);
                }
            }
            let kinds: std::collections::BTreeSet<&String> =
                cs.iter().flat_map(|c| c.stalls_ms.keys()).collect();
            for k in kinds {
                let m = mean(
                    cs.iter()
                        .map(|c| c.stalls_ms.get(k).copied().unwrap_or(0.0)),
                );
                per_trial.insert(format!("{k} ms"), m.unwrap_or(0.0));
            }
            ArmState {
                arm: arms[a].clone(),
                trials: cs.len(),
                free_2m_blocks: mean(cs.iter().filter_map(|c| c.free_2m_blocks.map(|v| v as f64))),
                unusable_2m: mean(cs.iter().filter_map(|c| c.unusable_2m)),
                mem_available: mean(cs.iter().filter_map(|c| c.mem_available.map(|v| v as f64))),
                per_trial,
                counters_read: cs.iter().filter(|c| c.kernel_read).count(),
            }
        })
        .collect()
}

/// The interaction of each non-baseline arm: its per-block log-ratios here against those under
/// the first condition, Holm across the arms.
fn interactions(
    pairs: &[(String, Vec<f64>, Vec<f64>)],
    confidence: f64,
) -> Vec<(String, Option<Interaction>)> {
    let raw: Vec<f64> = pairs
        .iter()
        .map(|(_, here, first)| mann_whitney_shift(here, first, 0.5).map_or(1.0, |s| s.p_value))
        .collect();
    let adjusted = if raw.len() > 1 {
        holm(&raw)
    } else {
        raw.clone()
    };
    let levels = holm_levels(&raw, confidence, |i, level| {
        mann_whitney_shift(&pairs[i].1, &pairs[i].2, level)
            .is_some_and(|s| s.estimate.excludes(0.0))
    });
    pairs
        .iter()
        .zip(adjusted)
        .zip(levels)
        .map(|(((arm, here, first), p), level)| {
            let i = mann_whitney_shift(here, first, level).map(|s| Interaction {
                percent: to_percent(s.estimate),
                p_value: p,
                level,
                blocks: (here.len(), first.len()),
            });
            (arm.clone(), i)
        })
        .collect()
}

/// The names of the conditions the trials ran under, in the order they first ran.
pub fn conditions_of(trials: &[TrialData]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut ts: Vec<&TrialData> = trials.iter().collect();
    ts.sort_by_key(|t| t.block);
    for t in ts {
        if let Some(c) = &t.condition
            && !names.contains(&c.name)
        {
            names.push(c.name.clone());
        }
    }
    names
}

/// A run's analysis: with conditions, the first condition's contrasts as the report, and every
/// condition's own analysis beside it; without, the plain analysis.
#[allow(clippy::too_many_arguments)]
pub fn analyse(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    effect: f64,
    confidence: f64,
    design: &Design,
    descriptions: &[(String, String)],
) -> ExperimentAnalysis {
    // A warm service's warm-up bursts, detected on the primary metric, are not measured.
    let primary = &metrics[experiment::primary_index(metrics)].name;
    let warmup = super::warmup::detect(trials, arms.len(), primary, confidence);
    let kept = warmup.as_ref().map(|w| super::warmup::without(trials, w));
    let trials = kept.as_deref().unwrap_or(trials);
    let mut report = by_condition(
        arms,
        baseline,
        trials,
        metrics,
        (effect, confidence),
        design,
        descriptions,
    );
    report.warmup = warmup;
    report
}

/// [`analyse`] of trials whose warm-up is gone.
fn by_condition(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    (effect, confidence): (f64, f64),
    design: &Design,
    descriptions: &[(String, String)],
) -> ExperimentAnalysis {
    let names = conditions_of(trials);
    if names.is_empty() {
        return experiment::analyse(arms, baseline, trials, metrics, effect, confidence, design);
    }
    let primary = &metrics[experiment::primary_index(metrics)].name;
    let within = |name: &str| -> Vec<TrialData> {
        trials
            .iter()
            .filter(|t| t.condition.as_ref().is_some_and(|c| c.name == name))
            .cloned()
            .collect()
    };
    let first = within(&names[0]);
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let ratios = |ts: &[TrialData], a: usize| experiment::log_ratios(ts, a, baseline, primary);
    let conditions = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let ts = within(name);
            let interaction = if i == 0 {
                Vec::new()
            } else {
                let pairs: Vec<(String, Vec<f64>, Vec<f64>)> = others
                    .iter()
                    .map(|&a| (arms[a].clone(), ratios(&ts, a), ratios(&first, a)))
                    .collect();
                interactions(&pairs, confidence)
            };
            let refs: Vec<&TrialData> = ts.iter().collect();
            ConditionAnalysis {
                name: name.clone(),
                description: descriptions
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, d)| d.clone())
                    .unwrap_or_default(),
                analysis: experiment::analyse(
                    arms, baseline, &ts, metrics, effect, confidence, design,
                ),
                interaction,
                at_start: start_state(&refs),
                arms: arm_states(arms, &refs),
            }
        })
        .collect::<Vec<_>>();
    let mut report = conditions[0].analysis.clone();
    report.conditions = conditions;
    report
}

/// The state a condition's trials started in: the means over every trial that read it.
fn start_state(trials: &[&TrialData]) -> Option<crate::model::analysis::StartState> {
    let mean = |f: &dyn Fn(&TrialCondition) -> Option<f64>| {
        let v: Vec<f64> = trials
            .iter()
            .filter_map(|t| t.condition.as_ref().and_then(f))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Some(crate::model::analysis::StartState {
        free_2m_blocks: mean(&|c| c.free_2m_blocks.map(|b| b as f64))?,
        unusable_2m: mean(&|c| c.unusable_2m),
        mem_available: mean(&|c| c.mem_available.map(|m| m as f64)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::verdict::Better;

    fn trial(block: usize, arm: usize, wall: f64, condition: &str, stalls: f64) -> TrialData {
        TrialData {
            block,
            arm,
            ok: true,
            metrics: [("wall_s".to_string(), wall)].into(),
            condition: Some(TrialCondition {
                name: condition.into(),
                free_2m_blocks: Some(if condition == "clean" { 5000 } else { 0 }),
                kernel: [("compact_stall".to_string(), stalls)].into(),
                kernel_read: true,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn each_condition_has_its_contrasts_and_the_interaction_resolves_a_changed_effect() {
        let mut t = Vec::new();
        let jitter = |b: usize| 1.0 + 0.01 * ((b * 7 % 5) as f64 - 2.0);
        for b in 0..12 {
            // clean: arm 1 is 10% faster; fragmented: arm 1 is 20% slower.
            t.push(trial(b, 0, 1.0 * jitter(b), "clean", 0.0));
            t.push(trial(b, 1, 0.9 * jitter(b + 1), "clean", 0.0));
            t.push(trial(12 + b, 0, 1.0 * jitter(b), "fragmented", 0.0));
            t.push(trial(12 + b, 1, 1.2 * jitter(b + 2), "fragmented", 240.0));
        }
        let metrics = [MetricDef {
            name: "wall_s".into(),
            better: Better::Lower,
            context: false,
            cost: false,
            row: false,
        }];
        let arms = ["never".to_string(), "madvise".to_string()];
        let r = analyse(&arms, 0, &t, &metrics, 0.01, 0.95, &Design::Fixed, &[]);
        assert_eq!(r.conditions.len(), 2);
        let clean = r.metrics[0].contrasts[0].1.as_ref().unwrap();
        assert!(clean.percent.point < -5.0, "{clean:?}");
        let frag = &r.conditions[1];
        assert_eq!(frag.name, "fragmented");
        let c = frag.analysis.metrics[0].contrasts[0].1.as_ref().unwrap();
        assert!(c.percent.point > 15.0, "{c:?}");
        let i = frag.interaction[0].1.as_ref().unwrap();
        // 1.2 / 0.9 = +33%: the interval holds it and excludes no change.
        assert!(
            i.percent.lo.unwrap() > 0.0 && i.percent.point > 25.0,
            "{i:?}"
        );
        assert_eq!(i.blocks, (12, 12));
        assert_eq!(frag.arms[1].per_trial["compact_stall"], 240.0);
        assert_eq!(frag.arms[0].per_trial["compact_stall"], 0.0);
        assert_eq!(frag.arms[1].free_2m_blocks, Some(0.0));
        assert!(r.conditions[0].interaction.is_empty());
    }

    #[test]
    fn an_unchanged_effect_is_not_an_interaction() {
        let mut t = Vec::new();
        for b in 0..12 {
            let j = 1.0 + 0.02 * ((b * 5 % 7) as f64 - 3.0);
            t.push(trial(b, 0, 1.0, "clean", 0.0));
            t.push(trial(b, 1, 0.9 * j, "clean", 0.0));
            t.push(trial(12 + b, 0, 1.0, "cache", 0.0));
            t.push(trial(12 + b, 1, 0.9 / j, "cache", 0.0));
        }
        let metrics = [MetricDef {
            name: "wall_s".into(),
            better: Better::Lower,
            context: false,
            cost: false,
            row: false,
        }];
        let arms = ["a".to_string(), "b".to_string()];
        let r = analyse(&arms, 0, &t, &metrics, 0.01, 0.95, &Design::Fixed, &[]);
        let i = r.conditions[1].interaction[0].1.as_ref().unwrap();
        assert!(
            i.percent.lo.unwrap() < 0.0 && i.percent.hi.unwrap() > 0.0,
            "{i:?}"
        );
    }
}
