use super::*;

fn series(host: &str, points: Vec<(f64, f64)>) -> Series {
    Series {
        labels: [("instance".to_string(), host.to_string())].into(),
        points,
    }
}

#[test]
fn group_values_weigh_hosts_equally_and_leave_out_the_partial_interval() {
    let w = Window {
        start: 0.0,
        end: 250.0,
        interval: 100.0,
    };
    // Host a has 4 samples in interval 0, host b one; the group value is the mean of means.
    let a = series(
        "a",
        vec![
            (0.0, 1.0),
            (10.0, 1.0),
            (20.0, 1.0),
            (30.0, 1.0),
            (150.0, 5.0),
            (240.0, 9.0),
        ],
    );
    let b = series("b", vec![(50.0, 3.0)]);
    let v = group_values(&[a, b], &w);
    assert_eq!(v, vec![Some(2.0), Some(5.0)]);
}

#[test]
fn a_flag_names_the_group_that_missed_its_pages() {
    let w = Window {
        start: 0.0,
        end: 100.0,
        interval: 50.0,
    };
    let low = vec![
        series("c1", vec![(1.0, 0.01)]),
        series("c2", vec![(1.0, 0.02)]),
    ];
    let high = vec![series("b1", vec![(1.0, 0.8)])];
    let e = evidence(&low, &high, &w, HugeOn::Canary, None);
    assert!(e.flagged.as_deref().unwrap().contains("canary"), "{e:?}");
    assert_eq!(e.hosts_without, vec!["c1", "c2"]);
    // The same numbers are what turning huge pages off should look like.
    assert_eq!(
        evidence(&low, &high, &w, HugeOn::Baseline, None).flagged,
        None
    );
    // A baseline with as much coverage as the canary: the change changed nothing.
    let e = evidence(&high, &high, &w, HugeOn::Canary, None);
    assert!(e.flagged.unwrap().contains("did not change"));
}
