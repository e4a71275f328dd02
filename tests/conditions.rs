//! Machine states as a factor of the experiment, on the live kernel: a child faulting 256 MiB
//! of MADV_HUGEPAGE memory under THP `never` and `madvise`, clean and then in fragmented free
//! memory. Each trial's direct compaction (the kernel's `compact_stall` delta over the trial)
//! is checked against the stalls traced in the trial's own process tree (equal, but for a stall
//! of another process in the same window: the counter is system-wide), the answer carries
//! both conditions' contrasts and the interaction, and every setting and all memory come back.

use crate::common;
use hugelab::store::Store;

fn meminfo_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix(key)?
                .trim_start_matches(':')
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap()
}

/// The 2 MiB pool sized to hold all but `leave_kb` of available memory, for the test's length:
/// the condition then fragments only what is left, as on a smaller machine, in a fraction of
/// the time it takes to fault all of this one's in 4 KiB pages. Set back with the lock.
fn leaving(lock: &common::KnobLock, leave_kb: u64) {
    let pool = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
    let before: u64 = common::read_trim(pool).parse().unwrap();
    let pages = meminfo_kb("MemAvailable").saturating_sub(leave_kb) / 2048;
    lock.set(pool, &(before + pages).to_string());
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: fragments free memory, sets THP and compaction settings"
)]
#[test]
fn fragmented_memory_makes_madvise_compact_directly_and_the_answer_says_how_much() {
    require_root!();
    let lock = common::knob_lock();
    let proactive = std::fs::read_to_string("/proc/sys/vm/compaction_proactiveness").unwrap();
    let enabled = common::selected("/sys/kernel/mm/transparent_hugepage/enabled");
    // 8 GiB left: the kept pieces (one 4 KiB page in four of what is left) pay for refilling
    // the 640 blocks the five madvise trials free between trials, with room to spare.
    leaving(&lock, 8 << 20);
    let available = meminfo_kb("MemAvailable");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db").display().to_string();
    let me = env!("CARGO_BIN_EXE_hugelab");
    // The default answer (text), and the run as stored.
    let out = common::hugelab_stdout([
        "run",
        "--condition",
        "clean",
        "--condition",
        "fragmented",
        "-a",
        "never=thp=never",
        "-a",
        "madvise=thp=madvise",
        "--blocks",
        "5",
        "--warmup",
        "0",
        "--confidence",
        "0.95",
        "--trace",
        "compaction",
        "--db",
        &db,
        "--",
        me,
        "hold-memory",
        "--backing",
        "thp",
        "--size",
        "256M",
        // Held a second: the sampler's reads see the whole peak even when faulting in
        // fragmented memory is slow (held for no time, a read caught 190 MB of 256 once).
        "--seconds",
        "1",
    ]);
    // Everything given back: the settings, and the memory the condition held.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/vm/compaction_proactiveness").unwrap(),
        proactive
    );
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        enabled
    );
    let after = meminfo_kb("MemAvailable");
    assert!(
        after + (1 << 20) > available,
        "MemAvailable {available} kB before, {after} kB after: the condition's memory was not given back"
    );

    let r = common::hugelab_json(["results", "show", "1", "--json", "--db", &db]);
    // Every number the answer printed is a field of the stored record its line reads, rounded
    // as printed (its last line, where the run was stored, is the engine's).
    let (answer, stored) = out.trim_end().rsplit_once('\n').unwrap();
    assert!(stored.starts_with("stored as run 1"), "{out}");
    common::printed::holds(&r, &format!("{answer}\n"), &|d| {
        common::printed::run_text(d, hugelab::render::run::Print::Brief)
    });
    let report = &r["report"];
    let conditions = report["conditions"].as_array().unwrap();
    let names: Vec<&str> = conditions
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["clean", "fragmented"]);
    // The interaction of madvise, fragmented against clean, with an interval.
    let i = &conditions[1]["interaction"][0];
    assert_eq!(i[0], "madvise");
    assert!(i[1]["percent"]["lo"].is_number(), "{i}");

    // Per trial: the kernel's compact_stall delta equals the stalls traced in the trial's tree
    // (nothing else compacts here while the trial runs); madvise compacts in fragmented memory,
    // never does not.
    let store = Store::open(std::path::Path::new(&db)).unwrap();
    let (_, arms, trials) = store.load(1).unwrap();
    let madvise = arms.iter().position(|a| a.name == "madvise").unwrap() as i64;
    let mut fragmented_madvise = 0;
    for t in trials.iter().filter(|t| t.block >= 0) {
        let condition = t.evidence.condition.as_ref().unwrap().name.as_str();
        let kernel = &t.evidence.gathered.kernel_counters;
        let vmstat = kernel.get("compact_stall").copied().unwrap_or(0);
        let traced = t.evidence.trace.as_ref().unwrap().direct_compaction_stalls;
        // The kernel's counter is system-wide: another process faulting huge pages in this
        // fragmented memory during the trial adds to it, never takes from it.
        assert!(
            traced <= vmstat && vmstat - traced <= 1.max(vmstat / 50),
            "trial {} ({condition}): compact_stall {vmstat} vs {traced} traced in its tree",
            t.seq
        );
        // The memory hugelab holds for the condition is not the child's (it is not inherited,
        // and the child's vfork high-water mark, which starts at hugelab's, is not taken).
        let peak = t.metrics["peak_mem_bytes"];
        assert!(
            peak > 200e6 && peak < 512e6,
            "trial {}: peak memory {peak}",
            t.seq
        );
        let at = t.evidence.machine_at_start.unwrap();
        if condition == "fragmented" {
            // Every free block is taken before the trial; a few may merge from pages freed
            // just after (the previous child's, the per-CPU lists'), never the 128 it wants.
            assert!(at.free_2m_blocks <= 8, "trial {}: {at:?}", t.seq);
            assert!(at.unusable_2m.unwrap() > 0.99, "trial {}: {at:?}", t.seq);
            if t.arm_idx == madvise {
                assert!(
                    vmstat > 0,
                    "trial {}: no direct compaction in fragmented memory",
                    t.seq
                );
                fragmented_madvise += 1;
            } else {
                assert_eq!(traced, 0, "trial {}: never compacted", t.seq);
            }
        }
    }
    assert_eq!(fragmented_madvise, 5);
    // Those stalls are a cost in the record of every run, per condition: madvise against never
    // under fragmented, a difference per trial from the same counters.
    let stalls = conditions[1]["analysis"]["stalls"].as_array().unwrap();
    let s = stalls
        .iter()
        .find(|s| s["kind"] == "direct compaction stalls" && s["arm"] == "madvise")
        .unwrap_or_else(|| panic!("no stall contrast for madvise: {stalls:?}"));
    assert_eq!(s["blocks"], 5, "{s}");
    assert!(s["arm_mean"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s["difference"]["point"].as_f64().unwrap() > 0.0, "{s}");
    let arm_state = &conditions[1]["arms"][madvise as usize];
    assert!(arm_state["per_trial"]["compact_stall"].as_f64().unwrap() > 0.0);

    // The answer, from the stored run: both conditions' lines and the interaction's words.
    let shown = common::hugelab_stdout(["results", "show", "1", "--db", &db]);
    assert!(shown.contains("under clean:"), "{shown}");
    assert!(shown.contains("under fragmented:"), "{shown}");
    let fragmented = &shown[shown.find("under fragmented:").unwrap()..];
    assert!(
        fragmented.contains("costs: peak memory"),
        "each condition's answer states its costs: {shown}"
    );
    assert!(shown.contains("the effect against clean's:"), "{shown}");
    assert!(shown.contains("direct compaction stalls"), "{shown}");

    // `advise` weighs every condition, not the first alone: a line per condition, and an arm
    // adopted only where it gained under both; otherwise its refusal names where it did not.
    let advice = common::hugelab_json(["advise", "1", "--db", &db, "--json"]);
    let lines = advice["evidence"].as_array().unwrap();
    let conditions: std::collections::BTreeSet<&str> = lines
        .iter()
        .map(|l| l["condition"].as_str().unwrap())
        .collect();
    assert_eq!(
        conditions.into_iter().collect::<Vec<_>>(),
        ["clean", "fragmented"],
        "{advice}"
    );
    let gained_everywhere = lines
        .iter()
        .filter(|l| l["arm"] == "madvise")
        .all(|l| l["finding"] == "adopt" || l["finding"] == "runner");
    let summary = advice["summary"].as_str().unwrap();
    if gained_everywhere {
        assert_eq!(advice["adopt"], "madvise", "{advice}");
    } else {
        assert!(advice["adopt"].is_null(), "{advice}");
        assert!(summary.contains("fragmented"), "{summary}");
    }
}
