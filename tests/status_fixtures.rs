//! `status` against captured fixture trees: this kernel's layout and an older one.

use crate::common;
use assert_cmd::Command;
use hugelab::analyze::findings::explain;
use hugelab::probe::{Root, status};

#[test]
fn current_kernel_fixture() {
    let s = status::probe(&Root::new(common::fixture("linux-6.18"))).unwrap();
    assert_eq!(s.kernel.as_deref(), Some("6.18.44-fc-v595"));
    assert!(s.cpu.pse && s.cpu.pdpe1gb);
    assert_eq!(s.thp.enabled.as_ref().unwrap().selected, "madvise");
    assert_eq!(s.thp.defrag.as_ref().unwrap().choices.len(), 5);
    assert_eq!(s.thp.hpage_pmd_size, Some(2 << 20));
    assert_eq!(s.thp.khugepaged.max_ptes_shared, Some(256));
    // Nine mTHP sizes from 8K to 2M, sorted, with stats.
    let sizes: Vec<u64> = s.thp.mthp.iter().map(|m| m.size_bytes / 1024).collect();
    assert_eq!(sizes, vec![8, 16, 32, 64, 128, 256, 512, 1024, 2048]);
    let m64 = s.thp.mthp.iter().find(|m| m.size_bytes == 65536).unwrap();
    assert_eq!(m64.enabled.as_ref().unwrap().selected, "never");
    assert!(m64.stats.contains_key("anon_fault_alloc"));
    // Two hugetlb sizes, each with a node-0 share.
    assert_eq!(
        s.hugetlb.iter().map(|p| p.page_size).collect::<Vec<_>>(),
        vec![2 << 20, 1 << 30]
    );
    assert!(
        s.hugetlb
            .iter()
            .all(|p| p.nodes.len() == 1 && p.nodes[0].node == 0)
    );
    assert_eq!(s.hugetlbfs_mounts.len(), 1);
    assert_eq!(s.zones.len(), 3);
    assert!(s.memory.file_huge_pages.is_some());
    assert!(s.counters.contains_key("thp_fault_alloc") && s.counters.contains_key("compact_stall"));
    assert!(!s.counters.contains_key("nr_free_pages"));
}

#[test]
fn older_layout_has_absent_fields_not_errors() {
    let s = status::probe(&Root::new(common::fixture("linux-4.19-old"))).unwrap();
    assert!(s.thp.mthp.is_empty());
    assert_eq!(s.thp.khugepaged.max_ptes_shared, None);
    assert_eq!(s.memory.file_huge_pages, None);
    assert_eq!(s.memory.hugetlb, None);
    let p = &s.hugetlb[0];
    assert!(p.nodes.is_empty());
    assert_eq!((p.total, p.free, p.reserved), (512, 100, 20));
    // One split for status, the exporter and JSON: in use + reserved-free + free-unreserved.
    assert_eq!(p.in_use(), 412);
    assert_eq!(p.reserved_free(), 20);
    assert_eq!(p.states().iter().map(|s| s.1).sum::<u64>(), p.total);
    assert!(!s.cpu.pdpe1gb);
    assert!(!s.tracing.available && !s.tracing.mountable);
    let f = s.fragmentation.as_ref().unwrap();
    assert_eq!(f.blocks_available, 1 + 3 * 2);
    assert!(f.unusable_index.unwrap() > 0.95);
}

#[test]
fn explain_finds_the_planted_problems() {
    let s = status::probe(&Root::new(common::fixture("linux-4.19-old"))).unwrap();
    let codes: Vec<&str> = explain(&s).iter().map(|f| f.code).collect();
    for want in [
        "thp-always-defrag-always",
        "hugetlb-reserved-free",
        "hugetlb-idle-pool",
        "fragmented",
        "khugepaged-max-ptes-none",
        "no-hugetlbfs-mount",
        "thp-fallback",
        "compact-stalls",
        "no-1g-pages",
        "no-tracefs",
    ] {
        assert!(codes.contains(&want), "missing {want} in {codes:?}");
    }
    // Warnings sort first.
    let f = explain(&s);
    assert_eq!(f[0].severity, hugelab::analyze::findings::Severity::Warn);
}

#[test]
fn explain_is_quiet_on_a_healthy_fixture() {
    let s = status::probe(&Root::new(common::fixture("linux-6.18"))).unwrap();
    let codes: Vec<&str> = explain(&s).iter().map(|f| f.code).collect();
    for absent in [
        "thp-always-defrag-always",
        "fragmented",
        "hugetlb-idle-pool",
        "thp-fallback",
        "no-1g-pages",
    ] {
        assert!(!codes.contains(&absent), "unexpected {absent} in {codes:?}");
    }
}

#[test]
fn cli_json_schema_on_fixture() {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["status", "--json", "--explain", "--root"])
        .arg(common::fixture("linux-4.19-old"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "hugelab.status/1");
    assert_eq!(v["thp"]["enabled"]["selected"], "always");
    assert_eq!(v["hugetlb"][0]["total"], 512);
    assert!(v["findings"].as_array().unwrap().len() >= 8);
    assert_eq!(v["fragmentation"]["order"], 9);
}

#[test]
fn cli_text_on_fixture() {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["status", "--explain", "--root"])
        .arg(common::fixture("linux-4.19-old"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("kernel      4.19.0-27-amd64"), "{text}");
    assert!(text.contains("mTHP        not offered by this kernel"));
    assert!(text.contains("[WARN] THP always with defrag always"));
    assert!(text.contains("fix: echo defer+madvise"));
}

#[test]
fn malformed_file_names_path_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::write(
        dir.path().join("proc/buddyinfo"),
        "Node 0, zone DMA 1 2\nNode x, zone y\n",
    )
    .unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["status", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/proc/buddyinfo") && err.contains("line 2"),
        "{err}"
    );
}

#[test]
fn empty_root_is_all_absent() {
    let dir = tempfile::tempdir().unwrap();
    let s = status::probe(&Root::new(dir.path())).unwrap();
    assert!(s.thp.enabled.is_none() && s.hugetlb.is_empty() && s.zones.is_empty());
    assert!(s.fragmentation.is_none());
}

#[test]
fn interval_mode_repeats_with_deltas() {
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args([
            "status",
            "--json",
            "--interval",
            "50ms",
            "--count",
            "2",
            "--root",
        ])
        .arg(common::fixture("linux-6.18"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter()
        .map(|d| d.unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert!(docs[0].get("counter_deltas").is_none());
    assert_eq!(
        docs[1]["counter_deltas"]["thp_fault_alloc"], 0,
        "a fixture does not change"
    );
}
