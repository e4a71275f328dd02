//! What huge pages cost, on the live kernel: a sparse child (one byte every 64 KiB of a 1 GiB
//! mapping, as a JVM's thread stacks or an allocator's arenas use memory) under THP `never` and
//! `always` (and `madvise`, a third arm: Holm's first step then asks 99.5%, beyond what an
//! exact signed-rank interval over 8 blocks can reach, so the memory cost is resolved by its
//! Student-t interval and says so). Each trial's peak memory is checked against `/usr/bin/time`'s max RSS of the same
//! trial (the kernel's own high-water mark, read by another program), the answer's first lines
//! carry the memory contrast, and `advise` does not recommend `always` without stating it.

use crate::common;
use hugelab::store::Store;

const SPARSE: &str = "import mmap\n\
n = 1 << 30\n\
m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
for i in range(0, n, 65536):\n    m[i] = 1\n";

#[cfg_attr(
    unprivileged,
    ignore = "needs root: switches THP between never and always"
)]
#[test]
fn a_sparse_child_under_thp_always_shows_its_memory_cost_in_the_answer_and_the_advice() {
    require_root!();
    assert!(
        std::path::Path::new("/usr/bin/time").exists(),
        "/usr/bin/time is missing (apt-get install time; .ci/run does)"
    );
    let _lock = common::knob_lock();
    let before = common::selected("/sys/kernel/mm/transparent_hugepage/enabled");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db").display().to_string();
    let out = common::hugelab_stdout([
        "run",
        "--arm",
        "never=thp=never",
        "--arm",
        "always=thp=always",
        "--arm",
        "madvise=thp=madvise",
        "--blocks",
        "8",
        "--warmup",
        "0",
        "--metric",
        "maxrss_kb=maxrss_kb=([0-9]+)",
        "--db",
        &db,
        "--",
        "/usr/bin/time",
        "-f",
        "maxrss_kb=%M",
        "python3",
        "-c",
        SPARSE,
    ]);
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        before,
        "THP restored"
    );
    // Per trial: the peak hugelab recorded against the max RSS /usr/bin/time printed for it.
    let store = Store::open(std::path::Path::new(&db)).unwrap();
    let (_, arms, trials) = store.load(1).unwrap();
    let arm_of = |i: i64| arms.iter().find(|a| a.idx == i).unwrap().name.clone();
    let mut peaks: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for t in trials.iter().filter(|t| t.ok) {
        let peak = t.metrics["peak_mem_bytes"];
        let time = t.metrics["maxrss_kb"] * 1024.0;
        assert!(
            (peak / time - 1.0).abs() < 0.05,
            "trial {} of {}: peak {peak} vs /usr/bin/time {time}",
            t.block,
            arm_of(t.arm_idx)
        );
        assert!(t.metrics["sys_cpu_s"] >= 0.0 && t.metrics["user_cpu_s"] > 0.0);
        assert!(t.evidence.machine_at_start.unwrap().mem_available > 0);
        peaks.entry(arm_of(t.arm_idx)).or_default().push(peak);
    }
    let median = |v: &[f64]| hugelab::stats::summarize(v).unwrap().median;
    let (never, always) = (median(&peaks["never"]), median(&peaks["always"]));
    assert!(
        always > 5.0 * never,
        "always {always} against never {never}"
    );
    // The answer: the verdicts, each with its cost line; `always`'s memory ×15 in every
    // block is MORE, not INCONCLUSIVE for want of blocks, and says how it was computed.
    let head: Vec<&str> = out.lines().take(10).collect();
    let always = head
        .iter()
        .position(|l| l.starts_with("always vs never"))
        .unwrap_or_else(|| panic!("no line for always:\n{out}"));
    let costs = head[always + 1..]
        .iter()
        .find(|l| l.trim_start().starts_with("costs: peak memory ×"))
        .unwrap_or_else(|| panic!("no cost line for always in the answer:\n{out}"));
    assert!(costs.contains("MORE (Student t over 8 blocks)"), "{out}");
    // advise: no `always` for the machine without the memory it costs.
    let advice = common::hugelab_stdout(["advise", "--db", &db, "1"]);
    assert!(advice.contains("peak memory"), "{advice}");
    assert!(
        advice.contains("weighed against the benefit: ") && advice.contains("peak memory"),
        "{advice}"
    );
    if advice.contains("set thp.enabled = always") {
        let summary = advice.lines().next().unwrap_or("");
        assert!(summary.contains("costs: peak memory"), "{advice}");
    }
}
