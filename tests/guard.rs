//! The settings guard: journal before write, restore on drop, panic and signal, allowlist only,
//! dead-owner recovery, and honest reporting of pool shrinks the kernel cannot honour.

use crate::common::{FakeKernel, fake_sysfs};
use hugelab::control::{self, Guard, Journal, Knob, Recovery, Settings, SysfsSettings};
use hugelab::error::ControlError;
use hugelab::probe::Root;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

const TWO_M: u64 = 2 << 20;

fn guard_in(dir: &Path) -> Guard {
    let root = Root::new(dir);
    Guard::new(
        Box::new(FakeKernel(SysfsSettings::new(root.clone()))),
        root,
        dir.join("run/journal.json"),
    )
    .unwrap()
}

fn sel(dir: &Path, rel: &str) -> String {
    let t = std::fs::read_to_string(dir.join(rel)).unwrap();
    hugelab::probe::kv::parse_selector(&t).unwrap().selected
}

#[test]
fn set_journals_first_and_drop_restores() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    {
        let mut g = guard_in(dir.path());
        let a = g.set(Knob::ThpEnabled, "always").unwrap();
        assert!(a.honoured());
        g.set(Knob::ThpEnabled, "never").unwrap(); // second change keeps the first original
        g.set(
            Knob::HugetlbPages {
                size: TWO_M,
                node: None,
            },
            "8",
        )
        .unwrap();
        g.set(Knob::MthpEnabled { size: 65536 }, "always").unwrap();
        assert_eq!(
            sel(dir.path(), "sys/kernel/mm/transparent_hugepage/enabled"),
            "never"
        );
        let j = Journal::load(&dir.path().join("run/journal.json"))
            .unwrap()
            .unwrap();
        assert_eq!(j.owner_pid, std::process::id());
        assert_eq!(j.changes.len(), 3);
        assert_eq!(j.changes[0].original, "madvise");
        assert_eq!(g.original(&Knob::ThpEnabled), Some("madvise"));
    }
    assert_eq!(
        sel(dir.path(), "sys/kernel/mm/transparent_hugepage/enabled"),
        "madvise"
    );
    assert_eq!(
        sel(
            dir.path(),
            "sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
        ),
        "never"
    );
    let n = std::fs::read_to_string(
        dir.path()
            .join("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
    )
    .unwrap();
    assert_eq!(n.trim(), "0");
    assert!(
        !dir.path().join("run/journal.json").exists(),
        "journal removed after a full restore"
    );
}

#[test]
fn panic_unwinding_restores() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let p = dir.path().to_path_buf();
    let r = std::panic::catch_unwind(move || {
        let mut g = guard_in(&p);
        g.set(Knob::ThpDefrag, "always").unwrap();
        panic!("measurement blew up");
    });
    assert!(r.is_err());
    assert_eq!(
        sel(dir.path(), "sys/kernel/mm/transparent_hugepage/defrag"),
        "madvise"
    );
}

#[test]
fn invalid_values_are_refused_before_any_write() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let mut g = guard_in(dir.path());
    let e = g
        .set(Knob::ThpEnabled, "sometimes")
        .unwrap_err()
        .to_string();
    assert!(e.contains("always, madvise, never"), "{e}");
    assert!(!dir.path().join("run/journal.json").exists());
}

#[test]
fn missing_knob_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let mut g = guard_in(dir.path());
    let e = g
        .set(Knob::MthpEnabled { size: 16384 }, "always")
        .unwrap_err()
        .to_string();
    assert!(e.contains("hugepages-16kB/enabled"), "{e}");
}

/// `DIR/run/journal.json` of an owner that no longer runs, which changed THP from `madvise`.
fn dead_owners_journal(dir: &Path) -> std::path::PathBuf {
    let journal = dir.join("run/journal.json");
    let mut j = Journal::for_this_process();
    j.owner_pid = 0x3fff_fff0; // no such process
    j.changes.push(control::journal::Change {
        knob: Knob::ThpEnabled,
        original: "madvise".into(),
    });
    j.save(&journal).unwrap();
    journal
}

#[test]
fn dead_owner_journal_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    std::fs::write(
        dir.path()
            .join("sys/kernel/mm/transparent_hugepage/enabled"),
        "[always] madvise never\n",
    )
    .unwrap();
    let journal = dead_owners_journal(dir.path());
    // The live-sysfs writer rewrites the selector file with the bare word; read it back raw.
    match control::recover(&Root::new(dir.path()), &journal, false).unwrap() {
        Recovery::Restored(r) => assert_eq!(r.len(), 1),
        other => panic!("expected a restore, got {other:?}"),
    }
    let raw = std::fs::read_to_string(
        dir.path()
            .join("sys/kernel/mm/transparent_hugepage/enabled"),
    )
    .unwrap();
    assert_eq!(raw.trim(), "madvise");
    assert!(!journal.exists());
}

/// A command's recovery that meets another hugelab holding the lock over a dead owner's journal
/// (that hugelab restoring it) waits for it, rather than going on under the dead owner's
/// settings: the race CI met between two tests' commands after a SIGKILLed run.
#[test]
fn recovery_meeting_another_restorer_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let journal = dead_owners_journal(dir.path());
    // The other hugelab: it holds the lock, and restores (here: removes the journal) a moment
    // later, after this process's recovery has begun.
    let restorer =
        control::Owner::acquire(&journal, control::Contended::Refuse, &mut |_| {}).unwrap();
    let (began, begun) = std::sync::mpsc::channel();
    let other = {
        let journal = journal.clone();
        std::thread::spawn(move || {
            begun.recv().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::remove_file(&journal).unwrap();
            drop(restorer);
        })
    };
    began.send(()).unwrap();
    let outcome = control::recover(&Root::new(dir.path()), &journal, false).unwrap();
    // Returned only once the restorer had restored (it may still hold the lock a moment).
    let restored_first = !journal.exists();
    other.join().unwrap();
    assert!(
        restored_first && !matches!(outcome, Recovery::Restored(_)),
        "recovery went on while another hugelab was restoring: {outcome:?}"
    );
}

#[test]
fn live_owner_blocks_a_second_guard() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let journal = dir.path().join("run/journal.json");
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut j = Journal::for_this_process();
    j.owner_pid = child.id();
    j.owner_start = control::journal::process_start_time(child.id());
    j.save(&journal).unwrap();
    let root = Root::new(dir.path());
    let e = Guard::new(
        Box::new(SysfsSettings::new(root.clone())),
        root.clone(),
        journal.clone(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().contains(&format!("pid {}", child.id())),
        "{e}"
    );
    assert!(matches!(
        control::recover(&root, &journal, false).unwrap(),
        Recovery::OwnerAlive { .. }
    ));
    // --force: an owner alive that holds no lock of hugelab's (here a `sleep`, as an older
    // hugelab would be) is overridden, and named.
    match control::recover(&root, &journal, true).unwrap() {
        Recovery::Forced { holder, restored } => {
            assert_eq!(holder.pid, child.id());
            assert!(holder.command.contains("sleep"), "{holder:?}");
            assert!(restored.is_empty(), "{restored:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!journal.exists(), "restored and removed");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A kernel that keeps some pool pages because they are still mapped.
struct PinnedPool {
    values: Mutex<HashMap<String, String>>,
    pinned: u64,
    log: Arc<Mutex<Vec<String>>>,
}

impl Settings for PinnedPool {
    fn read(&self, knob: &Knob) -> Result<String, ControlError> {
        Ok(self
            .values
            .lock()
            .unwrap()
            .get(&knob.path())
            .cloned()
            .unwrap_or_else(|| "0".into()))
    }
    fn write(&self, knob: &Knob, value: &str) -> Result<(), ControlError> {
        let v: u64 = value.parse().unwrap();
        let kept = v.max(self.pinned).to_string();
        self.log.lock().unwrap().push(format!("{knob}={value}"));
        self.values.lock().unwrap().insert(knob.path(), kept);
        Ok(())
    }
}

#[test]
fn pool_shrink_not_honoured_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let settings = PinnedPool {
        values: Mutex::new(HashMap::new()),
        pinned: 3,
        log: log.clone(),
    };
    let mut g = Guard::new(
        Box::new(settings),
        Root::new(dir.path()),
        dir.path().join("j.json"),
    )
    .unwrap();
    let pool = Knob::HugetlbPages {
        size: TWO_M,
        node: None,
    };
    g.set(pool, "10").unwrap();
    let restored = g.restore();
    assert_eq!(restored.len(), 1);
    assert!(!restored[0].ok());
    assert_eq!(restored[0].now.as_deref(), Some("3"));
    let msg = restored[0].describe();
    assert!(
        msg.contains("kernel keeps 3") && msg.contains("in use"),
        "{msg}"
    );
    assert_eq!(*log.lock().unwrap(), vec!["hugetlb.2M=10", "hugetlb.2M=0"]);
    // The journal stays, so the pages are given back once they are free: by the next guard
    // (or command) that meets it, here a kernel that no longer pins them.
    let journal = dir.path().join("j.json");
    assert!(
        journal.exists(),
        "a pool not back at its size keeps its journal"
    );
    drop(g);
    assert!(journal.exists());
    let freed = PinnedPool {
        values: Mutex::new(HashMap::new()),
        pinned: 0,
        log: log.clone(),
    };
    let next = Guard::new(Box::new(freed), Root::new(dir.path()), journal.clone()).unwrap();
    assert!(!journal.exists(), "given back, the journal goes");
    assert_eq!(log.lock().unwrap().last().unwrap(), "hugetlb.2M=0");
    drop(next);
}

/// A pool's size is what writing `nr_hugepages` sets: the surplus pages it also counts (a
/// shrink's in-use pages, freed later) are not taken as the size to restore, or they would be
/// kept for good (the leak CI met: 72 pages left after a run whose servers still held them).
#[test]
fn a_pools_surplus_pages_are_not_its_size() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let pool_dir = dir.path().join("sys/kernel/mm/hugepages/hugepages-2048kB");
    std::fs::write(pool_dir.join("nr_hugepages"), "72\n").unwrap();
    std::fs::write(pool_dir.join("surplus_hugepages"), "72\n").unwrap();
    let pool = Knob::HugetlbPages {
        size: TWO_M,
        node: None,
    };
    let root = Root::new(dir.path());
    assert_eq!(SysfsSettings::new(root.clone()).read(&pool).unwrap(), "0");
    let mut g = guard_in(dir.path());
    g.set(pool, "8").unwrap();
    assert_eq!(g.original(&pool), Some("0"));
}

#[test]
fn a_second_guard_is_refused_until_the_first_has_restored() {
    let dir = tempfile::tempdir().unwrap();
    fake_sysfs(dir.path());
    let root = Root::new(dir.path());
    let journal = dir.path().join("run/journal.json");
    let pool = Knob::HugetlbPages {
        size: TWO_M,
        node: None,
    };
    // The interleaving of the reproduction: both decide to change settings, the first writes.
    let mut first = guard_in(dir.path());
    let second = Guard::new(
        Box::new(FakeKernel(SysfsSettings::new(root.clone()))),
        root.clone(),
        journal.clone(),
    );
    let e = second
        .err()
        .expect("refused while the first owns the settings");
    assert!(matches!(e, ControlError::Busy { pid: Some(p), .. } if p == std::process::id()));
    first.set(pool, "128").unwrap();
    // Neither recovery nor a third guard touches the owner's journal.
    assert!(matches!(
        control::recover(&root, &journal, true).unwrap(),
        Recovery::OwnerAlive { .. }
    ));
    assert!(journal.exists());
    drop(first);
    let n = std::fs::read_to_string(
        dir.path()
            .join("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
    )
    .unwrap();
    assert_eq!(n.trim(), "0", "the first restored its own original");
    let mut third = guard_in(dir.path());
    third.set(pool, "4").unwrap();
    assert_eq!(
        third.original(&pool),
        Some("0"),
        "originals read under the lock"
    );
}
