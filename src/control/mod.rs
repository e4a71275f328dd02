//! Stage 2, control: the only code that writes system settings.
//!
//! Writes go through a [`Guard`], and a guard exists only while its process is the one
//! [`Owner`] of the settings (an exclusive lock beside the journal, taken before any original
//! value is read). Before the first change the guard writes a journal of original values
//! (owner pid, time) in `/run/hugelab/`; it restores on drop, on SIGINT/SIGTERM/SIGHUP and on
//! panic (drop runs during unwinding). A journal whose owner died (SIGKILL, power loss of the
//! process) is restored by the next owner, the next hugelab command or `hugelab restore`;
//! a live owner's journal is never written, restored or removed by anyone else.

pub mod journal;
pub mod knob;
pub mod machine;
pub mod owner;
mod ownership;

pub use journal::{Journal, default_journal_path};
pub use knob::{KhugepagedKnob, Knob};
pub use machine::{Contended, Holder, MachineLock, Mode, Sharer};
pub use owner::Owner;
pub use ownership::{
    Recovery, applied, own_for_actions, own_settings, own_to_apply, read_settings, recover,
};

use crate::error::ControlError;
use crate::probe::Root;
use crate::probe::kv::parse_selector;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Reads and writes allowlisted settings: the side-effect seam, so the guard is testable
/// against a fake sysfs tree.
pub trait Settings: Send + Sync {
    /// The current value: the selected word for selectors, the number for counts.
    fn read(&self, knob: &Knob) -> Result<String, ControlError>;
    fn write(&self, knob: &Knob, value: &str) -> Result<(), ControlError>;
}

/// Settings in sysfs under a [`Root`] (`/` live).
#[derive(Debug, Clone)]
pub struct SysfsSettings {
    pub root: Root,
}

impl SysfsSettings {
    pub fn new(root: Root) -> Self {
        SysfsSettings { root }
    }
}

impl Settings for SysfsSettings {
    fn read(&self, knob: &Knob) -> Result<String, ControlError> {
        let path = self.root.path(knob.path());
        let text = std::fs::read_to_string(&path).map_err(|source| ControlError::Read {
            path: PathBuf::from(knob.path()),
            source,
        })?;
        match knob.kind() {
            knob::ValueKind::Selector(_) => {
                parse_selector(&text)
                    .map(|s| s.selected)
                    .map_err(|_| ControlError::NoSelection {
                        path: PathBuf::from(knob.path()),
                        content: text.trim().to_string(),
                    })
            }
            knob::ValueKind::Switch | knob::ValueKind::Number if knob.is_pool() => {
                Ok(persistent(&path, text.trim()))
            }
            knob::ValueKind::Switch | knob::ValueKind::Number => Ok(text.trim().to_string()),
        }
    }

    fn write(&self, knob: &Knob, value: &str) -> Result<(), ControlError> {
        knob.validate(value)?;
        let path = self.root.path(knob.path());
        std::fs::write(&path, value).map_err(|source| {
            let hint = match source.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
                    " (changing system settings needs root; run with sudo, or use per-process arms such as process.thp=off)"
                }
                Some(libc::ENOENT) => " (this kernel lacks the setting)",
                _ => "",
            };
            ControlError::Write {
                path: PathBuf::from(knob.path()),
                value: value.to_string(),
                source,
                hint,
            }
        })
    }
}

/// A pool's own size, what writing `nr_hugepages` sets: the count it reads also holds the
/// surplus pages (in-use pages a shrink turned surplus, or overcommit's), which go back to the
/// system as they are freed. Taken as the size, they would be written back and kept for good:
/// `surplus_hugepages` beside it is taken off (none where the file is absent).
fn persistent(nr_hugepages: &Path, total: &str) -> String {
    let surplus = std::fs::read_to_string(nr_hugepages.with_file_name("surplus_hugepages"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    match total.parse::<u64>() {
        Ok(t) => t.saturating_sub(surplus).to_string(),
        Err(_) => total.to_string(),
    }
}

/// Whether a restore is finished: every value written, and every pool back at its size. A
/// pool the kernel kept larger (pages reserved or in use that it could not turn surplus) keeps
/// its journal entry, so that the next hugelab command gives the rest back once they are free.
pub fn settled(restored: &[Restored]) -> bool {
    restored
        .iter()
        .all(|r| r.error.is_none() && (!r.knob.is_pool() || r.ok()))
}

/// What a `set` obtained: pools may grow short of the request when memory is fragmented.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    pub knob: Knob,
    pub requested: String,
    pub actual: String,
}

impl Applied {
    pub fn honoured(&self) -> bool {
        self.requested == self.actual
    }
}

/// One knob put back (or not) by a restore.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Restored {
    pub knob: Knob,
    pub original: String,
    /// The value read back after writing; differs from `original` when the kernel could not honour it.
    pub now: Option<String>,
    pub error: Option<String>,
}

impl Restored {
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.now.as_deref() == Some(self.original.as_str())
    }

    /// One line for people: what was restored, or why not.
    pub fn describe(&self) -> String {
        match (&self.error, &self.now) {
            (Some(e), _) => format!("{}: could not restore {:?}: {e}", self.knob, self.original),
            (None, Some(now)) if *now == self.original => {
                format!("{} = {}", self.knob, self.original)
            }
            (None, now) if self.knob.is_pool() => format!(
                "{}: asked for {} pages back, the kernel keeps {} (pages reserved or in use; the next hugelab command gives the rest back once they are free)",
                self.knob,
                self.original,
                now.as_deref().unwrap_or("?")
            ),
            (None, now) => format!(
                "{}: wrote {:?}, reads back {:?}",
                self.knob,
                self.original,
                now.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// Put back every journaled value, newest change first.
pub fn restore_changes(settings: &dyn Settings, changes: &[journal::Change]) -> Vec<Restored> {
    changes
        .iter()
        .rev()
        .map(|c| {
            let error = settings
                .write(&c.knob, &c.original)
                .err()
                .map(|e| e.to_string());
            Restored {
                knob: c.knob,
                original: c.original.clone(),
                now: settings.read(&c.knob).ok(),
                error,
            }
        })
        .collect()
}

static DEFER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// What the command does on the first signal, said when it arrives.
static ON_STOP: std::sync::Mutex<&'static str> = std::sync::Mutex::new("stopping");

/// Let the command handle the first SIGINT/SIGTERM/SIGHUP itself (stop, analyse, then drop the
/// guard), saying `what` it does then; a second signal kills the trial in flight (if any),
/// restores and exits immediately.
pub fn defer_first_signal(what: &'static str) {
    *ON_STOP.lock().unwrap_or_else(|p| p.into_inner()) = what;
    DEFER.store(true, std::sync::atomic::Ordering::SeqCst);
    install_signal_handler();
}

/// Whether the first, deferred signal has arrived.
pub fn stop_requested() -> bool {
    SEEN.load(std::sync::atomic::Ordering::SeqCst)
}

/// The trials in flight (a duet runs several), so that a second Ctrl-C can end them: their
/// children's process groups.
pub mod signals {
    use std::sync::Mutex;

    pub(super) static IN_FLIGHT: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    /// Set by an immediate exit before it kills the trials in flight: a runner whose trial it
    /// killed then waits for the exit instead of recording that trial (it is discarded).
    pub(super) static KILLING: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);
    /// The `run --server` servers that are up (the warm design keeps one per arm): killed
    /// with their process trees on an immediate exit.
    pub(super) static SERVERS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

    pub fn server_started(pid: i32) {
        let mut s = SERVERS.lock().unwrap_or_else(|p| p.into_inner());
        if !s.contains(&pid) {
            s.push(pid);
        }
    }

    /// The server `pid` is stopped and reaped.
    pub fn server_stopped(pid: i32) {
        SERVERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != pid);
    }

    /// hugelab's own private directories (a trial's load files, each arm's server directory
    /// and data copy): removed on an immediate exit, once the servers are killed.
    pub(super) static DIRS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

    pub fn dir_created(path: &std::path::Path) {
        DIRS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_path_buf());
    }

    /// The directory is removed (or kept on purpose) by its owner.
    pub fn dir_removed(path: &std::path::Path) {
        DIRS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| p != path);
    }

    /// The tmpfs file systems mounted for arms (`tmpfs.huge=`): detached on an immediate exit.
    pub(super) static MOUNTS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

    pub fn mount_created(path: &std::path::Path) {
        MOUNTS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_path_buf());
    }

    pub fn mount_removed(path: &std::path::Path) {
        MOUNTS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| p != path);
    }

    /// On an immediate exit: detach every registered tmpfs, then remove every private
    /// directory still registered.
    pub(super) fn remove_dirs() {
        for m in std::mem::take(&mut *MOUNTS.lock().unwrap_or_else(|p| p.into_inner())) {
            if let Ok(c) = std::ffi::CString::new(m.as_os_str().as_encoded_bytes()) {
                // SAFETY: a NUL-terminated path; one not mounted just fails.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
            let _ = std::fs::remove_dir(m);
        }
        for d in std::mem::take(&mut *DIRS.lock().unwrap_or_else(|p| p.into_inner())) {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// On an immediate exit: SIGKILL every server's group and tree, and reap them, so that
    /// their hugetlb pages are free before the pools are restored.
    pub(super) fn kill_server() -> bool {
        let pids = std::mem::take(&mut *SERVERS.lock().unwrap_or_else(|p| p.into_inner()));
        for pid in &pids {
            let family = crate::probe::process::tree(*pid);
            // SAFETY: our server's group and its descendants, listed just now; reaping it
            // (a daemon that is not our child just returns ECHILD).
            unsafe {
                libc::killpg(*pid, libc::SIGKILL);
                for p in &family {
                    libc::kill(*p, libc::SIGKILL);
                }
                libc::waitpid(*pid, std::ptr::null_mut(), 0);
            }
        }
        !pids.is_empty()
    }

    /// A child (and its process group `pgid`) started.
    pub fn trial_started(pgid: i32) {
        IN_FLIGHT
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pgid);
    }

    /// The child has exited but is not reaped: end what is left of its group (daemonized
    /// members) while the zombie leader still holds the group id, so no signal can reach a
    /// process that reused it.
    pub fn trial_ended(pgid: i32) {
        let mut g = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
        if KILLING.load(std::sync::atomic::Ordering::SeqCst) {
            // An immediate exit killed it and is under way on the signal thread (restoring,
            // then `process::exit`): nothing after this may record the trial. Under load the
            // runner once stored it before the exit came.
            drop(g);
            loop {
                std::thread::park();
            }
        }
        // SAFETY: signalling a process group whose leader we have not reaped yet.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        g.retain(|p| *p != pgid);
    }
}

/// Actions on the kernel that are not settings (nothing to restore): both need root.
pub fn drop_caches() -> Result<(), ControlError> {
    write_action("/proc/sys/vm/drop_caches", "3")
}

pub fn compact_memory() -> Result<(), ControlError> {
    write_action("/proc/sys/vm/compact_memory", "1")
}

fn write_action(path: &str, value: &str) -> Result<(), ControlError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write(path, value).map_err(|source| ControlError::Write {
        path: PathBuf::from(path),
        value: value.into(),
        source,
        hint: " (needs root)",
    })
}

/// Journals of guards alive in this process, for the signal handler.
static ACTIVE: Mutex<Vec<(Root, PathBuf)>> = Mutex::new(Vec::new());

fn lock_active() -> std::sync::MutexGuard<'static, Vec<(Root, PathBuf)>> {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A line on stderr that cannot fail: `eprintln!` panics when stderr is a closed pipe (the
/// parent that read it died), and a panic here would end the thread that restores settings.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Restore every active guard's journal, then exit as the signal would have.
fn install_signal_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                // A command that stops gracefully (run) handles the first signal itself; its
                // guard restores on drop. A second signal restores and exits at once.
                if DEFER.load(std::sync::atomic::Ordering::SeqCst)
                    && !SEEN.swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    let what = *ON_STOP.lock().unwrap_or_else(|p| p.into_inner());
                    say(&format!(
                        "\nhugelab: {what} — press Ctrl-C again to exit now"
                    ));
                    continue;
                }
                let in_flight = signals::IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
                signals::KILLING.store(true, std::sync::atomic::Ordering::SeqCst);
                for pgid in in_flight.iter() {
                    // SAFETY: the leader is not reaped while IN_FLIGHT holds its group id.
                    unsafe { libc::killpg(*pgid, libc::SIGKILL) };
                }
                if !in_flight.is_empty() {
                    say(&format!(
                        "hugelab: killed the {} in flight; discarded",
                        if in_flight.len() == 1 {
                            "trial"
                        } else {
                            "trials"
                        }
                    ));
                }
                drop(in_flight);
                if signals::kill_server() {
                    say("hugelab: killed the server and its processes");
                }
                signals::remove_dirs();
                // An applier shares its settings with measurements: they end first.
                machine::exclusive_again(&say);
                let active = lock_active();
                for (root, path) in active.iter() {
                    if let Ok(Some(j)) = Journal::load(path) {
                        let restored =
                            restore_changes(&SysfsSettings::new(root.clone()), &j.changes);
                        for r in &restored {
                            say(&format!("hugelab: interrupted; restored {}", r.describe()));
                        }
                        // A pool that cannot shrink yet keeps the journal: the next hugelab
                        // command gives the rest back.
                        if settled(&restored) {
                            let _ = std::fs::remove_file(path);
                        }
                    }
                }
                std::process::exit(128 + sig);
            }
        });
    });
}

/// The one way to change system settings. Restores everything it changed on drop.
pub struct Guard {
    /// Held for the guard's life (and longer, where the process holds another handle).
    _owner: std::sync::Arc<Owner>,
    settings: Box<dyn Settings>,
    root: Root,
    journal_path: PathBuf,
    journal: Journal,
    restored: bool,
}

impl Guard {
    /// A guard over the live system with the default journal path, refusing when another
    /// process owns the settings.
    pub fn system() -> Result<Guard, ControlError> {
        Guard::system_owned(&own_settings(false)?)
    }

    /// A guard over the live system for a process that already owns the settings.
    pub fn system_owned(owner: &std::sync::Arc<Owner>) -> Result<Guard, ControlError> {
        Guard::with_owner(
            owner.clone(),
            Box::new(SysfsSettings::new(Root::system())),
            Root::system(),
        )
    }

    /// A guard writing through `settings`, journaling to `journal_path`: takes the settings
    /// lock beside it, refusing while another process holds it.
    pub fn new(
        settings: Box<dyn Settings>,
        root: Root,
        journal_path: PathBuf,
    ) -> Result<Guard, ControlError> {
        let owner = Owner::acquire(&journal_path, Contended::Refuse, &mut |_| {})?;
        Guard::with_owner(owner, settings, root)
    }

    /// A guard under a lock this process holds, journaling to the lock's journal. Restores a
    /// dead owner's journal first; refuses a journal whose recorded owner is alive (a hugelab
    /// that journals without the lock: an older version).
    pub fn with_owner(
        owner: std::sync::Arc<Owner>,
        settings: Box<dyn Settings>,
        root: Root,
    ) -> Result<Guard, ControlError> {
        let journal_path = owner.journal_path().to_path_buf();
        let mut journal = Journal::for_this_process();
        if let Some(existing) = Journal::load(&journal_path)? {
            if existing.owner_alive() && existing.owner_pid != std::process::id() {
                let holder = Holder {
                    pid: existing.owner_pid,
                    command: crate::probe::process::Proc::system(existing.owner_pid)
                        .cmdline()
                        .join(" "),
                };
                return Err(machine::busy(Some(&holder), journal_path));
            }
            // A dead owner's changes: put them back before taking over the journal.
            let restored = restore_changes(settings.as_ref(), &existing.changes);
            if let Some(bad) = restored.iter().find(|r| r.error.is_some()) {
                return Err(ControlError::Journal {
                    path: journal_path,
                    message: format!(
                        "a previous run's settings could not be restored: {}",
                        bad.describe()
                    ),
                });
            }
            std::fs::remove_file(&journal_path).ok();
            // A pool the kernel could not shrink yet: its original size is this guard's to
            // give back, not the size it reads now.
            let pending: Vec<journal::Change> = existing
                .changes
                .iter()
                .filter(|c| {
                    restored
                        .iter()
                        .any(|r| r.knob == c.knob && !settled(std::slice::from_ref(r)))
                })
                .cloned()
                .collect();
            if !pending.is_empty() {
                journal.changes = pending;
                journal.save(&journal_path)?;
                let mut active = lock_active();
                if !active.iter().any(|(_, p)| *p == journal_path) {
                    active.push((root.clone(), journal_path.clone()));
                }
            }
        }
        install_signal_handler();
        Ok(Guard {
            _owner: owner,
            settings,
            root,
            journal_path,
            journal,
            restored: false,
        })
    }

    /// Change one allowlisted setting. The original value is journaled (and synced to disk)
    /// before the write. Returns what the kernel actually holds afterwards.
    pub fn set(&mut self, knob: Knob, value: &str) -> Result<Applied, ControlError> {
        knob.validate(value)?;
        let mut active = lock_active();
        if !self.journal.changes.iter().any(|c| c.knob == knob) {
            let original = self.settings.read(&knob)?;
            self.journal
                .changes
                .push(journal::Change { knob, original });
            self.journal.save(&self.journal_path)?;
            if !active.iter().any(|(_, p)| *p == self.journal_path) {
                active.push((self.root.clone(), self.journal_path.clone()));
            }
        }
        self.restored = false;
        self.settings.write(&knob, value)?;
        let actual = self.settings.read(&knob)?;
        Ok(Applied {
            knob,
            requested: value.to_string(),
            actual,
        })
    }

    /// The value a knob had before this guard changed it, if it did.
    pub fn original(&self, knob: &Knob) -> Option<&str> {
        self.journal
            .changes
            .iter()
            .find(|c| c.knob == *knob)
            .map(|c| c.original.as_str())
    }

    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }

    /// Put everything back now. The journal is removed only when every value was restored.
    pub fn restore(&mut self) -> Vec<Restored> {
        let mut active = lock_active();
        let restored = restore_changes(self.settings.as_ref(), &self.journal.changes);
        if settled(&restored) {
            std::fs::remove_file(&self.journal_path).ok();
            self.journal.changes.clear();
            active.retain(|(_, p)| *p != self.journal_path);
        }
        self.restored = true;
        restored
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.journal.changes.is_empty() {
            return;
        }
        for r in self.restore() {
            if !r.ok() {
                say(&format!("hugelab: warning: {}", r.describe()));
            }
        }
    }
}
