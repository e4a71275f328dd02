use super::*;
use crate::model::analysis::ArmEvidence;

fn arm(name: &str, counters: &[(&str, f64)]) -> ArmEvidence {
    ArmEvidence {
        arm: name.into(),
        trials: 4,
        mean_counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    }
}

#[test]
fn measured_tlb_misses_come_first_and_only_where_counted() {
    // No PMU (this VM): nothing measured is claimed.
    assert_eq!(measured_why(&[arm("4k", &[("page_faults", 10.0)])]), None);
    let l = measured_why(&[
        ArmEvidence {
            walk_share: Some(0.15),
            ..arm(
                "4k",
                &[
                    ("dtlb_load_misses", 1_234_567.0),
                    ("dtlb_walk_cycles", 150.0),
                    ("cycles", 1000.0),
                ],
            )
        },
        arm("thp", &[("dtlb_load_misses", 20_000.0)]),
    ])
    .unwrap();
    assert_eq!(
        l,
        "why (measured): dTLB load misses per trial: 4k 1,234,567, page walks 15.0% of cycles · thp 20,000"
    );
}
