//! A stored run analysed again: its stored baseline, metric directions and design, at the
//! level and δ asked for now (`results show`, `report`, `advise`).

use crate::analyze::experiment;
use crate::model::analysis::MetricDef;
use crate::model::analysis::TrialData;
use crate::model::stored::StoredRunPlan;
use crate::model::verdict::Better;
use crate::store::{ArmRow, RunMeta, TrialRow};

/// `defs` with the metrics the trials found in their results (`evidence.load_metrics`: JMH's
/// rows, each with its direction), in the order first seen, before the cost metrics: the first
/// row is then the primary metric.
pub fn with_discovered(mut defs: Vec<MetricDef>, trials: &[TrialRow]) -> Vec<MetricDef> {
    let at = defs.iter().position(|d| d.cost).unwrap_or(defs.len());
    let mut found: Vec<MetricDef> = Vec::new();
    for t in trials {
        for m in t.evidence.load_metrics.iter().flatten() {
            if defs.iter().chain(&found).any(|d| d.name == m.name) {
                continue;
            }
            // A profiler's metric is not a row of the load's table (not in the rows' family);
            // one without a known direction is recorded, not contrasted.
            found.push(MetricDef {
                row: !m.secondary,
                context: m.context,
                ..MetricDef::contrasted(&m.name, Better::of(m.higher))
            });
        }
    }
    defs.splice(at..at, found);
    defs
}

fn metric_defs(stored: &[MetricDef], trials: &[TrialRow]) -> Vec<MetricDef> {
    if !stored.is_empty() {
        return with_discovered(stored.to_vec(), trials);
    }
    let mut names: Vec<String> = trials
        .iter()
        .flat_map(|t| t.metrics.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| MetricDef::contrasted(name, Better::Lower))
        .collect()
}

fn data(trials: &[TrialRow]) -> Vec<TrialData> {
    trials
        .iter()
        .filter(|t| t.block >= 0)
        .map(trial_data)
        .collect()
}

/// Analyse a stored run again, with its stored baseline and metric directions.
pub fn reanalyse(
    meta: &RunMeta,
    arms: &[ArmRow],
    trials: &[TrialRow],
    effect: f64,
    confidence: f64,
) -> experiment::ExperimentAnalysis {
    analyse_plan(&meta.plan, arms, trials, effect, confidence)
}

/// The record of an import that kept none (hyperfine's file; a hugelab export from before
/// exports carried the record): its trials analysed at the decision its plan kept, else at the
/// defaults — and the record says which.
pub fn imported_record(
    plan: &StoredRunPlan,
    arms: &[ArmRow],
    trials: &[TrialRow],
) -> crate::model::record::RunRecord {
    use crate::model::decision::{Decision, Kept, Kind};
    let (effect, confidence) = plan.decision();
    let kind = match confidence {
        Some(_) => Kind::Run,
        None => Kind::Import,
    };
    let decision = Decision::resolve(kind, Kept { effect, confidence }, plan.design(), None, None);
    let report = analyse_plan(
        plan,
        arms,
        trials,
        decision.effect_or_default(),
        decision.confidence,
    );
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    crate::model::record::RunRecord {
        schema: crate::model::record::RECORD_SCHEMA.into(),
        run_id: 0,
        stored: true,
        service: plan.served(),
        replicas: plan.replicas(),
        facts: crate::model::record::RunFacts {
            blocks: report.primary().map_or(0, |m| m.complete_blocks),
            ..Default::default()
        },
        trace_stalls: stall_contrasts(trials, &names, plan.baseline(), decision.confidence),
        decision: Some(decision),
        report,
        pools: Vec::new(),
        advice: None,
        servers: Vec::new(),
        notes: plan.said().to_vec(),
        noise: Vec::new(),
        calibration: None,
        tlb: None,
        vm_advice: None,
    }
}

/// Analyse stored trials under the plan they were stored with.
fn analyse_plan(
    plan: &StoredRunPlan,
    arms: &[ArmRow],
    trials: &[TrialRow],
    effect: f64,
    confidence: f64,
) -> experiment::ExperimentAnalysis {
    let meta_plan = plan;
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let baseline = meta_plan.baseline().min(names.len().saturating_sub(1));
    let described: Vec<(String, String)> = meta_plan
        .conditions()
        .iter()
        .map(|c| (c.name(), c.describe()))
        .collect();
    crate::analyze::conditions::analyse(
        &names,
        baseline,
        &data(trials),
        &metric_defs(meta_plan.metrics(), trials),
        effect,
        confidence,
        &meta_plan.design(),
        &described,
    )
}

/// `run --trace` stored each trial's latency histograms: per stall kind, each arm's stall time
/// per trial against the baseline's, paired by block.
pub fn stall_contrasts(
    trials: &[TrialRow],
    names: &[String],
    baseline: usize,
    confidence: f64,
) -> Vec<crate::model::trace::StallContrast> {
    use crate::analyze::trace::{TrialStall, stall_contrasts};
    let mut stalls = Vec::new();
    let mut traced = Vec::new();
    for t in trials.iter().filter(|t| t.block >= 0 && t.ok) {
        let Some(w) = t.evidence.trace.clone() else {
            continue;
        };
        traced.push((t.block, t.arm_idx as usize));
        for l in w.latencies {
            stalls.push(TrialStall {
                block: t.block,
                arm: t.arm_idx as usize,
                kind: l.kind,
                ms: l.hist.total_ns as f64 / 1e6,
            });
        }
    }
    stall_contrasts(&stalls, &traced, names, baseline, confidence)
}

/// A stored trial as the analysis sees it.
pub fn trial_data(t: &TrialRow) -> crate::model::analysis::TrialData {
    crate::analyze::experiment::trial_data(
        t.block,
        t.arm_idx,
        t.ok,
        t.flagged.clone(),
        t.metrics.clone(),
        &t.evidence,
    )
}
