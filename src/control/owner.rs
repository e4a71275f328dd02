//! One owner of the machine's settings at a time: an exclusive `flock` on a file beside the
//! journal (`journal.lock`), taken before any original value is read and held until every
//! change is restored. The kernel drops it when the owner exits, however it exits, so a
//! SIGKILLed owner never blocks the next one; the journal it left is then restored under the
//! next owner's lock. The lock file names its holder (pid, start time, command line) for the
//! refusal a second process prints.

use super::machine::{Contended, Holder, MachineLock, busy, try_lock};
use crate::error::ControlError;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The held lock. Shared (`Arc`) by every guard one process makes in turn, so that the
/// process stays the owner between them; released when the last handle drops.
#[derive(Debug)]
pub struct Owner {
    file: File,
    journal_path: PathBuf,
    /// The kernel-wide lock every hugelab shares, held exclusive (the live machine's owner).
    machine: Option<MachineLock>,
}

/// `DIR/journal.json` → `DIR/journal.lock`.
pub fn lock_path(journal_path: &Path) -> PathBuf {
    journal_path.with_extension("lock")
}

impl Owner {
    /// Take the lock that guards `journal_path`. With [`Contended::Wait`], `waiting` is told
    /// who holds it before the call blocks.
    pub fn acquire(
        journal_path: &Path,
        contended: Contended,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Arc<Owner>, ControlError> {
        Owner::acquire_with(journal_path, contended, waiting, None)
    }

    /// [`Owner::acquire`] by a process that already holds `machine` (the kernel-wide lock,
    /// exclusive), kept as long as the ownership.
    pub fn acquire_with(
        journal_path: &Path,
        contended: Contended,
        waiting: &mut dyn FnMut(Option<&Holder>),
        machine: Option<MachineLock>,
    ) -> Result<Arc<Owner>, ControlError> {
        let path = lock_path(journal_path);
        let err = |message: String| ControlError::Journal {
            path: path.clone(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| err(format!("cannot open: {e}")))?;
        if !try_lock(&file, libc::LOCK_EX | libc::LOCK_NB).map_err(|e| err(e.to_string()))? {
            let holder = read_holder(&mut file);
            match contended {
                Contended::Refuse => return Err(busy(holder.as_ref(), path)),
                Contended::Wait => {
                    waiting(holder.as_ref());
                    try_lock(&file, libc::LOCK_EX).map_err(|e| err(e.to_string()))?;
                }
            }
        }
        write_holder(&mut file).map_err(|e| err(format!("cannot name the owner: {e}")))?;
        Ok(Arc::new(Owner {
            file,
            journal_path: journal_path.to_path_buf(),
            machine,
        }))
    }

    /// Take the lock if it is free; `None` when another process holds it.
    pub fn try_acquire(journal_path: &Path) -> Result<Option<Arc<Owner>>, ControlError> {
        match Owner::acquire(journal_path, Contended::Refuse, &mut |_| {}) {
            Ok(owner) => Ok(Some(owner)),
            Err(ControlError::Busy { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Who holds the lock that guards `journal_path` now, if anyone does: the process its
    /// file names, if that process still runs (same pid, same start time). Read without
    /// touching the lock, so looking never makes an owner's `acquire` fail.
    pub fn holder(journal_path: &Path) -> Option<Holder> {
        let text = std::fs::read_to_string(lock_path(journal_path)).ok()?;
        let (holder, start) = parse_holder(&text)?;
        let running = super::journal::process_start_time(holder.pid)?;
        (start.is_none_or(|s| s == running)).then_some(holder)
    }

    /// An applier's settings are in place: measurements that change nothing may run under
    /// them from now on ([`MachineLock::share`]); writers stay kept out by the closed gate.
    pub fn share_settings(&self) -> Result<(), ControlError> {
        self.machine.as_ref().map_or(Ok(()), MachineLock::share)
    }

    /// The journal this lock guards.
    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // The holder's name goes first, so nobody reads a released lock as held by us.
        let _ = self.file.set_len(0);
        // SAFETY: unlocking our own open file descriptor (closing it would too).
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn write_holder(file: &mut File) -> std::io::Result<()> {
    let pid = std::process::id();
    let start = super::journal::process_start_time(pid).map_or(String::new(), |s| s.to_string());
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{pid}\n{start}\n{command}")?;
    file.flush()
}

/// The holder named in a lock found held. It writes its name just after taking the lock, so a
/// contender that arrives in between waits for the name a little (off any measuring path).
fn read_holder(file: &mut File) -> Option<Holder> {
    for _ in 0..100 {
        let mut text = String::new();
        if file.rewind().is_ok()
            && file.read_to_string(&mut text).is_ok()
            && let Some((holder, _)) = parse_holder(&text)
        {
            return Some(holder);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    None
}

/// The lock file's text: the pid, its start time (clock ticks after boot, so a recycled pid
/// is not taken for the holder) and the command line, one a line.
pub fn parse_holder(text: &str) -> Option<(Holder, Option<u64>)> {
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse().ok()?;
    let start = lines.next().and_then(|l| l.trim().parse().ok());
    let command = lines.next().unwrap_or("").trim().to_string();
    Some((Holder { pid, command }, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_owner_is_refused_naming_the_first_and_gets_it_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("run/journal.json");
        let first = Owner::acquire(&journal, Contended::Refuse, &mut |_| {}).unwrap();
        let e = Owner::acquire(&journal, Contended::Refuse, &mut |_| {}).unwrap_err();
        match &e {
            ControlError::Busy { pid, holder, .. } => {
                assert_eq!(*pid, Some(std::process::id()));
                assert!(
                    holder.contains(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
            }
            other => panic!("expected Busy naming the holder, got {other:?}"),
        }
        assert!(e.to_string().contains("journal.lock"), "{e}");
        assert_eq!(
            Owner::holder(&journal).map(|h| h.pid),
            Some(std::process::id())
        );
        assert!(Owner::try_acquire(&journal).unwrap().is_none());
        drop(first);
        assert_eq!(Owner::holder(&journal), None, "released");
        assert!(Owner::try_acquire(&journal).unwrap().is_some());
    }

    #[test]
    fn a_waiter_is_told_who_holds_it_and_proceeds_when_released() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.json");
        let first = Owner::acquire(&journal, Contended::Refuse, &mut |_| {}).unwrap();
        let (told, heard) = std::sync::mpsc::channel();
        let j = journal.clone();
        let waiter = std::thread::spawn(move || {
            Owner::acquire(&j, Contended::Wait, &mut |h| {
                told.send(h.map(|h| h.pid)).unwrap()
            })
            .map(|_| ())
        });
        // The waiter has found the lock held (it said so) before the holder lets go.
        assert_eq!(heard.recv().unwrap(), Some(std::process::id()));
        drop(first);
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn a_dead_holder_named_in_the_file_is_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.json");
        let pid = std::process::id();
        std::fs::write(lock_path(&journal), format!("{pid}\n1\nhugelab run\n")).unwrap();
        assert_eq!(
            Owner::holder(&journal),
            None,
            "same pid, other start: recycled"
        );
        std::fs::write(lock_path(&journal), "1073741800\n\nhugelab run\n").unwrap();
        assert_eq!(Owner::holder(&journal), None, "no such process");
    }

    #[test]
    fn holder_text_parses_and_garbage_is_none() {
        assert_eq!(
            parse_holder("42\n1234\nhugelab bench tlb\n"),
            Some((
                Holder {
                    pid: 42,
                    command: "hugelab bench tlb".into()
                },
                Some(1234)
            ))
        );
        assert_eq!(parse_holder(""), None);
        assert_eq!(parse_holder("x\n"), None);
    }
}
