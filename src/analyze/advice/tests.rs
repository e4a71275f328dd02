use super::*;
use crate::analyze::experiment::{ArmEvidence, ArmMetric, MetricAnalysis, MetricDef};
use crate::analyze::verdict::{Contrast, Design};
use crate::backing::arm::parse_arm;
use crate::stats::Estimate;
use proptest::prelude::*;

/// A run of `arms` (NAME=SPEC, the first the baseline) whose contrasts on `tps` (higher is
/// better) are `(point, lo, hi, verdict, flagged trials)`.
pub fn run(id: i64, arms: &[&str], contrasts: &[(f64, f64, f64, Verdict, usize)]) -> RunEvidence {
    let arms: Vec<Arm> = arms.iter().map(|a| parse_arm(a).unwrap()).collect();
    let contrast = |(p, lo, hi, v, _): &(f64, f64, f64, Verdict, usize)| Contrast {
        blocks: 10,
        percent: Estimate {
            point: *p,
            lo: Some(*lo),
            hi: Some(*hi),
            confidence: 0.99,
        },
        mean_ratio_percent: None,
        p_value: 0.01,
        verdict: *v,
        clears_effect: lo.abs().min(hi.abs()) >= 1.0 || *v == Verdict::Equivalent,
        min_detectable_percent: Some((hi - lo) / 2.0),
        half_width_percent: Some((hi - lo) / 2.0),
        more_blocks: Some(100),
        more_s: None,
        level: 0.99,
        method: "test".into(),
        warnings: vec![],
    };
    let metric = |name: &str, better| MetricAnalysis {
        metric: MetricDef {
            name: name.into(),
            better,
            context: false,
            cost: false,
            row: false,
        },
        arms: arms
            .iter()
            .map(|a| ArmMetric {
                arm: a.name.clone(),
                summary: None,
                diagnostics: Default::default(),
            })
            .collect(),
        contrasts: arms[1..]
            .iter()
            .zip(contrasts)
            .map(|(a, c)| (a.name.clone(), Some(contrast(c))))
            .collect(),
        complete_blocks: 10,
        lifetimes: 0,
        components: Vec::new(),
    };
    let report = ExperimentAnalysis {
        baseline: arms[0].name.clone(),
        effect: 0.01,
        confidence: 0.99,
        design: Design::Fixed,
        // wall_s first, then the primary metric.
        metrics: vec![
            metric("wall_s", Better::Lower),
            metric("tps", Better::Higher),
        ],
        evidence: arms
            .iter()
            .enumerate()
            .map(|(i, a)| ArmEvidence {
                arm: a.name.clone(),
                trials: 10,
                flagged: if i == 0 { 0 } else { contrasts[i - 1].4 },
                mean_coverage_at_peak: Some(if i == 0 { 0.0 } else { 0.95 }),
                ..Default::default()
            })
            .collect(),
        conditions: Vec::new(),
        warmup: None,
        stalls: Vec::new(),
        tails: Vec::new(),
        warning_kinds: Vec::new(),
        unchanged_costs: Vec::new(),
    };
    RunEvidence {
        run_id: id,
        command: vec!["load".into()],
        shell: false,
        arms,
        baseline: 0,
        preset: None,
        report,
        stalls: vec![],
    }
}

/// `r` with one more metric: `name` (lower is better, a cost when `cost`), whose contrasts
/// are the (point, lo, hi, verdict) of each non-baseline arm in order.
pub fn with_metric(
    mut r: RunEvidence,
    name: &str,
    cost: bool,
    contrasts: &[(f64, f64, f64, Verdict)],
) -> RunEvidence {
    let mut m = r.report.metrics[0].clone();
    m.metric.name = name.into();
    m.metric.cost = cost;
    for ((_, c), (p, lo, hi, v)) in m.contrasts.iter_mut().zip(contrasts) {
        let c = c.as_mut().unwrap();
        c.percent = Estimate {
            point: *p,
            lo: Some(*lo),
            hi: Some(*hi),
            confidence: 0.99,
        };
        c.verdict = *v;
    }
    r.report.metrics.push(m);
    r
}

#[test]
fn an_arm_whose_memory_grows_by_more_than_it_gains_is_not_adopted_and_says_so() {
    let r = run(
        7,
        &["never=thp=never", "always=thp=always"],
        &[(22.0, 17.0, 32.0, Verdict::Faster, 0)],
    );
    let r = with_metric(
        r,
        "peak_mem_bytes",
        true,
        &[(1245.0, 1190.0, 1300.0, Verdict::Slower)],
    );
    let lines = findings(std::slice::from_ref(&r));
    assert_eq!(lines[0].finding, Finding::Costly);
    assert!(lines[0].weighed.contains(&"peak memory".to_string()));
    let a = machine::advise(&[r], lines);
    assert_eq!(a.adopt, None);
    assert!(a.settings.is_empty(), "{:?}", a.settings);
    assert!(
        a.summary.starts_with("no change") && a.summary.contains("peak memory +1245%"),
        "{}",
        a.summary
    );
}

#[test]
fn a_cost_smaller_than_the_gain_is_adopted_with_it_stated() {
    let r = run(
        8,
        &["never=thp=never", "always=thp=always"],
        &[(9.0, 5.0, 13.0, Verdict::Faster, 0)],
    );
    let r = with_metric(r, "sys_cpu_s", true, &[(3.0, 1.5, 4.5, Verdict::Slower)]);
    let lines = findings(std::slice::from_ref(&r));
    assert_eq!(lines[0].finding, Finding::Adopt);
    let a = machine::advise(&[r], lines);
    assert_eq!(a.adopt.as_deref(), Some("always"));
    assert!(
        a.summary.contains("costs: system CPU +3.0% [+1.5, +4.5]"),
        "{}",
        a.summary
    );
}

#[test]
fn a_secondary_metric_that_got_worse_is_a_cost_too() {
    let r = run(
        9,
        &["never=thp=never", "always=thp=always"],
        &[(4.0, 2.0, 6.0, Verdict::Faster, 0)],
    );
    // A p99 latency 25% worse (lower is better) outweighs 4% more throughput.
    let r = with_metric(
        r,
        "lat_p99_ms",
        false,
        &[(25.0, 10.0, 40.0, Verdict::Slower)],
    );
    let lines = findings(std::slice::from_ref(&r));
    assert_eq!(lines[0].finding, Finding::Costly);
    assert!(
        lines[0].outweighing()[0].starts_with("lat_p99_ms +25.0%"),
        "{:?}",
        lines[0].costs
    );
    assert_eq!(Finding::Costly.word(), "not adopted (its costs outweigh)");
    assert_eq!(Finding::BelowEffect.word(), "below δ");
}

#[test]
fn the_best_faster_unflagged_arm_is_adopted() {
    let r = run(
        1,
        &[
            "never=thp=never",
            "madvise=thp=madvise",
            "always=thp=always",
        ],
        &[
            (4.0, 2.0, 6.0, Verdict::Faster, 0),
            (9.0, 5.0, 13.0, Verdict::Faster, 0),
        ],
    );
    let lines = findings(std::slice::from_ref(&r));
    assert_eq!(lines[0].finding, Finding::Runner);
    assert_eq!(lines[1].finding, Finding::Adopt);
    let runs = [r];
    let (_, arm) = adopted(&runs, &lines).unwrap();
    assert_eq!(arm.name, "always");
}

#[test]
fn settings_another_run_measured_slower_are_not_adopted() {
    let fast = run(
        1,
        &["never=thp=never", "always=thp=always"],
        &[(9.0, 5.0, 13.0, Verdict::Faster, 0)],
    );
    let slow = run(
        2,
        &["never=thp=never", "always=thp=always"],
        &[(-6.0, -9.0, -3.0, Verdict::Slower, 0)],
    );
    let runs = [fast, slow];
    let lines = findings(&runs);
    assert_eq!(lines[0].finding, Finding::Conditional);
    assert!(
        lines[0].against[0].starts_with("run 2: always vs never"),
        "{:?}",
        lines[0].against
    );
    assert!(adopted(&runs, &lines).is_none());
}

#[test]
fn flagged_slower_and_unsettled_arms_are_never_adopted() {
    let r = run(
        2,
        &[
            "a=thp=never",
            "b=thp=always",
            "c=thp=madvise",
            "d=mthp.64K=always",
        ],
        &[
            (20.0, 10.0, 30.0, Verdict::Faster, 3),
            (-9.0, -13.0, -5.0, Verdict::Slower, 0),
            (3.0, -4.0, 10.0, Verdict::Inconclusive, 0),
        ],
    );
    let lines = findings(std::slice::from_ref(&r));
    let f: Vec<Finding> = lines.iter().map(|l| l.finding).collect();
    assert_eq!(
        f,
        [Finding::Flagged, Finding::Slower, Finding::Inconclusive]
    );
    assert!(adopted(&[r], &lines).is_none());
    let words = no_change(&lines);
    assert!(
        words.contains("b (run 2) FLAGGED") && words.contains("d (run 2) INCONCLUSIVE at ±7.0%"),
        "{words}"
    );
    // The half-width is the one `run` printed for the contrast.
    assert_eq!(lines[2].half_width, Some(7.0));
}

proptest! {
    /// Advice contrary to the evidence is impossible: whatever the contrasts, an adopted
    /// arm was FASTER by at least δ on the primary metric and never flagged, and no
    /// other adoptable arm did better.
    #[test]
    fn never_adopts_against_the_evidence(
        cs in proptest::collection::vec(
            (-30.0f64..30.0, 0.1f64..20.0, 0usize..5, 0usize..3),
            1..5,
        )
    ) {
        let verdicts = [Verdict::Faster, Verdict::Slower, Verdict::Inconclusive, Verdict::Equivalent, Verdict::Faster];
        let contrasts: Vec<(f64, f64, f64, Verdict, usize)> = cs
            .iter()
            .map(|(p, w, v, f)| (*p, p - w, p + w, verdicts[*v], if *f == 0 { 1 } else { 0 }))
            .collect();
        let names: Vec<String> = (0..=contrasts.len()).map(|i| format!("a{i}=thp=never")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let r = run(1, &names, &contrasts);
        let lines = findings(std::slice::from_ref(&r));
        let adopted: Vec<&EvidenceLine> = lines.iter().filter(|l| l.finding == Finding::Adopt).collect();
        prop_assert!(adopted.len() <= 1);
        if let Some(a) = adopted.first() {
            prop_assert_eq!(a.verdict, Verdict::Faster);
            prop_assert_eq!(a.flagged, 0);
            for l in lines.iter().filter(|l| l.finding == Finding::Runner) {
                prop_assert!(l.percent.point <= a.percent.point);
            }
        } else {
            // Every arm here makes the same system settings: none is adopted only when no
            // arm was FASTER by δ unflagged, or the same settings were SLOWER in a contrast.
            prop_assert!(
                lines.iter().all(|l| l.finding != Finding::Runner)
                    || lines.iter().any(|l| l.finding == Finding::Slower)
            );
        }
    }
}

/// A run measured under two conditions, each with its own contrasts of `always` against
/// `never` on tps.
fn under_conditions(
    id: i64,
    clean: (f64, f64, f64, Verdict),
    fragmented: (f64, f64, f64, Verdict),
) -> RunEvidence {
    use crate::analyze::experiment::ConditionAnalysis;
    let arms = ["never=thp=never", "madvise=thp=madvise"];
    let of = |c: (f64, f64, f64, Verdict)| run(id, &arms, &[(c.0, c.1, c.2, c.3, 0)]).report;
    let mut r = run(id, &arms, &[(clean.0, clean.1, clean.2, clean.3, 0)]);
    r.report.conditions = [("clean", of(clean)), ("fragmented", of(fragmented))]
        .into_iter()
        .map(|(name, analysis)| ConditionAnalysis {
            name: name.into(),
            description: String::new(),
            analysis,
            interaction: Vec::new(),
            arms: Vec::new(),
            at_start: None,
        })
        .collect();
    r
}

#[test]
fn every_condition_is_weighed_and_one_that_loses_stops_the_setting() {
    let r = under_conditions(
        3,
        (12.0, 6.0, 18.0, Verdict::Faster),
        (-60.0, -75.0, -20.0, Verdict::Slower),
    );
    let lines = findings(std::slice::from_ref(&r));
    assert_eq!(lines.len(), 2, "a line per condition: {lines:?}");
    assert_eq!(lines[0].condition.as_deref(), Some("clean"));
    assert_eq!(lines[0].finding, Finding::Conditional);
    assert_eq!(lines[1].finding, Finding::Slower);
    let a = machine::advise(&[r], lines);
    assert_eq!(a.adopt, None);
    assert!(a.settings.is_empty());
    assert!(
        a.summary
            .starts_with("no change: madvise gained in run 3 (clean)")
            && a.summary.contains("run 3 (fragmented): madvise vs never")
            && a.summary.contains("SLOWER"),
        "{}",
        a.summary
    );
    // Both conditions gaining: adopted.
    let both = under_conditions(
        4,
        (12.0, 6.0, 18.0, Verdict::Faster),
        (9.0, 3.0, 15.0, Verdict::Faster),
    );
    let lines = findings(std::slice::from_ref(&both));
    assert_eq!(
        machine::advise(&[both], lines).adopt.as_deref(),
        Some("madvise")
    );
}

#[test]
fn a_setting_that_cost_another_run_its_memory_is_not_adopted_machine_wide() {
    // Run 14: a sparse heap — `always` not resolved on speed, 15× the memory in every trial.
    let sparse = with_metric(
        run(
            14,
            &["never=thp=never", "always=thp=always"],
            &[(2.0, -8.0, 12.0, Verdict::Inconclusive, 0)],
        ),
        "peak_mem_bytes",
        true,
        &[(1466.0, 1464.0, 1470.0, Verdict::Slower)],
    );
    // Run 15: a dense program — `always` 28% faster, no cost.
    let mut dense = run(
        15,
        &["never=thp=never", "always=thp=always"],
        &[(28.0, 16.0, 38.0, Verdict::Faster, 0)],
    );
    dense.command = vec!["./dense".into(), "--n".into(), "8".into()];
    let runs = [sparse, dense];
    let lines = findings(&runs);
    let a = machine::advise(&runs, lines);
    assert_eq!(a.adopt, None);
    assert!(a.settings.is_empty(), "{:?}", a.settings);
    let first = a.summary.lines().next().unwrap();
    assert!(
        first.starts_with("no change: always gained in run 15")
            && first.contains("run 14: always vs never, peak memory +1466% [+1464, +1470]")
            && first.contains("for `./dense --n 8` alone: GLIBC_TUNABLES=glibc.malloc.hugetlb=1"),
        "{first}"
    );
}

#[test]
fn an_unresolved_gain_beside_a_resolved_cost_says_the_cost_first() {
    let r = with_metric(
        run(
            14,
            &["never=thp=never", "always=thp=always"],
            &[(2.0, -28.0, 32.0, Verdict::Inconclusive, 0)],
        ),
        "peak_mem_bytes",
        true,
        &[(1466.0, 1464.0, 1470.0, Verdict::Slower)],
    );
    let lines = findings(std::slice::from_ref(&r));
    let a = machine::advise(&[r], lines);
    assert!(
        a.summary
            .starts_with("no change: no gain was resolved, and a cost was — always (run 14) costs peak memory +1466%"),
        "{}",
        a.summary
    );
}
