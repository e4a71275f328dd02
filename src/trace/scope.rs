//! Which processes a trace keeps, and when they end it.

use super::Request;
use std::collections::BTreeSet;
use std::time::Duration;

/// Which processes a trace keeps.
pub(super) enum Scope {
    All,
    Pid(u32),
    /// The command's process tree, grown by fork events.
    Tree(BTreeSet<u32>),
}

impl Scope {
    pub(super) fn keeps(&self, pid: u32) -> bool {
        match self {
            Scope::All => true,
            Scope::Pid(p) => *p == pid,
            Scope::Tree(s) => s.contains(&pid),
        }
    }

    /// A fork by `parent`: its child joins a command's tree when the parent is in it.
    pub(super) fn forked(&mut self, parent: u32, child: u32) {
        if let Scope::Tree(set) = self
            && set.contains(&parent)
        {
            set.insert(child);
        }
    }

    /// The scope in words: system-wide, a pid and its name, or the command and its children.
    pub(super) fn words(&self, req: &Request) -> String {
        match (self, req.pid) {
            (Scope::All, _) => "system-wide".to_string(),
            (Scope::Pid(_), Some(pid)) => format!(
                "pid {pid} ({})",
                crate::probe::process::comm(pid).unwrap_or_else(|| "?".into())
            ),
            _ => format!("command {:?} and its children", req.command.join(" ")),
        }
    }
}

/// A process that still runs (a zombie has exited, even while its parent has not reaped it).
pub(super) fn alive(pid: u32) -> bool {
    crate::probe::process::Proc::system(pid).alive()
}

/// What is traced: a pid, everything, or a command started now and its tree.
pub(super) fn start(req: &Request) -> anyhow::Result<(Scope, Option<std::process::Child>)> {
    Ok(match (req.pid, req.command.is_empty()) {
        (Some(pid), _) => (Scope::Pid(pid), None),
        (None, true) => (Scope::All, None),
        (None, false) => {
            let mut cmd = std::process::Command::new(&req.command[0]);
            cmd.args(&req.command[1..]);
            if req.command_to_stderr {
                use std::os::fd::AsFd;
                cmd.stdout(std::io::stderr().as_fd().try_clone_to_owned()?);
            }
            let c = cmd
                .spawn()
                .map_err(|e| anyhow::anyhow!("cannot start {:?}: {e}", req.command[0]))?;
            (Scope::Tree(BTreeSet::from([c.id()])), Some(c))
        }
    })
}

/// Why the trace ends now, with the command's exit code when it exited; `None`: it goes on.
pub(super) fn why_ended(
    req: &Request,
    traced: Duration,
    scope: &Scope,
    child: Option<&mut std::process::Child>,
) -> anyhow::Result<Option<(String, Option<i32>)>> {
    let mut ended = None;
    if crate::control::stop_requested() {
        ended = Some((
            "interrupted (Ctrl-C): what was collected is shown".into(),
            None,
        ));
    }
    if let Some(d) = req.duration.filter(|d| traced >= *d) {
        ended = Some((format!("--duration {d:?} reached"), None));
    }
    if let Scope::Pid(pid) = scope
        && !alive(*pid)
    {
        ended = Some((format!("pid {pid} exited: the trace ends with it"), None));
    }
    if let Some(c) = child
        && let Some(st) = c.try_wait()?
    {
        let why = match st.code() {
            Some(c) => format!("the command exited with {c}"),
            None => format!("the command ended: {st}"),
        };
        ended = Some((why, st.code()));
    }
    Ok(ended)
}
