//! Bench planning against fixture machines: defaults, validation messages, memory limits.

use crate::common;
use clap::Parser;
use hugelab::backing::Backing;
use hugelab::bench::{BenchArgs, BenchSettings, plan};
use hugelab::probe::{Root, status};

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: BenchArgs,
}

fn args(extra: &[&str]) -> BenchArgs {
    T::parse_from(std::iter::once("bench").chain(extra.iter().copied())).a
}

fn machine() -> status::Status {
    let mut s = status::probe(&Root::new(common::fixture("linux-6.18"))).unwrap();
    s.memory.mem_available = Some(20 << 30);
    s
}

#[test]
fn defaults_are_the_quick_sweep() {
    let (p, notes) = plan(&args(&[]), &machine()).unwrap();
    assert_eq!(p.workloads.len(), 3);
    assert_eq!(
        p.sizes,
        vec![4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30]
    );
    let names: Vec<String> = p.backings.iter().map(|b| b.to_string()).collect();
    assert_eq!(names, vec!["4k", "thp", "hugetlb-2m", "hugetlb-1g"]);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn sweep_is_capped_by_mem_available() {
    let mut m = machine();
    m.memory.mem_available = Some(3 << 30);
    let (p, notes) = plan(&args(&[]), &m).unwrap();
    assert_eq!(*p.sizes.last().unwrap(), 256 << 20);
    assert!(
        notes.iter().any(|n| n.contains("default size 1G skipped")),
        "{notes:?}"
    );
}

#[test]
fn oversize_is_refused_with_numbers() {
    let e = plan(&args(&["--sizes", "16G"]), &machine())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("size 16G needs 64G") && e.contains("MemAvailable is 20G"),
        "{e}"
    );
}

#[test]
fn unknown_names_list_valid_ones() {
    let e = plan(&args(&["--backings", "4k,huge"]), &machine())
        .unwrap_err()
        .to_string();
    assert!(e.contains("valid backings: 4k, thp"), "{e}");
    let e = plan(&args(&["walk"]), &machine()).unwrap_err().to_string();
    assert!(
        e.contains("valid workloads: touch, chase, pretouch, stream, fault"),
        "{e}"
    );
    let e = plan(&args(&["--sizes", "12Q"]), &machine())
        .unwrap_err()
        .to_string();
    assert!(e.contains("12Q") && e.contains("suffix"), "{e}");
}

#[test]
fn mthp_size_must_exist_on_this_kernel() {
    let (p, _) = plan(&args(&["--backings", "mthp-64k"]), &machine()).unwrap();
    assert_eq!(
        p.backings,
        vec![Backing::Base, Backing::Mthp { size: 65536 }],
        "4k baseline added"
    );
    let old = status::probe(&Root::new(common::fixture("linux-4.19-old"))).unwrap();
    let e = plan(&args(&["--backings", "mthp-64k", "--sizes", "1M"]), &old)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no mTHP size 64K") && e.contains("Linux 6.8"),
        "{e}"
    );
}

#[test]
fn no_1g_pages_without_pdpe1gb() {
    let mut m = machine();
    m.cpu.pdpe1gb = false;
    let (p, _) = plan(&args(&[]), &m).unwrap();
    assert!(
        !p.backings
            .contains(&Backing::Hugetlb { page_size: 1 << 30 })
    );
    let e = plan(&args(&["--backings", "hugetlb-1g"]), &m)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no 1 GiB pages"), "{e}");
}

#[test]
fn rounds_and_confidence_are_checked() {
    assert!(
        plan(&args(&["--rounds", "1"]), &machine())
            .unwrap_err()
            .to_string()
            .contains("--rounds 1")
    );
    // Rejected by the shared parser before planning (exit 2, the allowed range named).
    let e = T::try_parse_from(["bench", "--confidence", "1.5"])
        .err()
        .expect("1.5 is refused");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("0.5–0.9999"), "{e}");
    // --threads 0 is refused by its parser, naming the value.
    let e = T::try_parse_from(["bench", "--threads", "0"])
        .err()
        .expect("0 threads is refused");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("0 is not a count"), "{e}");
}

#[test]
fn usage_errors_exit_2() {
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(["bench", "--backings", "bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("valid backings"));
}

fn selected_in(root: &Root, path: &str) -> String {
    let t = std::fs::read_to_string(root.path(path)).unwrap();
    hugelab::probe::kv::parse_selector(&t).unwrap().selected
}

const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
const MTHP_64K: &str = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled";

#[test]
fn as_root_pools_grow_and_mthp_switches_through_the_guard_on_a_fake_sysfs() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::writable_fixture("linux-6.18", dir.path());
    let mut st = machine();
    st.is_root = true;
    let (p, _) = plan(
        &args(&[
            "touch",
            "--sizes",
            "4M",
            "--backings",
            "hugetlb-2m,mthp-64k",
        ]),
        &st,
    )
    .unwrap();
    let mut sys = BenchSettings::new(Box::new(|| Ok(common::fake_guard(&root))));
    let skipped = sys.prepare(&p, &st, true).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    // 4 MiB needs two 2 MiB pages; the fixture pool has none.
    assert_eq!(common::read_trim(root.path(POOL_2M).to_str().unwrap()), "2");
    assert!(
        sys.changed
            .iter()
            .any(|c| c == "hugetlb.2M: 0 → 2 (asked 2)"),
        "{:?}",
        sys.changed
    );
    // One mTHP size is `always` exactly while its region faults in.
    let inside = sys
        .with_mthp(Backing::Mthp { size: 64 << 10 }, &st, || {
            selected_in(&root, MTHP_64K)
        })
        .unwrap();
    assert_eq!(inside, "always");
    assert_eq!(selected_in(&root, MTHP_64K), "never");
    // The end of the bench puts the pool back and removes the journal.
    assert!(sys.restore().iter().all(|r| r.ok()));
    assert_eq!(common::read_trim(root.path(POOL_2M).to_str().unwrap()), "0");
    assert!(!root.path("/run/journal.json").exists());
}

#[test]
fn without_root_pools_and_mthp_are_skipped_with_the_fix_and_nothing_is_written() {
    let mut st = machine();
    st.is_root = false;
    let (p, _) = plan(
        &args(&[
            "touch",
            "--sizes",
            "4M",
            "--backings",
            "4k,thp,hugetlb-2m,mthp-64k",
        ]),
        &st,
    )
    .unwrap();
    let mut sys = BenchSettings::new(Box::new(|| panic!("no setting may change without root")));
    let skipped = sys.prepare(&p, &st, true).unwrap();
    let reason = |b: &str| {
        skipped
            .iter()
            .find(|s| s.backing.to_string() == b)
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    };
    assert!(
        reason("hugetlb-2m").contains("run as root")
            && reason("hugetlb-2m")
                .contains("echo 2 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{skipped:?}"
    );
    assert!(reason("mthp-64k").contains("needs root"), "{skipped:?}");
    assert_eq!(skipped.len(), 2, "4k and thp run unprivileged: {skipped:?}");
    // Without root, with_mthp runs the set-up as it is (the backing is skipped anyway).
    assert_eq!(
        sys.with_mthp(Backing::Mthp { size: 64 << 10 }, &st, || 7)
            .unwrap(),
        7
    );
    assert!(sys.changed.is_empty());
}
