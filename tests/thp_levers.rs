//! Today's kernel's THP levers as arms, and its counters as evidence, on the live kernel: a
//! khugepaged/shrinker arm restored after the run and after SIGKILL (`hugelab restore`), the
//! per-size stats in a trial's evidence equal to the sysfs files read around the run, and a
//! `never` arm whose workload collapses its own memory flagged.

use crate::common;
use hugelab::store::Store;
use std::time::Duration;

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

fn khugepaged(name: &str) -> String {
    common::read_trim(&format!("{THP}/khugepaged/{name}"))
}

fn stat_2m(name: &str) -> u64 {
    common::read_trim(&format!("{THP}/hugepages-2048kB/stats/{name}"))
        .parse()
        .unwrap()
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_khugepaged_arm_is_applied_per_trial_and_restored_after_the_run_and_after_sigkill() {
    require_root!();
    let _lock = common::knob_lock();
    let before = (
        khugepaged("max_ptes_none"),
        common::read_trim(&format!("{THP}/shrink_underused")),
    );
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    // Each trial writes the values it ran under.
    let record = format!(
        "echo $(cat {THP}/khugepaged/max_ptes_none) $(cat {THP}/shrink_underused) >> {}",
        seen.display()
    );
    let db = dir.path().join("r.db");
    common::run_json(
        &[
            "-a",
            "ptes0=khugepaged.max_ptes_none=0,thp.shrink_underused=0",
            "-a",
            "machine=",
            "--blocks",
            "2",
            "--warmup",
            "0",
        ],
        &["sh", "-c", &record],
        &db,
    );
    let lines = std::fs::read_to_string(&seen).unwrap();
    let mut lines: Vec<&str> = lines.lines().collect();
    lines.sort_unstable();
    let machine = format!("{} {}", before.0, before.1);
    assert_eq!(lines, ["0 0", "0 0", machine.as_str(), machine.as_str()]);
    assert_eq!(
        (
            khugepaged("max_ptes_none"),
            common::read_trim(&format!("{THP}/shrink_underused"))
        ),
        before,
        "restored after the run"
    );

    // SIGKILL while the arm's settings are in place: they stay, with the journal, until
    // `hugelab restore` puts back exactly what was there.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args([
            "run",
            "-a",
            "ptes0=khugepaged.max_ptes_none=0",
            "-a",
            "machine=",
            "--blocks",
            "200",
            "--warmup",
            "0",
            "--db",
        ])
        .arg(dir.path().join("k.db"))
        .args(["--", "sleep", "0.2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while khugepaged("max_ptes_none") != "0" {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        khugepaged("max_ptes_none"),
        "0",
        "SIGKILL leaves it in place"
    );
    let out = common::hugelab_stdout(["restore"]);
    assert!(
        out.contains(&format!("khugepaged.max_ptes_none = {}", before.0)),
        "{out}"
    );
    assert_eq!(khugepaged("max_ptes_none"), before.0);
    assert!(!std::path::Path::new("/run/hugelab/journal.json").exists());
}

/// A child that maps 32 MiB with MADV_HUGEPAGE (16 PMD-sized faults), then gives back half of
/// one huge page (a partly mapped THP, queued for a deferred split).
const FAULT_AND_SPLIT: &str = r#"
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
H = 2 << 20
raw = libc.mmap(None, 17 * H, 3, 0x22, -1, 0)
a = (raw + H - 1) & ~(H - 1)
assert libc.madvise(a, 16 * H, 14) == 0
ctypes.memset(a, 1, 16 * H)
assert libc.madvise(a, H // 2, 4) == 0
"#;

#[test]
fn per_size_stats_in_the_evidence_equal_the_kernels_files_around_the_run() {
    let _lock = common::knob_lock();
    assert_eq!(
        common::selected(&format!("{THP}/enabled")),
        "madvise",
        "the machine's THP mode (the test relies on MADV_HUGEPAGE being honoured)"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let (alloc0, deferred0) = (stat_2m("anon_fault_alloc"), stat_2m("split_deferred"));
    let out = common::hugelab_stdout([
        "run",
        "-a",
        "a=",
        "-a",
        "b=",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--db",
        &db.display().to_string(),
        "--",
        "python3",
        "-c",
        FAULT_AND_SPLIT,
    ]);
    let (alloc, deferred) = (
        stat_2m("anon_fault_alloc") - alloc0,
        stat_2m("split_deferred") - deferred0,
    );
    let (_, _, trials) = Store::open(&db).unwrap().load(1).unwrap();
    let sum = |k: &str| -> u64 {
        trials
            .iter()
            .map(|t| {
                t.evidence
                    .gathered
                    .kernel_counters
                    .get(k)
                    .copied()
                    .unwrap_or(0)
            })
            .sum()
    };
    // Two trials of 16 faults and one partly unmapped huge page each; nothing else on the
    // machine faults 2 MiB THP under `madvise` meanwhile.
    assert!(
        alloc >= 32 && deferred >= 2,
        "{alloc} faults, {deferred} deferred splits"
    );
    assert_eq!(sum("mthp.2M.anon_fault_alloc"), alloc);
    assert_eq!(sum("mthp.2M.split_deferred"), deferred);
    // Gauges are not deltas: they are read at the peak.
    assert!(trials.iter().all(|t| {
        let g = &t.evidence.gathered;
        !g.kernel_counters.contains_key("mthp.2M.nr_anon")
            && g.memory.gauges_at_peak.contains_key("mthp.2M.nr_anon")
    }));
    // The answer says it in words, per arm (means per trial).
    let per_arm = alloc / 4;
    assert!(
        out.contains("kernel THP activity per trial")
            && out.contains(&format!("2M: {per_arm} huge faults, 0% fell back")),
        "{out}"
    );
}

/// A child whose peak comes first (128 MiB, then freed), and then collapses 64 MiB of its own
/// memory with MADV_COLLAPSE, which THP `never` does not stop, and holds it for a second.
const PEAK_THEN_COLLAPSE: &str = r#"
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
H = 2 << 20
big = libc.mmap(None, 128 << 20, 3, 0x22, -1, 0)
ctypes.memset(big, 1, 128 << 20)
time.sleep(0.7)
libc.munmap(big, 128 << 20)
raw = libc.mmap(None, 33 * H, 3, 0x22, -1, 0)
a = (raw + H - 1) & ~(H - 1)
ctypes.memset(a, 1, 32 * H)
print("collapse", libc.madvise(a, 32 * H, 25), ctypes.get_errno())
time.sleep(1.5)
"#;

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_never_arm_whose_workload_collapses_its_own_memory_is_flagged() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let v = common::run_json(
        &[
            "-a",
            "never=thp=never",
            "-a",
            "off=process.thp=off",
            "--blocks",
            "2",
            "--warmup",
            "0",
        ],
        &["python3", "-c", PEAK_THEN_COLLAPSE],
        &dir.path().join("r.db"),
    );
    let evidence = v["report"]["evidence"].as_array().unwrap();
    let arm = |name: &str| evidence.iter().find(|e| e["arm"] == name).unwrap();
    let never = arm("never");
    assert_eq!(never["flagged"], 2, "{never}");
    let why = never["first_flag"].as_str().unwrap();
    assert!(
        why.starts_with("at a walk") && why.contains("MADV_COLLAPSE") && why.contains("64M"),
        "{why}"
    );
    // The coverage at the peak (before the collapse) is not the whole story, and says so.
    let (peak, most) = (
        never["mean_coverage_at_peak"].as_f64().unwrap(),
        never["mean_max_coverage"].as_f64().unwrap(),
    );
    assert!(peak < 0.05 && most > 0.5, "at peak {peak}, at most {most}");
    // PR_SET_THP_DISABLE refuses MADV_COLLAPSE: no THP at any walk, nothing flagged.
    let off = arm("off");
    assert_eq!(off["flagged"], 0, "{off}");
    assert!(off["mean_max_coverage"].as_f64().unwrap() < 0.05, "{off}");
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn defrag_mode_is_shown_set_per_arm_and_restored_after_the_run_and_after_sigkill() {
    require_root!();
    let _lock = common::knob_lock();
    const DEFRAG_MODE: &str = "/proc/sys/vm/defrag_mode";
    let before = common::read_trim(DEFRAG_MODE);
    // status shows the kernel's value.
    let st = common::hugelab_json(["status", "--json"]);
    assert_eq!(
        st["compaction"]["defrag_mode"]
            .as_u64()
            .map(|v| v.to_string()),
        Some(before.clone()),
        "{}",
        st["compaction"]
    );
    // Each arm's trials run under its value, read by the trial itself.
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let out = common::hugelab_stdout([
        "run",
        "-a",
        "off=vm.defrag_mode=0",
        "-a",
        "on=vm.defrag_mode=1",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--no-save",
        "--shell",
        "--",
        &format!("cat {DEFRAG_MODE} >> {}", seen.display()),
    ]);
    let values = std::fs::read_to_string(&seen).unwrap();
    let mut v: Vec<&str> = values.lines().collect();
    v.sort();
    assert_eq!(v, ["0", "0", "1", "1"], "{out}");
    assert_eq!(
        common::read_trim(DEFRAG_MODE),
        before,
        "restored after the run"
    );

    // SIGKILL leaves it set; `restore` puts it back.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args(["hold", "vm.defrag_mode=1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    while !line.starts_with("holding") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut reader, &mut line).unwrap() > 0);
    }
    assert_eq!(common::read_trim(DEFRAG_MODE), "1");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(common::read_trim(DEFRAG_MODE), "1", "SIGKILL leaves it");
    let out = common::hugelab_stdout(["restore"]);
    assert!(out.contains(&format!("vm.defrag_mode = {before}")), "{out}");
    assert_eq!(common::read_trim(DEFRAG_MODE), before);
}

/// `tmpfs.huge=`: each arm's files on a tmpfs of its own, mounted with its `huge=` policy,
/// emptied before each trial and unmounted after the run; the kernel's shmem counters show
/// the huge arm's files on 2 MiB pages and the other's not.
#[cfg_attr(unprivileged, ignore = "needs root: mounts a tmpfs")]
#[test]
fn a_tmpfs_arm_puts_the_commands_files_on_its_own_tmpfs_and_unmounts_it() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let alloc0 = stat_2m("shmem_alloc");
    // 32 MiB written to a file on the arm's tmpfs; the tmpfs must be empty at the start.
    let script = "test -z \"$(ls {tmpfs})\" && test \"$HUGELAB_TMPFS\" = {tmpfs} && dd if=/dev/zero of={tmpfs}/f bs=1M count=32 status=none";
    let out = common::hugelab_stdout([
        "run",
        "-a",
        "small=tmpfs.huge=never",
        "-a",
        "huge=tmpfs.huge=always",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--db",
        &db.display().to_string(),
        "--shell",
        "--",
        script,
    ]);
    let alloc = stat_2m("shmem_alloc") - alloc0;
    let (_, _, trials) = Store::open(&db).unwrap().load(1).unwrap();
    assert!(trials.iter().all(|t| t.ok), "{out}");
    let sum = |arm: i64| -> u64 {
        trials
            .iter()
            .filter(|t| t.arm_idx == arm)
            .map(|t| {
                let k = &t.evidence.gathered.kernel_counters;
                k.get("mthp.2M.shmem_alloc").copied().unwrap_or(0)
            })
            .sum()
    };
    // Two trials of 16 huge pages on the huge arm, none on the never arm.
    assert_eq!(sum(0), 0, "{out}");
    assert!(sum(1) >= 32, "{out}");
    assert_eq!(
        sum(0) + sum(1),
        alloc,
        "the kernel's own count over the run"
    );
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains("/run/hugelab/tmpfs-"), "{mounts}");
    // {tmpfs} with an arm that has none is bad input before anything runs.
    let e = common::hugelab_stderr(
        [
            "run",
            "-a",
            "a=tmpfs.huge=always",
            "-a",
            "b=",
            "--",
            "ls",
            "{tmpfs}",
        ],
        2,
    );
    assert!(e.contains("arm b has no tmpfs.huge"), "{e}");
}
