use super::*;
use crate::analyze::verdict::Verdict;

fn trial(block: usize, arm: usize, wall: f64) -> TrialData {
    TrialData {
        block,
        arm,
        ok: true,
        metrics: [("wall_s".to_string(), wall)].into(),
        counters: BTreeMap::new(),
        noise: BTreeMap::new(),
        ..Default::default()
    }
}

#[test]
fn pairs_by_block_and_skips_incomplete_blocks() {
    let mut t = Vec::new();
    for b in 0..30 {
        let drift = 1.0 + b as f64 * 0.01;
        t.push(trial(b, 0, 10.0 * drift * (1.0 + 0.001 * (b % 5) as f64)));
        t.push(trial(b, 1, 9.0 * drift * (1.0 + 0.001 * (b % 3) as f64)));
        t.push(trial(b, 2, 10.0 * drift * (1.0 + 0.001 * (b % 4) as f64)));
    }
    t[3].ok = false; // block 1, arm 0 failed: block 1 drops out
    let r = analyse(
        &["base".into(), "fast".into(), "same".into()],
        0,
        &t,
        &[MetricDef {
            name: "wall_s".into(),
            better: Better::Lower,
            context: false,
            cost: false,
            row: false,
        }],
        0.01,
        0.99,
        &Design::Fixed,
    );
    let m = &r.metrics[0];
    assert_eq!(m.complete_blocks, 29);
    let fast = m.contrasts[0].1.as_ref().unwrap();
    assert_eq!(fast.verdict, Verdict::Faster);
    assert!(
        (fast.percent.point + 10.0).abs() < 0.5,
        "{:?}",
        fast.percent
    );
    assert_eq!(
        m.contrasts[1].1.as_ref().unwrap().verdict,
        Verdict::Equivalent
    );
    assert_eq!(r.evidence[0].failed, 1);
    assert!(
        m.arms[0]
            .diagnostics
            .warnings
            .iter()
            .any(|w| w.contains("drift"))
    );
}
