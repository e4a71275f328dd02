//! Bench planning against fixture machines: defaults, validation messages, memory limits.

mod common;

use clap::Parser;
use hugelab::backing::Backing;
use hugelab::commands::bench::{BenchArgs, plan};
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
    assert!(
        plan(&args(&["--threads", "0"]), &machine())
            .unwrap_err()
            .to_string()
            .contains("--threads")
    );
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
