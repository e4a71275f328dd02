//! The arm's pages judged by the memory that matters, with real programs: a JMH launcher that
//! forks the measured JVM (the benchmark in tests/fixtures/jmh, built from Maven Central by its
//! build.sh, which `.ci/run` runs), and a command whose own memory is on 4 KiB pages while
//! another process on the machine faults THP.

use crate::common;
use std::path::PathBuf;
use std::process::Command;

/// The JMH benchmark jar (tests/fixtures/jmh/build.sh builds it with Maven; `.ci/run` does).
/// The tests that use it are marked `missing_jmh` by build.rs where it or java is missing.
fn benchmarks_jar() -> PathBuf {
    let jar =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jmh/target/benchmarks.jar");
    assert!(
        jar.exists() && Command::new("java").arg("-version").output().is_ok(),
        "needs java and {} (tests/fixtures/jmh/build.sh builds it with Maven)",
        jar.display()
    );
    jar
}

fn arm<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["report"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == name)
        .unwrap()
}

fn pool_2m() -> String {
    common::read_trim("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
}

/// `run --preset jvm`-style arms on `java -Xmx512m -jar benchmarks.jar ByteArrayTouch -f 1`.
fn run_jmh(metric: &str, jar: &std::path::Path, db: &std::path::Path) -> serde_json::Value {
    let jar = jar.display().to_string();
    common::run_json(
        &[
            "--arm",
            "off=jvm=off",
            "--arm",
            "hugetlbfs=jvm=hugetlbfs",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--metric",
            metric,
        ],
        &[
            "java",
            "-Xms512m",
            "-Xmx512m",
            "-jar",
            &jar,
            "ByteArrayTouch",
            "-f",
            "1",
            "-wi",
            "1",
            "-i",
            "2",
            "-w",
            "1s",
            "-r",
            "1s",
            "-p",
            "size=400000000",
        ],
        db,
    )
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
#[cfg_attr(
    missing_jmh,
    ignore = "needs java and the JMH fixture (tests/fixtures/jmh/build.sh; .ci/run does)"
)]
fn a_jmh_launcher_hands_the_jvm_options_to_the_fork_which_gets_the_pool() {
    require_root!();
    let jar = benchmarks_jar();
    let _lock = common::knob_lock();
    let before = pool_2m();
    let dir = tempfile::tempdir().unwrap();
    let v = run_jmh("jmh", &jar, &dir.path().join("r.db"));
    assert_eq!(pool_2m(), before, "pool restored");
    let notes = v["plan"]["notes"].to_string();
    assert!(
        notes.contains("-jvmArgsAppend '-XX:+UseLargePages'"),
        "{notes}"
    );
    let h = arm(&v, "hugetlbfs");
    assert_eq!(h["flagged"], 0, "{h}");
    assert_eq!(h["partial"], 0, "{h}");
    // The measured (forked) JVM's heap is on 2 MiB pages.
    assert!(h["mean_share"].as_f64().unwrap() >= 0.9, "{h}");
    assert!(arm(&v, "off")["mean_share"].is_null());
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
#[cfg_attr(
    missing_jmh,
    ignore = "needs java and the JMH fixture (tests/fixtures/jmh/build.sh; .ci/run does)"
)]
fn a_forked_jvm_that_fell_back_is_flagged_by_pid_beside_the_launcher_holding_the_pool() {
    require_root!();
    let jar = benchmarks_jar();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    // Its own metric: hugelab does not know it is JMH, so both JVMs get JAVA_TOOL_OPTIONS and
    // the launcher reserves its heap from the pool sized for one — the published failure.
    let v = run_jmh(
        r"ops=thrpt\s+\d+\s+([0-9.]+),higher",
        &jar,
        &dir.path().join("r.db"),
    );
    assert_eq!(v["plan"]["notes"], serde_json::json!([]));
    let h = arm(&v, "hugetlbfs");
    assert_eq!(h["flagged"], 2, "{h}");
    let why = h["first_flag"].as_str().unwrap();
    // The fork holds the memory that matters, on 4 KiB; the launcher maps hugetlb it did not
    // touch; the JVM's own warning is quoted.
    assert!(why.contains("java (pid ") && why.contains("holds"), "{why}");
    assert!(why.contains("maps") && why.contains("of hugetlb"), "{why}");
    assert!(why.contains("Failed to reserve"), "{why}");
    assert!(h["mean_share"].as_f64().unwrap() < 0.1, "{h}");
}

#[test]
fn another_process_faulting_thp_does_not_clear_an_arm_on_4k() {
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_hugelab");
    // Another process on the machine faults THP again and again while the trials run.
    let mut other = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while :; do {exe} hold-memory --backing thp --size 64M --seconds 0 >/dev/null; done"
        ))
        .spawn()
        .unwrap();
    let v = common::run_json(
        &[
            "--arm",
            "base=",
            "--arm",
            "asks=expect=thp",
            "--blocks",
            "2",
            "--warmup",
            "0",
        ],
        &[
            exe,
            "hold-memory",
            "--backing",
            "4k",
            "--size",
            "128M",
            "--seconds",
            "1",
        ],
        &dir.path().join("r.db"),
    );
    other.kill().ok();
    other.wait().ok();
    let a = arm(&v, "asks");
    // The rule it replaces cleared the arm on a machine-wide thp_fault_alloc above zero.
    assert_eq!(a["flagged"], 2, "{a}");
    assert!(
        a["first_flag"]
            .as_str()
            .unwrap()
            .contains("0% of the memory that matters"),
        "{a}"
    );
}

/// The published JVM table in one run: a JMH sweep over two sizes in `avgt` mode (ns/op), each
/// row its own metric with the row's direction (lower), shown in the answer with its contrast,
/// the rows one Holm family across rows × arms; JMH's result file is read (hugelab asks for it).
#[test]
#[cfg_attr(
    missing_jmh,
    ignore = "needs java and the JMH fixture (tests/fixtures/jmh/build.sh; .ci/run does)"
)]
fn every_jmh_result_row_is_a_metric_with_the_direction_its_mode_states() {
    let jar = benchmarks_jar();
    // JMH runs one instance at a time per temporary directory (its `jmh.lock` there): this
    // one has a directory of its own, so it runs beside the JMH tests that hold the knob lock
    // and needs no lock itself (it changes no setting and counts nothing kernel-wide).
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let jar = jar.display().to_string();
    let tmpdir = format!("-Djava.io.tmpdir={}", dir.path().display());
    let v = common::run_json(
        &[
            "--arm",
            "a=env.HUGELAB_ARM=a",
            "--arm",
            "b=env.HUGELAB_ARM=b",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--metric",
            "jmh",
        ],
        &[
            "java",
            &tmpdir,
            "-Xmx512m",
            "-jar",
            &jar,
            "ByteArrayTouch",
            "-f",
            "1",
            "-wi",
            "1",
            "-i",
            "1",
            "-w",
            "200ms",
            "-r",
            "200ms",
            "-bm",
            "thrpt,avgt",
            "-tu",
            "ns",
            "-p",
            "size=1000000,100000000",
        ],
        &db,
    );
    let rows: Vec<&serde_json::Value> = v["plan"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["row"] == true)
        .collect();
    let mut names: Vec<&str> = rows.iter().map(|m| m["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "ByteArrayTouch.touch size=1000000 avgt",
            "ByteArrayTouch.touch size=1000000 thrpt",
            "ByteArrayTouch.touch size=100000000 avgt",
            "ByteArrayTouch.touch size=100000000 thrpt",
        ]
    );
    // Each mode keeps its own score and direction: two modes never collide in one row.
    for m in &rows {
        let name = m["name"].as_str().unwrap();
        let want = if name.ends_with(" thrpt") {
            "higher"
        } else {
            "lower"
        };
        assert_eq!(m["better"], want, "{m}");
    }
    // Every trial read all four rows from JMH's JSON result file: the larger array costs more
    // per operation (avgt, ns/op) and so gives fewer operations (thrpt, ops/ns).
    let trials = hugelab::store::Store::open(&db).unwrap().load(1).unwrap().2;
    for t in trials.iter().filter(|t| t.block >= 0) {
        let m = |n: &str| t.metrics[&format!("ByteArrayTouch.touch size={n}")];
        assert!(
            m("1000000 avgt") > 0.0 && m("100000000 avgt") > m("1000000 avgt"),
            "{:?}",
            t.metrics
        );
        assert!(m("100000000 thrpt") < m("1000000 thrpt"), "{:?}", t.metrics);
        assert_eq!(t.evidence.load_metrics.as_ref().unwrap().len(), 4);
    }
    // The answer: a line per row, and the family it was judged in.
    let shown = common::hugelab_stdout(["results", "show", "1", "--db", db.to_str().unwrap()]);
    for n in names {
        assert!(shown.contains(n), "{shown}");
    }
    assert!(
        shown.contains(
            "the load's 4 result rows × 1 arm are one family: Holm across their 4 contrasts"
        ),
        "{shown}"
    );
}
