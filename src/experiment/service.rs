//! The server of a `run --server` trial: started under the arm (its per-process keys, env.*
//! and server.arg words), waited for, read while its load runs (memory of its process tree,
//! its own words about huge pages), stopped after the trial (restart design) or kept for the
//! next burst (warm design), and judged against what the arm expects. A server that does not
//! start, is not ready, dies during the load or crashes fails its trial with its last log lines.

use crate::analyze::flagged::{Judgment, State};
use crate::analyze::server::{judge, said};
use crate::backing::arm::Arm;
use crate::collect::server::{GroupMemory, LoadView, read, tree_cpu_ns};
use crate::model::evidence::{PolicyHeld, ServerEvidence, ServerSaid};
use crate::model::run::ServerPlan;
use crate::workload::child::TrialSpec;
use crate::workload::server::{Ready, Server, ServerEnd, ServerFailure};
use std::time::Duration;

/// A server that is up and ready.
pub struct Running {
    server: Server,
    pub ready: Duration,
    /// The tree's CPU time when the current trial's load started.
    cpu_before: u64,
    /// `--hot`: processes whose referenced bits could not be cleared before this load.
    pub hot_refused: Vec<String>,
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.server.pid()
    }

    /// A load is about to start: its server CPU is counted from here.
    pub fn mark(&mut self) {
        self.cpu_before = tree_cpu_ns(self.server.pid());
    }

    /// Stop it (the warm design's end of a lifetime); how it ended.
    pub fn stop(mut self, grace: Duration) -> ServerEnd {
        self.server.stop(grace)
    }
}

/// What a server trial adds to the load's trial.
pub struct Served {
    pub ready_s: Option<f64>,
    /// The server tree's CPU time during the load, ns (part of the experiment, not noise).
    pub cpu_ns: u64,
    pub failure: Option<String>,
    pub flag: Option<String>,
    /// Whether the memory that matters got the pages asked for (`analyze::flagged`).
    pub backing: Option<Box<Judgment>>,
    pub evidence: Box<ServerEvidence>,
}

fn server_spec(sp: &ServerPlan, arm: &Arm, base: &TrialSpec) -> TrialSpec {
    let mut argv = sp.argv.clone();
    if base.shell {
        let extra: Vec<&str> = arm.process.server_args.iter().map(String::as_str).collect();
        if !extra.is_empty() {
            argv = vec![format!("{} {}", argv.join(" "), extra.join(" "))];
        }
    } else {
        argv.extend(arm.process.server_args.iter().cloned());
    }
    TrialSpec {
        argv,
        shell: base.shell,
        cwd: base.cwd.clone(),
        env: base.env.clone(),
        config: arm.process.clone(),
        timeout: None,
        user: base.user,
        pin_cpu: None,
    }
}

/// Start the arm's server and wait until it is ready.
pub fn start(sp: &ServerPlan, arm: &Arm, base: &TrialSpec) -> Result<Running, Served> {
    let ready = Ready::parse(&sp.ready).expect("checked by the planner");
    let failed = |f: ServerFailure, ready_s: Option<f64>| {
        // Its own words about huge pages, when they explain the failure.
        let words = said(f.log_tail.iter().map(String::as_str))
            .map(|(s, l)| format!("; {} said: {l:?} ({})", s.server, s.meaning))
            .unwrap_or_default();
        Served {
            ready_s,
            cpu_ns: 0,
            failure: Some(format!("{f}{words}")),
            flag: None,
            backing: None,
            evidence: Box::new(ServerEvidence {
                failure: Some(f.what.clone()),
                log_tail: f.log_tail.clone(),
                ..Default::default()
            }),
        }
    };
    if ready.taken() {
        return Err(failed(
            ServerFailure {
                what: format!(
                    "{} already answers before the server started: another process holds the address (stop it, or give the server and --ready another port)",
                    ready.describe()
                ),
                log_tail: Vec::new(),
            },
            None,
        ));
    }
    let server = Server::start(&server_spec(sp, arm, base), &ready).map_err(|e| {
        failed(
            ServerFailure {
                what: format!("the server did not start: {e}"),
                log_tail: Vec::new(),
            },
            None,
        )
    })?;
    let mut server = server;
    let ready_in = match server.wait_ready(&ready, sp.ready_timeout, sp.pidfile.as_deref()) {
        Ok(d) => d,
        Err(f) => {
            server.stop(sp.stop_grace);
            return Err(failed(f, None));
        }
    };
    if let Some(w) = &sp.warmup {
        // As the load runs: same user, directory and environment.
        let spec = TrialSpec {
            argv: vec![w.clone()],
            shell: true,
            ..base.clone()
        };
        let st = crate::workload::child::command(&spec)
            .stdin(std::process::Stdio::null())
            .output();
        let ok = st.as_ref().is_ok_and(|o| o.status.success());
        if !ok {
            let what = match &st {
                Ok(o) => format!(
                    "--server-warmup {w:?} failed ({}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                Err(e) => format!("--server-warmup {w:?}: {e}"),
            };
            let (_, tail) = server.output();
            server.stop(sp.stop_grace);
            return Err(failed(
                ServerFailure {
                    what,
                    log_tail: tail,
                },
                Some(ready_in.as_secs_f64()),
            ));
        }
    }
    let cpu_before = tree_cpu_ns(server.pid());
    Ok(Running {
        server,
        ready: ready_in,
        cpu_before,
        hot_refused: Vec::new(),
    })
}

/// After the load: CPU, memory (read now, before the stop: a shared segment by its own
/// residency) and words of the server, then stop it and judge the arm (the restart design).
/// `view`: what was read while the load ran.
pub fn finish(mut r: Running, sp: &ServerPlan, arm: &Arm, view: LoadView) -> Served {
    let pid = r.server.pid();
    let cpu_ns = tree_cpu_ns(pid).saturating_sub(r.cpu_before);
    let memory = if r.server.exited() {
        GroupMemory::default()
    } else {
        read(pid)
    };
    let end: ServerEnd = r.server.stop(sp.stop_grace);
    served(&r, (arm, sp.hot), (memory, view), end, cpu_ns, pid)
}

/// After a burst of the warm design: CPU, memory and words of the server, which stays up
/// unless it died during the load (then it is stopped and the trial fails).
pub fn observe(r: &mut Running, sp: &ServerPlan, arm: &Arm, view: LoadView) -> Served {
    let pid = r.server.pid();
    let cpu_ns = tree_cpu_ns(pid).saturating_sub(r.cpu_before);
    let (memory, end) = if r.server.exited() {
        (GroupMemory::default(), r.server.stop(sp.stop_grace))
    } else {
        (read(pid), ServerEnd::default())
    };
    served(r, (arm, sp.hot), (memory, view), end, cpu_ns, pid)
}

/// The trial's server evidence and flag from its memory (after the load) and what was read
/// while the load ran.
fn served(
    r: &Running,
    (arm, hot): (&Arm, bool),
    (memory, view): (GroupMemory, LoadView),
    end: ServerEnd,
    cpu_ns: u64,
    pid: i32,
) -> Served {
    let (head, tail) = r.server.output();
    let words = said(head.lines().chain(tail.iter().map(String::as_str)));
    let failure = end.failure();
    let backing = match (arm.server_expectation(), &failure) {
        (Some(e), None) => judge(e, &memory, words.as_ref()).map(Box::new),
        _ => None,
    };
    let policy = match &failure {
        None => crate::analyze::server::policy_held(arm.process.thp_policy(), &memory),
        Some(_) => None,
    };
    let flag = backing
        .as_ref()
        .filter(|j| j.state == State::FellBack)
        .map(|j| j.why.clone())
        .or_else(|| policy.as_ref().and_then(|p| p.clone().err()));
    let evidence = Box::new(ServerEvidence {
        pid: Some(pid),
        ready_s: Some(r.ready.as_secs_f64()),
        cpu_ns,
        coverage: memory.coverage(),
        carried_by: memory.carried_by().map(|s| s.describe()),
        expect: arm.server_expectation(),
        thp_policy: policy.map(|p| match p {
            Ok(words) => PolicyHeld { held: true, words },
            Err(words) => PolicyHeld { held: false, words },
        }),
        said: words.as_ref().map(|(s, l)| ServerSaid {
            server: s.server.into(),
            line: l.clone(),
            meaning: s.meaning.into(),
        }),
        end,
        log_tail: tail.iter().rev().take(20).rev().cloned().collect(),
        // What the load touched: referenced since the bits were cleared before it.
        hot_bytes: (hot && r.hot_refused.is_empty() && memory.processes > 0)
            .then_some(memory.referenced),
        hot_refused: r.hot_refused.clone(),
        memory,
        during_load: view,
        failure: None,
    });
    Served {
        ready_s: Some(r.ready.as_secs_f64()),
        cpu_ns,
        failure,
        flag,
        backing,
        evidence,
    }
}
