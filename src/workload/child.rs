//! Child commands for `run`: start one trial under a per-process configuration, time it
//! exactly, and return what the kernel says about it. The wall time is taken with
//! CLOCK_MONOTONIC immediately before the spawn and immediately after the kernel reports the
//! exit, on a waiter thread blocked in `waitid` — no polling, no sleeping. Evidence is gathered
//! by [`TrialHooks`] (the collect stage), never on the thread that waits. The [`Runner`] trait
//! is the seam that lets the planner and the block order be tested without starting processes.

use crate::backing::arm::ProcessConfig;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Keep at most this much of each output stream (the head: metrics are usually printed once).
const OUTPUT_CAP: usize = 4 << 20;

#[derive(Debug, Clone, Default)]
pub struct TrialSpec {
    pub argv: Vec<String>,
    pub shell: bool,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub config: ProcessConfig,
    pub timeout: Option<Duration>,
    /// Run as this uid/gid (root only).
    pub user: Option<(u32, u32)>,
    /// Run the child on this CPU only (sched_setaffinity before exec).
    pub pin_cpu: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialOutcome {
    /// CLOCK_MONOTONIC just before the spawn and just after the exit was reported, ns.
    #[serde(default)]
    pub start_mono_ns: u64,
    #[serde(default)]
    pub end_mono_ns: u64,
    pub wall_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub max_rss_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by `--timeout` (its process group first): a failed trial.
    pub timed_out: bool,
    /// What the delayed MADV_COLLAPSE did, if the arm asked for it.
    pub collapse: Option<String>,
    #[serde(skip)]
    pub stdout: String,
    #[serde(skip)]
    pub stderr: String,
}

impl TrialOutcome {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Evidence gatherers around a trial (implemented in the collect stage). Both calls happen on
/// the runner's thread, never on the waiter that takes the end timestamp.
pub trait TrialHooks {
    /// The child `pid` (also its process group id) was started at `start`.
    fn started(&mut self, pid: i32, start: Instant);
    /// The child has exited (the end timestamp is taken) and is not yet reaped, so the
    /// process group id cannot have been reused.
    fn exited(&mut self);
}

/// Hooks that gather nothing.
pub struct NoHooks;

impl TrialHooks for NoHooks {
    fn started(&mut self, _: i32, _: Instant) {}
    fn exited(&mut self) {}
}

pub trait Runner {
    fn run(
        &mut self,
        spec: &TrialSpec,
        hooks: &mut dyn TrialHooks,
    ) -> std::io::Result<TrialOutcome>;
}

/// Starts real processes.
pub struct ProcessRunner;

/// MADV_COLLAPSE every eligible anonymous mapping of the group's members; a one-line account.
fn collapse_group(pgid: i32) -> String {
    crate::probe::process::group_members(pgid)
        .iter()
        .map(|m| crate::backing::collapse::collapse_pid(*m).summary())
        .collect::<Vec<_>>()
        .join("; ")
}

fn reader(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) if buf.len() < OUTPUT_CAP => {
                    buf.extend_from_slice(&chunk[..n.min(OUTPUT_CAP - buf.len())])
                }
                Ok(_) => {} // keep draining so the child never blocks on a full pipe
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// CLOCK_MONOTONIC now, ns (the clock of `Instant`, and of `time.monotonic_ns()` in a child).
pub fn mono_ns() -> u64 {
    // SAFETY: a zeroed timespec is a valid out-parameter for clock_gettime.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: CLOCK_MONOTONIC always exists; the pointer is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Block until `pid` has exited without reaping it (so its process group id stays reserved
/// until we reap it), and take the end timestamp at once.
fn wait_exited(pid: i32) -> std::io::Result<(Instant, u64)> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; WNOWAIT leaves the child a zombie.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child with a valid siginfo pointer.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        let end = (Instant::now(), mono_ns());
        if r == 0 {
            return Ok(end);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Runner for ProcessRunner {
    fn run(
        &mut self,
        spec: &TrialSpec,
        hooks: &mut dyn TrialHooks,
    ) -> std::io::Result<TrialOutcome> {
        let mut cmd = if spec.shell {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(spec.argv.join(" "));
            c
        } else {
            let mut c = Command::new(&spec.argv[0]);
            c.args(&spec.argv[1..]);
            c
        };
        if let Some(d) = &spec.cwd {
            cmd.current_dir(d);
        }
        cmd.envs(spec.env.iter().cloned())
            .envs(spec.config.environment());
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let thp_disable = spec.config.thp_disable;
        let user = spec.user;
        let pin = spec.pin_cpu;
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (setpgid, prctl, sched_setaffinity, setgroups, setgid, setuid) on values
        // computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if thp_disable && libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(cpu) = pin {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some((uid, gid)) = user
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let start_mono = mono_ns();
        let start = Instant::now();
        let spawned = cmd.spawn();
        let mut child = spawned.map_err(|e| {
            let what = if spec.shell {
                "/bin/sh".to_string()
            } else {
                spec.argv[0].clone()
            };
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot start {what:?}: {e}{}",
                    if e.kind() == std::io::ErrorKind::NotFound {
                        " (not found: give a path, or check PATH; use --shell for shell syntax)"
                    } else {
                        ""
                    }
                ),
            )
        })?;
        let pid = child.id() as i32;
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _ = tx.send(wait_exited(pid));
        });
        crate::control::signals::trial_started(pid);
        hooks.started(pid, start);
        let out = reader(child.stdout.take().expect("piped"));
        let err = reader(child.stderr.take().expect("piped"));
        let mut o = TrialOutcome::default();
        let deadline = spec.timeout.map(|t| start + t);
        let mut collapse_at = spec.config.collapse_after.map(|d| start + d);
        let end = loop {
            let next = [deadline, collapse_at].into_iter().flatten().min();
            let got = match next {
                Some(t) => rx.recv_timeout(t.saturating_duration_since(Instant::now())),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            };
            match got {
                Ok(r) => break r,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(std::io::Error::other("the waiter thread ended early"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            if collapse_at.is_some_and(|t| now >= t) {
                collapse_at = None;
                o.collapse = Some(collapse_group(pid));
            }
            if deadline.is_some_and(|t| now >= t) && !o.timed_out {
                o.timed_out = true;
                // SAFETY: the leader is not reaped yet, so the group id is still ours.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
            }
        };
        let _ = waiter.join();
        let (_, end_mono) = end?;
        o.start_mono_ns = start_mono;
        o.end_mono_ns = end_mono;
        o.wall_ns = end_mono.saturating_sub(start_mono);
        hooks.exited();
        // The group may have members left (daemonized grandchildren): end them while the
        // zombie leader still holds the group id, then reap the leader.
        crate::control::signals::trial_ended(pid);
        let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
        let mut status = 0;
        // SAFETY: the child has exited (waitid said so); this reaps it; rusage is valid.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut rusage) };
        if r != pid {
            return Err(std::io::Error::last_os_error());
        }
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        o.user_ns = tv(rusage.ru_utime);
        o.sys_ns = tv(rusage.ru_stime);
        o.max_rss_bytes = rusage.ru_maxrss as u64 * 1024;
        o.minor_faults = rusage.ru_minflt as u64;
        o.major_faults = rusage.ru_majflt as u64;
        if libc::WIFEXITED(status) {
            o.exit_code = Some(libc::WEXITSTATUS(status));
        } else if libc::WIFSIGNALED(status) {
            o.signal = Some(libc::WTERMSIG(status));
        }
        o.stdout = out.join().unwrap_or_default();
        o.stderr = err.join().unwrap_or_default();
        std::mem::forget(child); // already reaped by wait4
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> TrialSpec {
        TrialSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_child_of_known_duration_is_timed_to_well_under_a_millisecond() {
        // `sleep 0.013` and `sleep 0` are the same small program; interleaved, the difference
        // of their median wall times is the 13 ms slept, give or take well under a millisecond.
        // A polling wait (every 25 ms) timed both as ~25 ms: a difference near 0.
        let (mut long, mut zero) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            zero.push(
                ProcessRunner
                    .run(&spec(&["sleep", "0"]), &mut NoHooks)
                    .unwrap()
                    .wall_ns,
            );
            long.push(
                ProcessRunner
                    .run(&spec(&["sleep", "0.013"]), &mut NoHooks)
                    .unwrap()
                    .wall_ns,
            );
        }
        long.sort_unstable();
        zero.sort_unstable();
        let diff = long[4] as f64 - zero[4] as f64;
        assert!(
            (diff - 13e6).abs() < 1e6,
            "median(sleep 0.013) − median(sleep 0) = {:.3} ms; sleep 0: {zero:?}",
            diff / 1e6
        );
    }

    #[test]
    fn the_timed_span_brackets_the_childs_own_clock() {
        // The child reads CLOCK_MONOTONIC (the runner's clock) as it starts its work and just
        // before it exits: the runner's start precedes the first read, its end follows the last.
        let code = "import time,os,sys\na=time.monotonic_ns();time.sleep(0.013)\nsys.stdout.write(f'{a} {time.monotonic_ns()}');sys.stdout.flush();os._exit(0)";
        let o = ProcessRunner
            .run(&spec(&["python3", "-c", code]), &mut NoHooks)
            .unwrap();
        let v: Vec<u64> = o.stdout.split(' ').map(|x| x.parse().unwrap()).collect();
        assert!(
            o.start_mono_ns <= v[0] && v[1] <= o.end_mono_ns,
            "{o:?} {v:?}"
        );
        assert!(v[1] - v[0] >= 13_000_000);
        assert_eq!(o.wall_ns, o.end_mono_ns - o.start_mono_ns);
    }

    #[test]
    fn timeout_kills_the_group_and_is_a_failed_trial() {
        let mut s = spec(&["sh", "-c", "sleep 30 & sleep 30"]);
        s.timeout = Some(Duration::from_millis(200));
        let o = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert!(o.timed_out && !o.succeeded());
        assert_eq!(o.signal, Some(libc::SIGKILL));
        // The background sleep was in the group and is gone too: the pipes closed, so the
        // readers finished (the run returned at all), and no `sleep 30` of ours is left.
        assert!(o.wall_ns < 30_000_000_000);
    }

    #[test]
    fn pinning_sets_the_childs_affinity() {
        let mut s = spec(&["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]);
        s.pin_cpu = Some(0);
        let o = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert!(o.succeeded());
        assert!(o.stdout.trim().ends_with("\t0"), "{:?}", o.stdout);
    }
}
