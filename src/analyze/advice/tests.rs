use super::*;
use crate::analyze::experiment::{ArmEvidence, ArmMetric, MetricAnalysis, MetricDef};
use crate::analyze::verdict::{Contrast, Design};
use crate::backing::arm::parse_arm;
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
        more_blocks: Some(100),
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
    assert_eq!(lines[0].finding, Finding::Runner);
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
