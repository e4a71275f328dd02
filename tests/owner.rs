//! One owner of the machine's settings at a time, live (root): two runs started together, a
//! bench and `restore` while a run owns the pools, and a run killed between its plan and its
//! first write. After each the machine is at its defaults, no journal is left, and the refused
//! process exited 2 (1 for `restore`) naming the owner. Every test holds the shared knob lock.

use crate::common;
use std::process::{Child, Command, Output, Stdio};

const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
const POOL_1G: &str = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";
const JOURNAL: &str = "/run/hugelab/journal.json";
const LOCK: &str = "/run/hugelab/journal.lock";

fn pools() -> (String, String) {
    (common::read_trim(POOL_2M), common::read_trim(POOL_1G))
}

fn hugelab(args: &[&str]) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("hugelab"));
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// A run of two arms, the second growing the 2 MiB pool, each trial `sleep SECONDS`.
fn pool_run(seconds: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "run",
        "--no-save",
        "--warmup",
        "0",
        "-a",
        "base=",
        "-a",
        "pool=hugetlb.2M=4",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sleep", seconds]);
    hugelab(&args)
}

/// Wait until the settings lock names `pid` as its holder (the process has planned and owns
/// the settings); panics if the process ends first.
fn wait_until_owner(child: &mut Child) {
    let pid = child.id().to_string();
    loop {
        let holder = std::fs::read_to_string(LOCK).unwrap_or_default();
        if holder.lines().next() == Some(pid.as_str()) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("hugelab pid {pid} ended ({status}) before owning the settings");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A spawned hugelab, killed and reaped if a failed assertion leaves it running.
struct Running(Option<Child>);

impl Running {
    fn spawn(mut cmd: Command) -> Running {
        Running(Some(cmd.spawn().unwrap()))
    }
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("not yet waited for")
    }
    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_defaults(before: &(String, String)) {
    assert_eq!(&pools(), before, "the pools are back");
    assert!(!std::path::Path::new(JOURNAL).exists(), "no journal left");
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn two_runs_started_together_one_owns_and_the_other_is_refused() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    let mut a = Running::spawn(pool_run("1", &["--blocks", "2", "-q"]));
    let mut b = Running::spawn(pool_run("1", &["--blocks", "2", "-q"]));
    let (pa, pb) = (a.child().id(), b.child().id());
    let (oa, ob) = (a.output(), b.output());
    let mut codes = [oa.status.code(), ob.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(2)],
        "one runs, one is refused:\n{}\n{}",
        text(&oa),
        text(&ob)
    );
    let (refused, owner) = if oa.status.code() == Some(2) {
        (text(&oa), pb)
    } else {
        (text(&ob), pa)
    };
    assert!(
        refused.contains(&format!("another hugelab (pid {owner}: `"))
            && refused.contains("is changing system settings")
            && refused.contains(&format!("kill {owner}")),
        "{refused}"
    );
    assert_defaults(&before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_bench_and_restore_are_refused_while_a_run_owns_the_pools() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    // Long enough (6 trials of 1 s) for the bench and restore to meet it under load.
    let mut run = Running::spawn(pool_run("1", &["--blocks", "3", "-q"]));
    wait_until_owner(run.child());
    let pid = run.child().id();

    let bench = hugelab(&[
        "bench",
        "touch",
        "-b",
        "4k,hugetlb-2m",
        "-s",
        "4M",
        "-r",
        "2",
        "--no-save",
        "-q",
    ])
    .output()
    .unwrap();
    let said = text(&bench);
    assert_eq!(bench.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!("pid {pid}: `")) && said.contains("hugelab run"),
        "the refusal names the owner's pid and command: {said}"
    );

    let restore = hugelab(&["restore"]).output().unwrap();
    let said = text(&restore);
    assert_eq!(restore.status.code(), Some(1), "{said}");
    assert!(
        said.contains("refused") && said.contains(&format!("kill {pid}")),
        "{said}"
    );

    let out = run.output();
    assert!(out.status.success(), "{}", text(&out));
    assert_defaults(&before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_run_killed_between_its_plan_and_its_first_write_leaves_nothing() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    // A seed whose first block runs the baseline (no setting) first: the run then owns the
    // settings, sleeping in its first trial, before it has written anything.
    let seed = (0..1000u64)
        .find(|s| hugelab::experiment::block_order(2, 0, *s)[0] == 0)
        .unwrap()
        .to_string();
    let mut run = Running::spawn(pool_run("60", &["--blocks", "2", "-q", "--seed", &seed]));
    wait_until_owner(run.child());
    assert_eq!(pools(), before, "nothing written yet");
    drop(run); // SIGKILL
    assert_defaults(&before);
    // The kernel let go of the lock with the process: the next owner is not refused.
    let hold = hugelab(&["hold", "hugetlb.2M=2", "--seconds", "0"])
        .output()
        .unwrap();
    assert!(hold.status.success(), "{}", text(&hold));
    assert_defaults(&before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_waiting_run_starts_once_the_owner_has_restored() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    // Long enough (4 trials of 2 s) for the second to find it owning, under load.
    let mut first = Running::spawn(pool_run("1", &["--blocks", "2", "-q"]));
    wait_until_owner(first.child());
    let second = Running::spawn(pool_run(
        "0.1",
        &["--blocks", "2", "-q", "--wait-for-settings"],
    ));
    let out_first = first.output();
    let out_second = second.output();
    assert!(out_first.status.success(), "{}", text(&out_first));
    let said = text(&out_second);
    assert!(out_second.status.success(), "{said}");
    assert!(said.contains("waiting for pid"), "{said}");
    assert_defaults(&before);
}

/// The processes holding the kernel-wide lock now, as `hugelab` finds them.
fn machine_holders() -> Vec<hugelab::control::Sharer> {
    hugelab::control::machine::holders(std::path::Path::new(hugelab::control::machine::LOCK_FILE))
}

/// Wait until `child` holds the kernel-wide lock (to read: a run that changes nothing has
/// planned and measures); panics if it ends first.
fn wait_until_reading(child: &mut Child) {
    let pid = child.id();
    while !machine_holders().iter().any(|s| s.holder.pid == pid) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("hugelab pid {pid} ended ({status}) before holding the settings");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A run whose two arms change nothing, each trial `sleep SECONDS`.
fn plain_run(seconds: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "run",
        "--no-save",
        "--warmup",
        "0",
        "-a",
        "a=",
        "-a",
        "b=env.HUGELAB_AA=1",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sleep", seconds]);
    hugelab(&args)
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_run_that_changes_nothing_waits_for_one_that_does_and_the_reverse() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    // A plain run started while a run grows a pool waits for it, naming it, and then runs.
    let mut writer = Running::spawn(pool_run("1", &["--blocks", "2", "-q"]));
    wait_until_owner(writer.child());
    let wpid = writer.child().id();
    let reader = Running::spawn(plain_run("0.1", &["--blocks", "2", "-q"]));
    let (w, r) = (writer.output(), reader.output());
    assert!(w.status.success(), "{}", text(&w));
    let said = text(&r);
    assert!(r.status.success(), "{said}");
    assert!(
        said.contains(&format!("waiting for pid {wpid}: `"))
            && said.contains("which changes the settings")
            && said.contains("measures under the machine's own settings"),
        "{said}"
    );
    assert_defaults(&before);
    // The reverse: a run that grows a pool, started while a plain run measures, waits for it.
    let mut reader = Running::spawn(plain_run("1", &["--blocks", "2", "-q"]));
    wait_until_reading(reader.child());
    let rpid = reader.child().id();
    let writer = Running::spawn(pool_run("0.1", &["--blocks", "2", "-q"]));
    let (r, w) = (reader.output(), writer.output());
    assert!(r.status.success(), "{}", text(&r));
    let said = text(&w);
    assert!(w.status.success(), "{said}");
    assert!(
        said.contains(&format!("waiting for pid {rpid}: `"))
            && said.contains("which measures under them")
            && said.contains("to finish before changing any setting"),
        "{said}"
    );
    assert_defaults(&before);
    // A writer waits only for the measurements already running: one that starts while it
    // waits queues behind it (it is told to wait for the writer), however long the first runs.
    let mut first = Running::spawn(plain_run("1", &["--blocks", "2", "-q"]));
    wait_until_reading(first.child());
    let mut writer = Running::spawn(pool_run("0.1", &["--blocks", "2", "-q"]));
    let wpid = writer.child().id();
    let queue = std::path::Path::new(hugelab::control::machine::LOCK_FILE)
        .with_file_name(hugelab::control::machine::QUEUE_NAME);
    while !hugelab::control::machine::holders(&queue)
        .iter()
        .any(|s| s.holder.pid == wpid)
    {
        let running = first.child().try_wait().unwrap().is_none();
        assert!(
            running,
            "the first measurement ended before the writer queued"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let second = Running::spawn(plain_run("0.1", &["--blocks", "2", "-q"]));
    let (f, w, r) = (first.output(), writer.output(), second.output());
    assert!(
        f.status.success() && w.status.success(),
        "{}{}",
        text(&f),
        text(&w)
    );
    let said = text(&r);
    assert!(r.status.success(), "{said}");
    assert!(
        said.contains(&format!("waiting for pid {wpid}: `"))
            && said.contains("which changes the settings"),
        "{said}"
    );
    assert_defaults(&before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn one_owner_whatever_the_journal_path_or_namespace() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    let mut owner = Running::spawn(pool_run("1", &["--blocks", "3", "-q"]));
    wait_until_owner(owner.child());
    let pid = owner.child().id();
    let dir = tempfile::tempdir().unwrap();
    // Another journal path, and a second hugelab in a new mount, IPC or PID namespace: each is
    // refused, naming the owner (from a PID namespace of its own the owner is not in
    // /proc/locks: the lock itself says a writer holds it).
    let journal = dir.path().join("elsewhere/journal.json");
    let mut other = pool_run("0.1", &["--blocks", "2", "-q"]);
    other.env("HUGELAB_JOURNAL", &journal);
    // --drop-caches acts on the whole machine: it waits for the owner (said), then runs.
    let drop_caches = Running::spawn(plain_run("0.1", &["--blocks", "2", "-q", "--drop-caches"]));
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let pool_args = [
        "run",
        "--no-save",
        "--warmup",
        "0",
        "-a",
        "base=",
        "-a",
        "pool=hugetlb.2M=4",
        "--blocks",
        "2",
        "-q",
        "--",
        "sleep",
        "0.1",
    ];
    let in_ns = |flags: &[&str]| {
        let mut c = Command::new("unshare");
        c.args(flags).arg(&bin).args(pool_args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    };
    let cases = [
        ("HUGELAB_JOURNAL elsewhere", other, true),
        ("a mount namespace", in_ns(&["--mount"]), true),
        ("an IPC namespace", in_ns(&["--ipc"]), true),
        (
            "a PID namespace",
            in_ns(&["--pid", "--fork", "--mount-proc"]),
            false,
        ),
    ];
    for (what, mut cmd, visible) in cases {
        let out = cmd.output().unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {said}");
        let named = match visible {
            true => format!("another hugelab (pid {pid}: `"),
            false => hugelab::control::machine::UNSEEN.to_string(),
        };
        assert!(
            said.contains(&named) && said.contains("is changing system settings"),
            "{what}: {said}"
        );
    }
    assert!(!journal.exists(), "the refused wrote no journal");
    let out = owner.output();
    assert!(out.status.success(), "{}", text(&out));
    let out = drop_caches.output();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("waiting for pid {pid}: `"))
            && said.contains("act on the whole machine, so they wait for its owner"),
        "{said}"
    );
    assert_defaults(&before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn a_run_waiting_behind_a_killed_owner_restores_its_settings_before_planning() {
    require_root!();
    let _lock = common::knob_lock();
    let before = pools();
    // A seed whose first block runs the pool arm first: the owner has grown the pool (and
    // journaled it) when it is killed in that trial.
    let seed = (0..1000u64)
        .find(|s| hugelab::experiment::block_order(2, 0, *s)[0] == 1)
        .unwrap()
        .to_string();
    let mut owner = Running::spawn(pool_run("60", &["--blocks", "2", "-q", "--seed", &seed]));
    wait_until_owner(owner.child());
    let dead = owner.child().id();
    while common::read_trim(POOL_2M) != "4" {
        assert!(
            owner.child().try_wait().unwrap().is_none(),
            "the owner ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let waiting = Running::spawn(pool_run(
        "0.1",
        &["--blocks", "2", "--wait-for-settings", "--json"],
    ));
    // It waits for the owner (said), then the owner dies without restoring anything.
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(owner); // SIGKILL
    let out = waiting.output();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "pid {dead} ended without restoring what it changed; restored"
        )),
        "{said}"
    );
    // Restored before planning: the waiting run's pool arm was sized from the machine's own
    // pool (0), and got its pages.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pool = &v["pools"][0];
    assert_eq!(
        (&pool["asked"], &pool["obtained"]),
        (&4.into(), &4.into()),
        "{pool}"
    );
    assert_defaults(&before);
}

/// Pages still in use when a pool shrinks stay counted in `nr_hugepages` as surplus until they
/// are freed. A run that starts then takes the pool's own size (0) as its original, not the
/// count (8), so that once the pages are freed the pool is empty again, not 8 pages for good.
#[cfg_attr(unprivileged, ignore = "needs root: sizes the 2 MiB pool")]
#[test]
fn a_pools_surplus_pages_are_not_restored_as_its_size() {
    require_root!();
    let lock = common::knob_lock();
    let before = pools();
    lock.set(POOL_2M, "8");
    // Eight pool pages in use, then the pool shrunk under them: they turn surplus.
    let mut holder = Running(Some(
        Command::new("python3")
            .args([
                "-c",
                "import mmap, sys, time\n\
                 m = mmap.mmap(-1, 8 << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)\n\
                 for i in range(0, 8 << 21, 4096): m[i] = 1\n\
                 print('ready', flush=True)\n\
                 sys.stdin.read()",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.0.as_mut().unwrap().stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    lock.set(POOL_2M, &before.0);
    let surplus = "/sys/kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages";
    assert_eq!(
        common::read_trim(surplus),
        "8",
        "the pages in use turned surplus"
    );
    assert_eq!(common::read_trim(POOL_2M), "8", "nr_hugepages counts them");
    let out = pool_run("0", &["--blocks", "2", "-q"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(holder);
    assert_eq!(pools(), before, "the surplus went back as it was freed");
}
