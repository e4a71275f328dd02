//! A server for one trial of `run --server`: started under the arm's per-process configuration
//! in a process group of its own, waited for until ready, then stopped — SIGTERM to the server,
//! a grace period, then SIGKILL of its group and of every descendant that regrouped itself
//! (PostgreSQL's backends call setsid). Its output (stdout and stderr, one pipe) is read on a
//! thread of its own, which also sees a `log:` readiness line the moment it is printed.
//!
//! * this module — the lifecycle: start, wait until ready, follow a daemon, stop;
//! * `ready` — the readiness probes; `log` — the output reader;
//! * `end` — how a server's trial failed and how the server ended;
//! * `tree` — its processes: exit status in words, waiting on pidfds, killing the tree;
//! * `dirs` — each arm's private directory (socket, data copy) in a service run.

pub mod dirs;
mod end;
mod log;
mod ready;
mod tree;

pub use end::{ServerEnd, ServerFailure};
pub use ready::Ready;
pub use tree::kill_tree;

use super::child::{Inherited, SPAWN_TURN, TrialSpec, command, spawn_error};
use crate::sys::pidfd_open;
use log::{Shared, read_log};
use ready::connect_tcp;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tree::{describe_status, describe_wait_status, exited, wait_all_exit};

/// A running server.
pub struct Server {
    pid: i32,
    pidfd: OwnedFd,
    /// A server that daemonized (`--server-pidfile`): the process its pidfile names, followed
    /// once the command that started it has exited 0.
    daemon: Option<(i32, OwnedFd)>,
    /// How the starting command ended, once it was reaped (only when it daemonized).
    leader_status: Option<i32>,
    log: Shared,
    reader: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    stopped: bool,
}

impl Server {
    /// Start `spec` (the arm's configuration applies to it) with its output on a pipe.
    pub fn start(spec: &TrialSpec, ready: &Ready) -> std::io::Result<Server> {
        let mut cmd = command(spec);
        let (reader, writer) = std::io::pipe()?;
        cmd.stdin(std::process::Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer);
        let turn = SPAWN_TURN.lock().unwrap_or_else(|p| p.into_inner());
        let inherit = Inherited::set(spec.config.thp_policy(), spec.pin_cpu)?;
        let started = Instant::now();
        let spawned = cmd.spawn();
        drop(inherit);
        drop(turn);
        drop(cmd); // closes our copies of the pipe's write end
        let child = spawned.map_err(|e| spawn_error(spec, e))?;
        let pid = child.id() as i32;
        std::mem::forget(child); // reaped by `stop` with wait4, which also gives its status
        let pidfd = match pidfd_open(pid as u32) {
            Ok(fd) => fd,
            Err(e) => {
                kill_tree(pid, &crate::probe::process::tree(pid));
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
                return Err(e);
            }
        };
        crate::control::signals::server_started(pid);
        let log: Shared = Arc::default();
        let re = match ready {
            Ready::Log(re) => Some(re.clone()),
            _ => None,
        };
        let shared = log.clone();
        let reader = std::thread::Builder::new()
            .name("hugelab-server-log".into())
            .spawn(move || read_log(reader, re, shared))?;
        Ok(Server {
            pid,
            pidfd,
            daemon: None,
            leader_status: None,
            log,
            reader: Some(reader),
            started,
            stopped: false,
        })
    }

    /// The server's process: the daemon it became, else the process started.
    pub fn pid(&self) -> i32 {
        self.daemon.as_ref().map_or(self.pid, |d| d.0)
    }

    fn pidfd(&self) -> i32 {
        self.daemon
            .as_ref()
            .map_or(self.pidfd.as_raw_fd(), |d| d.1.as_raw_fd())
    }

    /// The starting command exited 0 (it daemonized): reap it and follow the process its
    /// pidfile names, once the file holds a live pid (before `deadline`).
    fn follow(&mut self, pidfile: &std::path::Path, deadline: Instant) -> Result<(), String> {
        let mut status = 0;
        // SAFETY: reaping our own exited child.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
        self.leader_status = Some(status);
        if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err(describe_wait_status(status));
        }
        loop {
            let pid = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|t| t.lines().next()?.trim().parse::<i32>().ok());
            // A pid that has already exited is not the daemon: a previous trial's daemon whose
            // pidfile was left behind is a zombie as long as PID 1 does not reap orphans (seen
            // on this project's VM), and pidfd_open accepts a zombie.
            if let Some(fd) = pid
                .filter(|p| *p > 0)
                .and_then(|p| pidfd_open(p as u32).ok().map(|fd| (p, fd)))
                .filter(|(_, fd)| !exited(fd.as_raw_fd()))
            {
                crate::control::signals::server_started(fd.0);
                self.daemon = Some(fd);
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "exit 0 without a live pid in {} (does the server write it there?)",
                    pidfile.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the server process has exited (it stays a zombie until `stop` reaps it).
    pub fn exited(&self) -> bool {
        exited(self.pidfd())
    }

    /// The head of the output (up to 256 KiB) and its last 200 lines.
    pub fn output(&self) -> (String, Vec<String>) {
        let log = self.log.0.lock().unwrap_or_else(|p| p.into_inner());
        (log.head.clone(), log.tail.iter().cloned().collect())
    }

    /// Wait until the output pipe is at end of file (every writer exited), at most `max`.
    fn wait_log_closed(&self, max: Duration) -> bool {
        let (lock, cv) = &*self.log;
        let log = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (log, _) = cv
            .wait_timeout_while(log, max, |l| !l.closed)
            .unwrap_or_else(|p| p.into_inner());
        log.closed
    }

    fn failure(&self, what: String) -> ServerFailure {
        ServerFailure {
            what,
            log_tail: self.output().1.into_iter().rev().take(10).rev().collect(),
        }
    }

    /// Block until ready or `timeout`; the time from the spawn to ready. With `pidfile`, a
    /// command that exits 0 has daemonized: the process the pidfile names is followed.
    pub fn wait_ready(
        &mut self,
        ready: &Ready,
        timeout: Duration,
        pidfile: Option<&std::path::Path>,
    ) -> Result<Duration, ServerFailure> {
        let deadline = self.started + timeout;
        let died = |s: &Server| {
            // Its last words may still be in the pipe: read them to the end first (a moment;
            // a descendant that escaped could keep the pipe open).
            s.wait_log_closed(Duration::from_secs(1));
            let how = match s.leader_status {
                Some(st) if s.daemon.is_some() => {
                    format!("the daemon exited; {}", describe_wait_status(st))
                }
                Some(st) => describe_wait_status(st),
                None => describe_status(s.pid),
            };
            s.failure(format!("the server exited before it was ready ({how})"))
        };
        loop {
            if let Some(f) = pidfile
                && self.daemon.is_none()
                && self.exited()
            {
                self.follow(f, deadline).map_err(|e| {
                    self.failure(format!(
                        "the server command ended before it was ready ({e})"
                    ))
                })?;
            }
            let now = Instant::now();
            let at = match ready {
                Ready::Log(_) => {
                    let (lock, cv) = &*self.log;
                    let log = lock.lock().unwrap_or_else(|p| p.into_inner());
                    // Woken by the reader at the line; every 20 ms to notice an exit.
                    let (log, _) = cv
                        .wait_timeout_while(log, Duration::from_millis(20), |l| {
                            l.ready_at.is_none() && !l.closed
                        })
                        .unwrap_or_else(|p| p.into_inner());
                    log.ready_at
                }
                Ready::Tcp(a) => connect_tcp(a).then(Instant::now),
                Ready::Unix(p) => std::os::unix::net::UnixStream::connect(p)
                    .is_ok()
                    .then(Instant::now),
                Ready::Cmd(c) => std::process::Command::new("/bin/sh")
                    .arg("-c")
                    .arg(c)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
                    .then(Instant::now),
            };
            if let Some(at) = at {
                // The daemon can answer before its parent's exit is seen (redis-server
                // --daemonize yes forks, and the child may listen first): the command is
                // declared to daemonize, so wait for it to end and follow the daemon, or the
                // command's own exit would later read as the server dying under load.
                if let Some(f) = pidfile
                    && self.daemon.is_none()
                {
                    if !wait_all_exit(&[self.pidfd.as_raw_fd()], deadline) {
                        return Err(self.failure(format!(
                            "the server answered but its command had not exited after {:.1} s; --server-pidfile is for a command that exits once its daemon runs (leave it out for a server that stays in the foreground)",
                            timeout.as_secs_f64()
                        )));
                    }
                    self.follow(f, deadline).map_err(|e| {
                        self.failure(format!("the server command ended without a daemon ({e})"))
                    })?;
                }
                if self.exited() {
                    return Err(died(self));
                }
                return Ok(at.saturating_duration_since(self.started));
            }
            if self.exited() && (pidfile.is_none() || self.daemon.is_some()) {
                return Err(died(self));
            }
            if now >= deadline {
                return Err(self.failure(format!(
                    "the server was not ready after {:.1} s ({}); raise --ready-timeout or check the probe",
                    timeout.as_secs_f64(),
                    ready.describe()
                )));
            }
            if !matches!(ready, Ready::Log(_)) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// SIGTERM, up to `grace` for the exit, then SIGKILL of the group and of every descendant.
    pub fn stop(&mut self, grace: Duration) -> ServerEnd {
        if self.stopped {
            return ServerEnd::default();
        }
        self.stopped = true;
        let mut end = ServerEnd {
            exited_early: self.exited(),
            ..ServerEnd::default()
        };
        // Every process of the tree, each by a pidfd (no pid reuse can confuse the waits).
        let family = crate::probe::process::tree(self.pid());
        let others: Vec<(i32, OwnedFd)> = family
            .iter()
            .skip(1)
            .filter_map(|p| Some((*p, pidfd_open(*p as u32).ok()?)))
            .collect();
        let t0 = Instant::now();
        // SIGTERM to the group (the leader, a wrapping shell and what it started), as a
        // service manager would; workers that left the group are the leader's to stop.
        match &self.daemon {
            // A daemon has a session of its own: it is signalled alone, through its pidfd.
            // SAFETY: pidfd_send_signal to a process we hold a pidfd of.
            Some((_, fd)) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGTERM,
                    0,
                    0,
                );
            },
            // SAFETY: the leader is not reaped: its group id is ours to signal.
            None => unsafe {
                libc::killpg(self.pid, libc::SIGTERM);
            },
        }
        let mut fds: Vec<i32> = vec![self.pidfd()];
        fds.extend(others.iter().map(|(_, fd)| fd.as_raw_fd()));
        if !wait_all_exit(&fds, t0 + grace) {
            end.killed = !self.exited();
            for (_, fd) in &others {
                if !exited(fd.as_raw_fd()) {
                    // SAFETY: pidfd_send_signal to a process we hold a pidfd of.
                    unsafe {
                        libc::syscall(
                            libc::SYS_pidfd_send_signal,
                            fd.as_raw_fd(),
                            libc::SIGKILL,
                            0,
                            0,
                        )
                    };
                    end.orphans_killed += 1;
                }
            }
        }
        if let Some((_, fd)) = &self.daemon {
            if !exited(fd.as_raw_fd()) {
                end.killed = true;
                // SAFETY: pidfd_send_signal to a process we hold a pidfd of.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        libc::SIGKILL,
                        0,
                        0,
                    )
                };
            }
            // Not our child: its exit status is its parent's (init's) to read.
            end.stop_ns = t0.elapsed().as_nanos() as u64;
        } else {
            // SAFETY: the leader is not reaped: its group id is ours to signal.
            unsafe { libc::killpg(self.pid, libc::SIGKILL) };
            let mut status = 0;
            // SAFETY: reaping our own child; blocks until it has exited.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
            end.stop_ns = t0.elapsed().as_nanos() as u64;
            if libc::WIFEXITED(status) {
                end.exit_code = Some(libc::WEXITSTATUS(status));
            } else if libc::WIFSIGNALED(status) {
                end.signal = Some(libc::WTERMSIG(status));
            }
        }
        crate::control::signals::server_stopped(self.pid());
        crate::control::signals::server_stopped(self.pid);
        // The pipe closes once every holder has exited; a grandchild that escaped the tree
        // could keep it open, so the reader is not waited for longer than a moment.
        if let Some(r) = self.reader.take()
            && self.wait_log_closed(Duration::from_secs(2))
        {
            let _ = r.join();
        }
        end
    }
}

impl Drop for Server {
    /// A server left running by an error or a panic is killed with its tree.
    fn drop(&mut self) {
        if !self.stopped {
            self.stop(Duration::ZERO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cmd: &str) -> TrialSpec {
        TrialSpec {
            argv: vec![cmd.to_string()],
            shell: true,
            ..Default::default()
        }
    }

    #[test]
    fn ready_probes_parse_and_reject_what_they_cannot_use() {
        assert!(matches!(
            Ready::parse("tcp:127.0.0.1:6379"),
            Ok(Ready::Tcp(_))
        ));
        assert!(matches!(Ready::parse("unix:/tmp/s"), Ok(Ready::Unix(_))));
        assert!(matches!(
            Ready::parse("cmd:pg_isready -q"),
            Ok(Ready::Cmd(_))
        ));
        assert!(matches!(
            Ready::parse("log:ready (to|for)"),
            Ok(Ready::Log(_))
        ));
        for bad in [
            "tcp:localhost",
            "tcp::80",
            "tcp:h:0",
            "tcp:h:99999",
            "log:(",
            "http:x",
            "x",
            "cmd:",
        ] {
            let e = Ready::parse(bad).err().unwrap_or_default();
            assert!(e.contains("tcp:HOST:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_daemon_that_answers_before_its_command_exits_is_still_followed() {
        // The daemon writes its pid and is ready at once; its starting command exits 0 only
        // 0.3 s later (the race redis-server --daemonize yes runs on a busy machine). The
        // command's exit must not read as the server dying: the daemon is followed.
        let dir = tempfile::tempdir().unwrap();
        let (pidfile, up) = (dir.path().join("d.pid"), dir.path().join("up"));
        let cmd = format!(
            "sh -c 'echo $$ > {p}; touch {u}; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; exit 0",
            p = pidfile.display(),
            u = up.display()
        );
        let ready = Ready::parse(&format!("cmd:test -e {}", up.display())).unwrap();
        let mut s = Server::start(&spec(&cmd), &ready).unwrap();
        s.wait_ready(&ready, Duration::from_secs(10), Some(&pidfile))
            .unwrap();
        let daemon: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(s.pid(), daemon);
        std::thread::sleep(Duration::from_millis(100));
        let end = s.stop(Duration::from_millis(500));
        assert!(!end.exited_early, "{end:?}");
        assert!(end.failure().is_none(), "{:?}", end.failure());
    }

    #[test]
    fn a_log_line_makes_it_ready_and_stop_ends_the_whole_tree() {
        let ready = Ready::parse("log:^listening$").unwrap();
        // A server that forks a worker into a session of its own (as PostgreSQL's backends do)
        // and ignores nothing: SIGTERM ends the leader, the worker is killed as an orphan.
        let mut s = Server::start(
            &spec("setsid sleep 300 & sleep 0.2; echo listening; exec sleep 300"),
            &ready,
        )
        .unwrap();
        let t = s.wait_ready(&ready, Duration::from_secs(10), None).unwrap();
        assert!(t >= Duration::from_millis(200), "{t:?}");
        let family = crate::probe::process::tree(s.pid());
        assert!(family.len() >= 2, "{family:?}");
        // The worker in its own session does not get the group's SIGTERM: it outlives the
        // grace period and is killed as an orphan.
        let end = s.stop(Duration::from_millis(500));
        assert!(!end.exited_early && !end.killed, "{end:?}");
        assert_eq!(end.orphans_killed, 1, "{end:?}");
        assert_eq!(end.signal, Some(libc::SIGTERM));
        assert!(end.failure().is_none());
        std::thread::sleep(Duration::from_millis(50));
        for p in family {
            // Gone, or a zombie waiting for init to reap it.
            let state = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|t| t[t.rfind(')')? + 2..].chars().next());
            assert!(
                matches!(state, None | Some('Z')),
                "pid {p} left running: {state:?}"
            );
        }
    }

    #[test]
    fn a_server_that_dies_or_never_gets_ready_fails_with_its_words() {
        let ready = Ready::parse("log:never printed").unwrap();
        let mut s = Server::start(&spec("echo 'FATAL: port in use' >&2; exit 3"), &ready).unwrap();
        let e = s
            .wait_ready(&ready, Duration::from_secs(10), None)
            .unwrap_err();
        assert!(
            e.what.contains("exited before it was ready (exit 3)"),
            "{e}"
        );
        assert!(e.to_string().contains("FATAL: port in use"), "{e}");
        let end = s.stop(Duration::from_secs(1));
        assert!(end.exited_early && end.exit_code == Some(3));
        let mut s = Server::start(&spec("trap '' TERM; echo up; exec sleep 300"), &ready).unwrap();
        let e = s
            .wait_ready(&ready, Duration::from_millis(300), None)
            .unwrap_err();
        assert!(e.what.contains("not ready after 0.3 s"), "{e}");
        // It ignores SIGTERM: killed after the grace period.
        let end = s.stop(Duration::from_millis(200));
        assert!(end.killed && end.signal == Some(libc::SIGKILL), "{end:?}");
    }

    proptest::proptest! {
        #[test]
        fn readiness_probes_never_panic(s in ".{0,60}", port in "[-0-9a-z]{0,8}") {
            let _ = Ready::parse(&s);
            let _ = Ready::parse(&format!("tcp:localhost:{port}"));
            let _ = Ready::parse(&format!("log:{s}"));
        }
    }
}
