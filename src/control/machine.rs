//! The lock every hugelab on one kernel shares, whatever its journal path: a `flock` on the
//! kernel's own THP mode file (`/sys/kernel/mm/transparent_hugepage/enabled`, opened to read).
//! A process that changes settings (pools, THP, caches dropped, memory compacted) takes it
//! exclusive; one whose answer depends on the settings it reads takes it shared, so that no
//! other hugelab changes them under its measurement. sysfs is the kernel's: a process in another
//! mount, PID or IPC namespace that sees the host's sysfs locks the same inode. A container
//! with a sysfs of its own (a network namespace's) has another inode, and its owners are not
//! seen from outside it, nor the host's from inside.
//!
//! Who holds it is read from `/proc/locks` (the lock's device and inode, the holder's pid and
//! whether it reads or writes), not from a file the holder writes, so two journal paths never
//! hide one owner from the other.

use crate::error::ControlError;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The process that holds the settings lock, as its lock file names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Holder {
    pub pid: u32,
    /// Its command line, arguments joined by spaces.
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            // Not visible from this PID namespace: what is known of it is all there is.
            0 => f.write_str(&self.command),
            pid => write!(f, "pid {pid}: `{}`", self.command),
        }
    }
}

/// What to do when another process holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contended {
    /// Refuse at once with [`ControlError::Busy`].
    Refuse,
    /// Block until the holder has restored its settings and exited or released it.
    Wait,
}

/// The refusal naming `holder`, who holds `path`.
pub fn busy(holder: Option<&Holder>, path: PathBuf) -> ControlError {
    ControlError::Busy {
        // Never `kill 0` (this process's group) for a holder whose pid is not visible.
        pid: holder.map(|h| h.pid).filter(|p| *p != 0),
        holder: holder.map_or_else(|| "pid unknown".into(), |h| h.to_string()),
        path,
    }
}

/// `Ok(false)` when the lock is held elsewhere (only with `LOCK_NB`).
pub fn try_lock(file: &File, operation: libc::c_int) -> std::io::Result<bool> {
    loop {
        // SAFETY: flock on a valid open file descriptor that `file` keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// The file whose lock every hugelab on the kernel shares.
pub const LOCK_FILE: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// How a process holds the machine lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Its answer depends on the settings as they are: shared with other readers.
    Read,
    /// It changes settings: alone.
    Write,
}

/// One process holding (or waiting for) the machine lock, from `/proc/locks`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Sharer {
    pub holder: Holder,
    pub mode: Mode,
}

impl std::fmt::Display for Sharer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.mode {
            Mode::Write => write!(f, "{}, which changes the settings", self.holder),
            Mode::Read => write!(f, "{}, which measures under them", self.holder),
        }
    }
}

/// Whether this process holds the lock to read: it cannot then take it to write (the two
/// open files would wait for each other), so such a request fails at once instead.
static READING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The held machine lock; released when dropped (or when the process exits, however).
#[derive(Debug)]
pub struct MachineLock {
    file: File,
    pub mode: Mode,
    /// The gate passed (a writer) or closed (an applier) before this lock was taken.
    _gate: Option<Gate>,
}

impl MachineLock {
    /// Take the lock on `path` (the live kernel's: [`LOCK_FILE`]) in `mode`. When others hold
    /// it in a way that excludes `mode`, `contended` is told who they are and chooses: refuse
    /// at once (naming them in [`ControlError::Busy`]), or block until they let go.
    pub fn acquire(
        path: &Path,
        mode: Mode,
        contended: &mut dyn FnMut(&[Sharer]) -> Contended,
    ) -> Result<MachineLock, ControlError> {
        use std::sync::atomic::Ordering::SeqCst;
        if mode == Mode::Write && READING.load(SeqCst) > 0 {
            return Err(ControlError::Journal {
                path: path.to_path_buf(),
                message: "this process measures under the settings as they are (it holds the lock to read) and cannot change them: a setting it changes must be planned as one (an arm, a condition)".into(),
            });
        }
        // A measurement already reading in this process, or in one it descends from (a
        // workload that is itself a hugelab), is not queued: the writer waits for it.
        let queue = match mode == Mode::Read && (READING.load(SeqCst) > 0 || under_a_reader(path)) {
            true => None,
            false => queue_of(path),
        };
        let file = flock_contended(path, mode, contended, queue.as_deref())?;
        if mode == Mode::Read {
            READING.fetch_add(1, SeqCst);
        }
        Ok(MachineLock {
            file,
            mode,
            _gate: None,
        })
    }

    /// Keep `gate` (passed or closed before this lock was taken) as long as this lock.
    pub fn hold_gate(&mut self, gate: Gate) {
        self._gate = Some(gate);
    }

    /// An applier's settings are in place: let measurements that change nothing share them.
    /// The gate it holds closed keeps every other writer out while the lock turns from
    /// exclusive to shared (a conversion `flock` does not make atomic), and until the signal
    /// handler takes it exclusive again ([`exclusive_again`]) to restore them.
    pub fn share(&self) -> Result<(), ControlError> {
        if self._gate.as_ref().is_none_or(|g| g.mode != Mode::Write) {
            return Err(ControlError::Journal {
                path: PathBuf::from(LOCK_FILE),
                message: "only an applier that closed the gate shares the settings it holds".into(),
            });
        }
        let err = |e: std::io::Error| ControlError::Journal {
            path: PathBuf::from(LOCK_FILE),
            message: format!("cannot share the lock: {e}"),
        };
        let again = self.file.try_clone().map_err(err)?;
        try_lock(&self.file, libc::LOCK_SH).map_err(err)?;
        *SHARED.lock().unwrap_or_else(|p| p.into_inner()) = Some(again);
        Ok(())
    }
}

/// The lock an applier shares with measurements ([`MachineLock::share`]), for the signal
/// handler to take exclusive again before it restores.
static SHARED: std::sync::Mutex<Option<File>> = std::sync::Mutex::new(None);

/// Before an applier restores its settings: the lock it shares taken exclusive again, once the
/// measurements under them have ended (each is named while it is waited for). Nothing to do
/// in a process that shares none.
pub fn exclusive_again(say: &dyn Fn(&str)) {
    let shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(file) = shared.as_ref() else { return };
    if try_lock(file, libc::LOCK_EX | libc::LOCK_NB).is_ok_and(|got| got) {
        return;
    }
    for s in holders(Path::new(LOCK_FILE)) {
        say(&format!(
            "hugelab: waiting for {s} to end before restoring the settings"
        ));
    }
    // Queued, so that measurements starting now wait for the restore instead of delaying it.
    let _queued = queue_of(Path::new(LOCK_FILE)).and_then(|q| locked(&q, libc::LOCK_EX).ok());
    let _ = try_lock(file, libc::LOCK_EX);
}

/// The gate in front of the machine lock, on a second kernel file ([`GATE_FILE`]): every
/// process that changes settings passes it (shared) before it takes the machine lock, and an
/// applier (`hugelab apply`) closes it (exclusive) for its life. With the gate closed no other
/// writer can reach the machine lock, so the applier can share that lock with measurements
/// that change nothing: they run under its settings at once, while a run that would change
/// them meets the closed gate and is refused, naming the applier.
#[derive(Debug)]
pub struct Gate {
    _file: File,
    /// Read: passed by a writer; Write: closed by an applier.
    pub mode: Mode,
}

/// The file whose lock is the gate: the kernel's THP defrag mode file, beside [`LOCK_FILE`].
pub const GATE_FILE: &str = "/sys/kernel/mm/transparent_hugepage/defrag";

impl Gate {
    /// Pass the gate on `path` ([`Mode::Read`]) or close it ([`Mode::Write`]); `contended` as
    /// for [`MachineLock::acquire`].
    pub fn acquire(
        path: &Path,
        mode: Mode,
        contended: &mut dyn FnMut(&[Sharer]) -> Contended,
    ) -> Result<Gate, ControlError> {
        Ok(Gate {
            _file: flock_contended(path, mode, contended, None)?,
            mode,
        })
    }
}

/// The process that keeps the gate on `path` closed (an applier), if one does.
pub fn gate_closer(path: &Path) -> Option<Holder> {
    holders(path)
        .into_iter()
        .find(|s| s.mode == Mode::Write)
        .map(|s| s.holder)
        .or_else(|| writer_holds(path).then(|| unseen(Mode::Write).holder))
}

/// The turnstile in front of the machine lock: a third kernel file, beside [`LOCK_FILE`]. A
/// writer that has to wait for measurements holds it closed while it waits, and a measurement
/// passes it before it takes the lock. `flock` lets a new reader in past a waiting writer, so
/// without it a writer waits for as long as measurements overlap, however many start after
/// it; with it, only for those already running when it asked.
pub const QUEUE_NAME: &str = "hpage_pmd_size";

/// The turnstile beside the lock file `path`, where the kernel has one.
fn queue_of(path: &Path) -> Option<PathBuf> {
    Some(path.with_file_name(QUEUE_NAME)).filter(|q| q.exists())
}

/// `path` opened and locked with `op`, blocking until it is.
fn locked(path: &Path, op: libc::c_int) -> std::io::Result<File> {
    let file = File::open(path)?;
    try_lock(&file, op)?;
    Ok(file)
}

/// Whether a process this one descends from holds the lock on `path` to read: a workload that
/// is itself a hugelab measuring must not queue behind a writer that waits for its parent.
fn under_a_reader(path: &Path) -> bool {
    let readers: Vec<u32> = holders(path)
        .into_iter()
        .filter(|s| s.mode == Mode::Read)
        .map(|s| s.holder.pid)
        .collect();
    let mut pid = std::process::id() as i32;
    while !readers.is_empty() {
        match crate::probe::process::stat(pid) {
            Some(s) if s.ppid > 1 && readers.contains(&(s.ppid as u32)) => return true,
            Some(s) if s.ppid > 1 => pid = s.ppid,
            _ => return false,
        }
    }
    false
}

/// `path` opened and locked in `mode`; when others hold it in a way that excludes `mode`,
/// `contended` is told who they are and chooses to refuse (naming them) or wait. With a
/// `queue` (the machine lock's turnstile), a reader passes it first, told of the writers
/// waiting there as of holders, and a writer that waits holds it closed meanwhile.
fn flock_contended(
    path: &Path,
    mode: Mode,
    contended: &mut dyn FnMut(&[Sharer]) -> Contended,
    queue: Option<&Path>,
) -> Result<File, ControlError> {
    let file = File::open(path).map_err(|source| ControlError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let op = match mode {
        Mode::Read => libc::LOCK_SH,
        Mode::Write => libc::LOCK_EX,
    };
    let err = |e: std::io::Error| ControlError::Journal {
        path: path.to_path_buf(),
        message: format!("cannot lock: {e}"),
    };
    let _passing = match (mode, queue) {
        (Mode::Read, Some(q)) => Some(flock_contended(q, Mode::Read, contended, None)?),
        _ => None,
    };
    if !try_lock(&file, op | libc::LOCK_NB).map_err(err)? {
        let mut others = holders(path);
        // `/proc/locks` lists only holders in this PID namespace: whether a writer holds
        // it is asked of the lock itself (a shared lock is refused only by a writer).
        if !others.iter().any(|s| s.mode == Mode::Write) && writer_holds(path) {
            others.insert(0, unseen(Mode::Write));
        }
        if contended(&others) == Contended::Refuse {
            return Err(refusal(&others, path.to_path_buf()));
        }
        let _queued = match (mode, queue) {
            (Mode::Write, Some(q)) => Some(locked(q, libc::LOCK_EX).map_err(err)?),
            _ => None,
        };
        try_lock(&file, op).map_err(err)?;
    }
    Ok(file)
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        if self.mode == Mode::Read {
            READING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
        // SAFETY: unlocking our own open file descriptor (closing it would too).
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Whether a process holds the lock on `path` exclusive now (a shared lock taken on a file of
/// our own is refused only by a writer; it is let go at once).
fn writer_holds(path: &Path) -> bool {
    File::open(path)
        .is_ok_and(|f| try_lock(&f, libc::LOCK_SH | libc::LOCK_NB).is_ok_and(|got| !got))
}

/// A holder `/proc/locks` does not show this process.
fn unseen(mode: Mode) -> Sharer {
    Sharer {
        holder: Holder {
            pid: 0,
            command: UNSEEN.into(),
        },
        mode,
    }
}

/// How a holder in a PID namespace this process cannot see is named.
pub const UNSEEN: &str = "a hugelab in a PID namespace this one cannot see";

/// The refusal naming the first writer among `others` (or the first of them).
fn refusal(others: &[Sharer], path: PathBuf) -> ControlError {
    let first = others
        .iter()
        .find(|s| s.mode == Mode::Write)
        .or(others.first());
    busy(first.map(|s| &s.holder), path)
}

/// Every other process that holds the lock on `path` now, writers first.
pub fn holders(path: &Path) -> Vec<Sharer> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Vec::new();
    };
    let text = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    let mut v: Vec<Sharer> = parse_locks(&text, meta.dev(), meta.ino())
        .into_iter()
        .filter(|(pid, _)| *pid != std::process::id())
        .map(|(pid, mode)| Sharer {
            holder: Holder {
                pid,
                command: match pid {
                    0 => UNSEEN.into(),
                    _ => crate::probe::process::Proc::system(pid).cmdline().join(" "),
                },
            },
            mode,
        })
        .collect();
    v.sort_by_key(|s| (s.mode == Mode::Read, s.holder.pid));
    v.dedup();
    v
}

/// The granted `FLOCK` entries of `/proc/locks` on the file `dev`/`ino`: pid and mode. A
/// holder in a PID namespace this process cannot see is listed with pid 0 by the kernel and
/// kept as such. Entries waiting for the lock (`->`) are not holders.
pub fn parse_locks(text: &str, dev: u64, ino: u64) -> Vec<(u32, Mode)> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(1) != Some(&"FLOCK") || f.get(5) != Some(&want.as_str()) {
                return None;
            }
            let mode = match *f.get(3)? {
                "READ" => Mode::Read,
                "WRITE" => Mode::Write,
                _ => return None,
            };
            Some((f.get(4)?.parse::<i64>().ok()?.max(0) as u32, mode))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_entries_of_the_file_are_its_holders_and_waiters_are_not() {
        let text = "1: FLOCK  ADVISORY  WRITE 1505 00:16:3830 0 EOF\n\
                    1: -> FLOCK  ADVISORY  READ 1600 00:16:3830 0 EOF\n\
                    2: FLOCK  ADVISORY  READ 1700 00:16:3830 0 EOF\n\
                    3: POSIX  ADVISORY  WRITE 1800 00:16:3830 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 1900 00:17:3830 0 EOF\n\
                    5: FLOCK  ADVISORY  READ -1 00:16:3830 0 EOF\n";
        let dev = libc::makedev(0, 0x16);
        assert_eq!(
            parse_locks(text, dev, 3830),
            vec![(1505, Mode::Write), (1700, Mode::Read), (0, Mode::Read)]
        );
    }

    #[test]
    fn a_writer_excludes_readers_and_readers_share() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enabled");
        std::fs::write(&path, "always [madvise] never\n").unwrap();
        let refuse = |mode| MachineLock::acquire(&path, mode, &mut |_| Contended::Refuse);
        // flock locks belong to the open file, so one process can contend with itself.
        let w = refuse(Mode::Write).unwrap();
        assert!(matches!(refuse(Mode::Read), Err(ControlError::Busy { .. })));
        drop(w);
        let r1 = refuse(Mode::Read).unwrap();
        let r2 = refuse(Mode::Read).unwrap();
        // A process that reads cannot take it to write: refused at once, not a deadlock.
        match refuse(Mode::Write) {
            Err(ControlError::Journal { message, .. }) => {
                assert!(message.contains("cannot change them"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        drop((r1, r2));
        refuse(Mode::Write).unwrap();
    }

    #[test]
    fn a_closed_gate_keeps_writers_out_and_only_its_closer_shares() {
        let dir = tempfile::tempdir().unwrap();
        let (lock, gate) = (dir.path().join("enabled"), dir.path().join("defrag"));
        for p in [&lock, &gate] {
            std::fs::write(p, "always [madvise] never\n").unwrap();
        }
        let refuse = |path: &Path, mode| Gate::acquire(path, mode, &mut |_| Contended::Refuse);
        // Writers pass the gate side by side; an applier cannot close it while they are past it.
        let passed = refuse(&gate, Mode::Read).unwrap();
        assert!(refuse(&gate, Mode::Read).is_ok());
        assert!(matches!(
            refuse(&gate, Mode::Write),
            Err(ControlError::Busy { .. })
        ));
        drop(passed);
        // Closed, it refuses a writer; a writer's machine lock cannot share.
        let mut w = MachineLock::acquire(&lock, Mode::Write, &mut |_| Contended::Refuse).unwrap();
        w.hold_gate(refuse(&gate, Mode::Read).unwrap());
        assert!(w.share().is_err());
        drop(w);
        let closed = refuse(&gate, Mode::Write).unwrap();
        assert!(matches!(
            refuse(&gate, Mode::Read),
            Err(ControlError::Busy { .. })
        ));
        let mut applier =
            MachineLock::acquire(&lock, Mode::Write, &mut |_| Contended::Refuse).unwrap();
        applier.hold_gate(closed);
        // (A measurement's lock, taken as a plain shared flock: the process-wide count of
        // readers is another test's.)
        assert!(refuse(&lock, Mode::Read).is_err());
        // Shared: a measurement takes the lock at once.
        applier.share().unwrap();
        let r = refuse(&lock, Mode::Read).unwrap();
        drop((r, applier));
        SHARED.lock().unwrap().take();
    }

    #[test]
    fn a_waiting_writer_is_not_passed_by_a_reader_that_comes_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let (lock, queue) = (dir.path().join("enabled"), dir.path().join(QUEUE_NAME));
        for p in [&lock, &queue] {
            std::fs::write(p, "x\n").unwrap();
        }
        let q = Some(queue.as_path());
        let (tx, rx) = std::sync::mpsc::channel::<&str>();
        let take = |mode: Mode, tx: std::sync::mpsc::Sender<&'static str>, name| {
            let told = tx.clone();
            let file = flock_contended(
                &lock,
                mode,
                &mut |_| {
                    let _ = told.send("waits");
                    Contended::Wait
                },
                q,
            )
            .unwrap();
            tx.send(name).unwrap();
            file
        };
        let reading = take(Mode::Read, tx.clone(), "first reader");
        assert_eq!(rx.recv().unwrap(), "first reader");
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let held = take(Mode::Write, tx.clone(), "writer");
                std::thread::sleep(std::time::Duration::from_millis(50));
                drop(held);
            });
            assert_eq!(rx.recv().unwrap(), "waits");
            // The writer is queued once it holds the turnstile closed.
            while try_lock(&File::open(&queue).unwrap(), libc::LOCK_SH | libc::LOCK_NB).unwrap() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let reader = s.spawn(|| drop(take(Mode::Read, tx.clone(), "second reader")));
            // The second reader is told to wait (at the turnstile), not let in beside the first.
            assert_eq!(rx.recv().unwrap(), "waits");
            drop(reading);
            writer.join().unwrap();
            reader.join().unwrap();
        });
        drop(tx);
        let order: Vec<&str> = rx.iter().filter(|m| *m != "waits").collect();
        assert_eq!(order, ["writer", "second reader"]);
    }
}
