use super::*;
use crate::control::knob::Knob;

#[test]
fn conditions_parse_with_their_defaults_and_refuse_bad_values() {
    assert_eq!("clean".parse::<Condition>().unwrap(), Condition::Clean);
    assert_eq!(
        "fragmented".parse::<Condition>().unwrap(),
        Condition::Fragmented {
            fraction: 1.0,
            proactiveness: 0
        }
    );
    let f: Condition = "fragmented=0.5,proactiveness=20".parse().unwrap();
    assert_eq!(
        f,
        Condition::Fragmented {
            fraction: 0.5,
            proactiveness: 20
        }
    );
    assert_eq!(f.name(), "fragmented=0.5,proactiveness=20");
    let p: Condition = "pressure=2G".parse().unwrap();
    assert_eq!(p, Condition::Pressure { headroom: 2 << 30 });
    assert_eq!(p.name(), "pressure=2G");
    assert_eq!(
        "cache=0.25".parse::<Condition>().unwrap(),
        Condition::Cache { fraction: 0.25 }
    );
    for (bad, says) in [
        ("pressure", "pressure=SIZE"),
        ("pressure=10M", "at least 64M"),
        ("fragmented=2", "(0, 1]"),
        ("cache,proactiveness=3", "not an option of cache"),
        ("fragmented,proactiveness=300", "0–100"),
        ("dirty", "unknown"),
    ] {
        let e = bad.parse::<Condition>().unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
    assert!(f.needs_root() && !p.needs_root());
    assert_eq!(
        f.settings(),
        vec![(Knob::CompactionProactiveness, "20".to_string())]
    );
}

/// A root whose /proc says MemAvailable is `available` bytes and `blocks` 2 MiB blocks are free
/// in the Normal zone, whatever is taken: every round of `retake` sees the same.
fn fake_root(available: u64, blocks: u64) -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    let kb = available >> 10;
    std::fs::write(
        dir.path().join("proc/meminfo"),
        format!(
            "MemTotal: {} kB\nMemFree: {kb} kB\nMemAvailable: {kb} kB\n",
            2 * kb
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("proc/buddyinfo"),
        format!("Node 0, zone   Normal 0 0 0 0 0 0 0 0 0 {blocks} 0\n"),
    )
    .unwrap();
    let root = Root::new(dir.path());
    (dir, root)
}

#[test]
fn preparing_takes_the_whole_blocks_without_giving_pieces_back_and_never_below_the_floor() {
    let fragmented = Condition::Fragmented {
        fraction: 1.0,
        proactiveness: 0,
    };
    // 64 MiB above the floor: one region of 4 KiB pages, one page kept per stride.
    let (_dir, root) = fake_root(FLOOR + (64 << 20), 3);
    let (mut held, _) = Held::prepare(&fragmented, &root).unwrap();
    let kept = (64 << 20) / FRAGMENT_STRIDE as u64 * 4096;
    // Three blocks in each of the rounds, and every kept page still held: giving pieces back
    // for blocks taken while preparing freed whole blocks to take again, until (with a FRACTION
    // below 1) all of memory was taken.
    let taken = RETAKE_ROUNDS as u64 * 3 * TWO_MIB;
    assert_eq!(held.released, 0);
    assert_eq!(held.held_bytes(), taken + kept);
    // Between trials, blocks taken are paid for with kept pages (as many as there are).
    let r = held.restore(&root).unwrap();
    assert_eq!(r.taken_2m, RETAKE_ROUNDS as u64 * 3);
    assert_eq!(r.released_bytes, kept);
    // At the floor, nothing is taken, however many blocks are free.
    let (_dir, root) = fake_root(FLOOR, 3);
    let (held, _) = Held::prepare(&fragmented, &root).unwrap();
    assert_eq!(held.held_bytes(), 0);
}
