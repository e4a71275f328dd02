//! `hugelab restore`, the recovery every command runs first, and the hidden `hold` used by tests.

use super::{UsageError, print_json};
use crate::control::{self, Guard, Knob, Recovery, Restored, default_journal_path};
use clap::Args;

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Restore a journal whose recorded owner is alive but holds no settings lock (left by a
    /// hugelab older than the lock). A process that holds the lock is never overridden: stop it
    /// (`kill PID`) and it restores its own settings
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub out: crate::options::Json,
}

#[derive(Debug, Args)]
pub struct HoldArgs {
    /// SETTING=VALUE, e.g. thp.enabled=always or hugetlb.2M=4
    #[arg(required = true)]
    pub settings: Vec<String>,
    /// Seconds to hold before restoring by itself
    #[arg(long, default_value_t = 3600)]
    pub seconds: u64,
}
use crate::probe::Root;

fn print_restored(restored: &[Restored]) {
    for r in restored {
        crate::eprintln_safe!("  {}", r.describe());
    }
}

/// Before any command: if a dead hugelab left settings changed, put them back and say so.
pub fn recover_before_command() {
    let path = default_journal_path();
    match control::recover(&Root::system(), &path, false) {
        Ok(Recovery::Restored(r)) => {
            crate::eprintln_safe!(
                "hugelab: an earlier run was interrupted; restored from {}:",
                path.display()
            );
            print_restored(&r);
        }
        Ok(_) => {}
        Err(e) => crate::eprintln_safe!("hugelab: warning: {e}"),
    }
}

#[derive(serde::Serialize)]
struct RestoreJson {
    journal: String,
    status: &'static str,
    owner_pid: Option<u32>,
    owner_command: Option<String>,
    restored: Vec<Restored>,
}

pub fn run(a: RestoreArgs) -> anyhow::Result<i32> {
    let path = default_journal_path();
    // A tmpfs an arm mounted (`tmpfs.huge=`) by a hugelab that was killed.
    crate::backing::tmpfs::sweep();
    let outcome = control::recover(&Root::system(), &path, a.force)?;
    let (status, owner, restored) = match outcome {
        Recovery::Nothing => ("nothing-to-restore", None, vec![]),
        Recovery::OwnerAlive { holder } => ("owner-alive", Some(holder), vec![]),
        Recovery::Restored(r) => ("restored", None, r),
        Recovery::Forced { holder, restored } => ("forced", Some(holder), restored),
    };
    // A live owner's settings are its own to restore: refusing them is not success.
    let failed = status == "owner-alive" || restored.iter().any(|r| r.error.is_some());
    if a.out.json {
        print_json(&RestoreJson {
            journal: path.display().to_string(),
            status,
            owner_pid: owner.as_ref().map(|h| h.pid),
            owner_command: owner.as_ref().map(|h| h.command.clone()),
            restored,
        })?;
    } else {
        match status {
            "nothing-to-restore" => {
                println!("nothing to restore: no journal at {}", path.display())
            }
            "owner-alive" => {
                let h = owner.as_ref().expect("owner-alive names its holder");
                println!(
                    "refused: hugelab ({h}) is running and owns the settings in {}; it restores them when it ends — to end it now, `kill {}` (it restores on SIGTERM)",
                    path.display(),
                    h.pid
                )
            }
            "forced" => {
                let h = owner.as_ref().expect("forced names the recorded owner");
                println!(
                    "restored from {} (--force): its recorded owner, {h}, is alive but holds neither the lock beside the journal nor the kernel-wide one every hugelab takes ({}), so it is a hugelab older than those locks, or another program with a reused pid, and nothing else will restore these settings:",
                    path.display(),
                    control::machine::LOCK_FILE
                );
                for r in &restored {
                    println!("  {}", r.describe());
                }
            }
            _ => {
                println!("restored from {}:", path.display());
                for r in &restored {
                    println!("  {}", r.describe());
                }
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

/// Apply settings through a guard, report, and wait (restoring on exit or signal).
pub fn hold(a: HoldArgs) -> anyhow::Result<i32> {
    let mut guard = Guard::system()?;
    for item in &a.settings {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| UsageError(format!("expected SETTING=VALUE, found {item:?}")))?;
        let knob: Knob = k.parse().map_err(UsageError)?;
        let applied = guard.set(knob, v)?;
        println!(
            "{} = {} (requested {})",
            applied.knob, applied.actual, applied.requested
        );
    }
    println!("holding; journal at {}", guard.journal_path().display());
    std::thread::sleep(std::time::Duration::from_secs(a.seconds));
    drop(guard);
    Ok(0)
}
