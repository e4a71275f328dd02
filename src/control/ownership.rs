//! Taking the machine's settings for a process: as their one owner (to change them) or as a
//! reader (to measure under them as they are), through the kernel-wide lock (`machine`) and
//! the journal's lock (`owner`), with a dead owner's changes restored first.

use super::{Contended, Holder, Restored, restore_changes, say};
use super::{
    Journal, MachineLock, Mode, Owner, Root, SysfsSettings, default_journal_path, machine,
};
use crate::error::ControlError;
use std::path::Path;

/// Become the one owner of the live machine's settings: the kernel-wide lock exclusive
/// ([`machine`]), then the lock beside the default journal. Refused while another hugelab
/// changes settings, or, with `wait`, after it lets go; hugelabs that only measure under the
/// settings are waited for (they end by themselves). Each wait is said on stderr once, naming
/// whom it waits for. A journal a dead owner left is restored at once, under the lock, so that
/// what is planned next reads the machine's own values.
pub fn own_settings(wait: bool) -> Result<std::sync::Arc<Owner>, ControlError> {
    own(wait, " (--wait-for-settings)")
}

/// Own the machine for actions on the whole of it that change no setting (`--drop-caches`,
/// `--compact`): as [`own_settings`], but waiting for another owner rather than refused.
/// An applier holds its settings until stopped, so it is not waited for: refused at once.
pub fn own_for_actions() -> Result<std::sync::Arc<Owner>, ControlError> {
    let gate = pass_gate(Mode::Read, false)?;
    own_past(
        gate,
        true,
        ": dropping caches and compacting memory act on the whole machine, so they wait for its owner",
    )
}

/// [`own_settings`], saying `why` after a wait for another owner. The gate is passed first: an
/// applier that holds it closed refuses this at once (exit 2), naming it, or, with `wait`,
/// is waited for (it holds its settings until it is stopped).
fn own(wait: bool, why: &str) -> Result<std::sync::Arc<Owner>, ControlError> {
    let gate = pass_gate(Mode::Read, wait)?;
    own_past(gate, wait, why)
}

/// Become the owner as an applier (`hugelab apply`): the gate closed for the applier's life
/// (refused at once while another process has passed it or holds it closed, or waiting for
/// them with `wait`), then the machine lock exclusive. Once its settings are in place,
/// [`Owner::share_settings`] lets measurements that change nothing run under them.
pub fn own_to_apply(wait: bool) -> Result<std::sync::Arc<Owner>, ControlError> {
    let gate = pass_gate(Mode::Write, wait)?;
    own_past(gate, wait, " (--wait-for-settings)")
}

/// The gate in `mode` (None where the kernel has no file for it): a closed gate is an applier's,
/// refused or waited for as `wait` says, naming it.
fn pass_gate(mode: Mode, wait: bool) -> Result<Option<machine::Gate>, ControlError> {
    let path = Path::new(machine::GATE_FILE);
    if !path.exists() {
        return Ok(None);
    }
    machine::Gate::acquire(path, mode, &mut |others| {
        if !wait {
            return Contended::Refuse;
        }
        let whom = others
            .iter()
            .map(|s| s.holder.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        say(&match mode {
            Mode::Read => format!(
                "hugelab: waiting for {whom}, which holds the settings it applied until it is stopped (--wait-for-settings)"
            ),
            Mode::Write => format!(
                "hugelab: waiting for {whom} to finish before applying (--wait-for-settings)"
            ),
        });
        Contended::Wait
    })
    .map(Some)
}

/// [`own`] after the gate: the machine lock exclusive, holding `gate` as long, then the
/// journal's lock.
fn own_past(
    gate: Option<machine::Gate>,
    wait: bool,
    why: &str,
) -> Result<std::sync::Arc<Owner>, ControlError> {
    let contended = if wait {
        Contended::Wait
    } else {
        Contended::Refuse
    };
    let mut machine = lock_machine(Mode::Write, wait, why)?;
    if let (Some(m), Some(g)) = (machine.as_mut(), gate) {
        m.hold_gate(g);
    }
    let owner = Owner::acquire_with(
        &default_journal_path(),
        contended,
        &mut |holder| {
            say(&format!(
                "hugelab: waiting for {} to restore the settings it changed{why}",
                holder.map_or_else(|| "another hugelab".to_string(), |h| h.to_string())
            ))
        },
        machine,
    )?;
    restore_dead(owner.journal_path());
    Ok(owner)
}

/// The settings an applier (`hugelab apply`) holds on this machine now, for the answer of a
/// measurement that runs under them: who holds them and each value its journal changed, as
/// the kernel reads now. None when no applier holds the gate.
pub fn applied() -> Option<String> {
    let holder = machine::gate_closer(Path::new(machine::GATE_FILE))?;
    let settings = SysfsSettings::new(Root::system());
    let values: Vec<String> = Journal::load(&default_journal_path())
        .ok()
        .flatten()
        .filter(|j| holder.pid == 0 || j.owner_pid == holder.pid)
        .map(|j| {
            j.changes
                .iter()
                .map(|c| {
                    use super::Settings;
                    let now = settings.read(&c.knob).unwrap_or_else(|e| e.to_string());
                    format!("{} = {now} (was {})", c.knob, c.original)
                })
                .collect()
        })
        .unwrap_or_default();
    let what = match values.is_empty() {
        true => "no setting changed".to_string(),
        false => values.join(", "),
    };
    Some(format!(
        "measured under the settings {holder} applies and holds (they cannot change while it runs): {what}"
    ))
}

/// Hold the live machine's settings as they are for a measurement that changes none: the
/// kernel-wide lock shared, so no hugelab changes a setting under it (one that does is waited
/// for, and waits for this in turn). A journal a dead owner left is restored first, so the
/// measurement is of the machine's own settings. None where the kernel has no THP file to
/// lock (no other hugelab can change THP there either).
pub fn read_settings() -> Result<Option<MachineLock>, ControlError> {
    let path = default_journal_path();
    if Journal::load(&path)
        .ok()
        .flatten()
        .is_some_and(|j| !j.owner_alive())
    {
        // Restoring the dead owner's journal is a write: it waits for any live writer.
        drop(own(
            true,
            ": a dead hugelab's changes are restored first, so this run measures the machine's own settings",
        )?);
    }
    lock_machine(Mode::Read, true, "")
}

/// The kernel-wide lock in `mode`; None without the file. A writer meeting a writer refuses
/// unless `wait`; every other meeting waits, saying for whom.
fn lock_machine(mode: Mode, wait: bool, why: &str) -> Result<Option<MachineLock>, ControlError> {
    let path = std::path::Path::new(machine::LOCK_FILE);
    if !path.exists() {
        return Ok(None);
    }
    // A reader told to wait at the turnstile, then at the lock, for the same writer says so once.
    let mut said = String::new();
    MachineLock::acquire(path, mode, &mut |others| {
        let writer = others.iter().find(|s| s.mode == Mode::Write);
        if mode == Mode::Write && writer.is_some() && !wait {
            return Contended::Refuse;
        }
        let whom = match writer {
            Some(w) => w.to_string(),
            None if others.is_empty() => "another hugelab".to_string(),
            None => others
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        };
        let line = match (mode, writer.is_some()) {
            (Mode::Write, true) => format!(
                "hugelab: waiting for {whom} to restore the settings it changed{why}"
            ),
            (Mode::Write, false) => format!(
                "hugelab: waiting for {whom} to finish before changing any setting"
            ),
            (Mode::Read, _) => format!(
                "hugelab: waiting for {whom} to restore them: this run measures under the machine's own settings"
            ),
        };
        if line != said {
            say(&line);
            said = line;
        }
        Contended::Wait
    })
    .map(Some)
}

/// Put back what a dead owner's journal at `path` recorded (its process is gone: no lock
/// protects its changes any more), said line by line; a journal whose recorded owner is alive
/// (a hugelab that journals without the lock) is left for the guard to refuse.
fn restore_dead(path: &std::path::Path) {
    let Ok(Some(j)) = Journal::load(path) else {
        return;
    };
    if j.owner_alive() {
        return;
    }
    let restored = restore_changes(&SysfsSettings::new(Root::system()), &j.changes);
    for r in &restored {
        say(&format!(
            "hugelab: pid {} ended without restoring what it changed; restored {}",
            j.owner_pid,
            r.describe()
        ));
    }
    if super::settled(&restored) {
        let _ = std::fs::remove_file(path);
    }
}

/// How a command waits for another hugelab to restore a dead owner's journal: a look every
/// 10 ms, at most 1,000 of them (10 s), said once after 100 (a second).
const RESTORER_POLL: std::time::Duration = std::time::Duration::from_millis(10);
const RESTORER_POLLS: u32 = 1000;
const RESTORER_SAID_AFTER: u32 = 100;

/// A journal whose recorded owner is dead while another process holds its lock is being
/// restored by that process (its own recovery, or a new owner's first step, which restores
/// before it changes anything): wait until it has, for at most [`RESTORER_POLLS`] looks, so
/// that a command that runs after a crash runs on the restored settings even when another
/// hugelab met the journal first. A holder that cannot restore (its writes fail) leaves the
/// journal, and this gives up, leaving it to `hugelab restore`.
fn wait_for_restorer(journal_path: &Path) {
    for look in 0..RESTORER_POLLS {
        let Some(holder) = Owner::holder(journal_path) else {
            return;
        };
        let dead = Journal::load(journal_path)
            .ok()
            .flatten()
            .is_some_and(|j| !j.owner_alive());
        if !dead {
            return;
        }
        if look == RESTORER_SAID_AFTER {
            say(&format!(
                "hugelab: waiting for {holder} to restore the settings a dead hugelab left changed"
            ));
        }
        std::thread::sleep(RESTORER_POLL);
    }
}

/// Outcome of looking for a leftover journal.
#[derive(Debug)]
pub enum Recovery {
    Nothing,
    /// Another hugelab process is alive and owns the settings (and the journal).
    OwnerAlive {
        holder: Holder,
    },
    Restored(Vec<Restored>),
    /// `--force`: the journal's recorded owner is alive but holds no lock of hugelab's (neither
    /// the one beside the journal nor the kernel-wide one): an older hugelab, whose changes
    /// nothing else restores. Restored all the same; it is named.
    Forced {
        holder: Holder,
        restored: Vec<Restored>,
    },
}

/// Restore a journal left by a dead hugelab, under the settings lock. A live owner's journal
/// is never touched: while a process holds the lock, or a live process is the journal's
/// recorded owner (unless `force`: a journal that no lock protects), it is refused.
pub fn recover(root: &Root, journal_path: &Path, force: bool) -> Result<Recovery, ControlError> {
    wait_for_restorer(journal_path);
    // An owner that has not written its journal yet owns the settings all the same.
    if let Some(holder) = Owner::holder(journal_path) {
        return Ok(Recovery::OwnerAlive { holder });
    }
    if Journal::load(journal_path)?.is_none() {
        return Ok(Recovery::Nothing);
    }
    let Some(_owner) = Owner::try_acquire(journal_path)? else {
        let holder = Owner::holder(journal_path).unwrap_or(Holder {
            pid: 0,
            command: "unknown".into(),
        });
        return Ok(Recovery::OwnerAlive { holder });
    };
    // Read again under the lock: the owner may have finished in between.
    let Some(j) = Journal::load(journal_path)? else {
        return Ok(Recovery::Nothing);
    };
    let alive = j.owner_alive() && j.owner_pid != std::process::id();
    let holder = Holder {
        pid: j.owner_pid,
        command: crate::probe::process::Proc::system(j.owner_pid)
            .cmdline()
            .join(" "),
    };
    // A live owner that holds the kernel-wide lock is a current hugelab (journaling elsewhere
    // meanwhile, or about to): never overridden, --force or not.
    let locked = || {
        machine::holders(std::path::Path::new(machine::LOCK_FILE))
            .iter()
            .any(|s| s.holder.pid == j.owner_pid)
    };
    if alive && (!force || locked()) {
        return Ok(Recovery::OwnerAlive { holder });
    }
    let restored = restore_changes(&SysfsSettings::new(root.clone()), &j.changes);
    if super::settled(&restored) {
        std::fs::remove_file(journal_path).map_err(|e| ControlError::Journal {
            path: journal_path.to_path_buf(),
            message: format!("restored, but could not remove the journal: {e}"),
        })?;
    }
    Ok(match alive {
        true => Recovery::Forced { holder, restored },
        false => Recovery::Restored(restored),
    })
}
