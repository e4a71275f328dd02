//! Child commands for `run`: start one trial under a per-process configuration, time it
//! exactly, and return what the kernel says about it. The wall time is taken with
//! CLOCK_MONOTONIC immediately before the spawn and immediately after the kernel reports the
//! exit, which a blocking `poll` on the child's pidfd reports — no timer, no sleeping. Evidence is gathered
//! by [`TrialHooks`] (the collect stage), never on the thread that waits. The [`Runner`] trait
//! is the seam that lets the planner and the block order be tested without starting processes.
//!
//! * this module — a trial's spec and outcome, the [`Runner`] seam, and [`ProcessRunner`]'s
//!   measuring loop (spawn, wait on the pidfd, read the pipes, time out, reap);
//! * `spawn` — what a child is started with: its command (program or shell, directory,
//!   environment, user, own process group), the THP-disable flag and CPU mask it inherits for
//!   one spawn, its pidfd, the monotonic clock;
//! * `output` — the child's stdout and stderr, read on the measuring thread, capped at head and
//!   tail.

pub use crate::model::trial::outcome::{TrialOutcome, signal_name};

mod output;
mod spawn;

pub use spawn::mono_ns;
pub(crate) use spawn::{Inherited, SPAWN_TURN, command, spawn_error};

use crate::backing::arm::ProcessConfig;
use output::{Output, ms_ceil};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

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

    /// Several trials at once (a duet): each started and timed as [`Runner::run`] does, all
    /// released to spawn at the same moment. The default runs them one after another (for a
    /// runner that starts no processes).
    fn run_together(
        &mut self,
        trials: Vec<(&TrialSpec, &mut (dyn TrialHooks + Send))>,
    ) -> Vec<std::io::Result<TrialOutcome>> {
        trials.into_iter().map(|(s, h)| self.run(s, h)).collect()
    }
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

impl Runner for ProcessRunner {
    /// Each trial on a thread of its own, every thread waiting at one barrier before its spawn
    /// (the spawns then take their turns at the THP-flag lock, microseconds apart); each is
    /// waited for and timed on its own thread exactly as a single trial is.
    fn run_together(
        &mut self,
        trials: Vec<(&TrialSpec, &mut (dyn TrialHooks + Send))>,
    ) -> Vec<std::io::Result<TrialOutcome>> {
        let gate = std::sync::Barrier::new(trials.len());
        std::thread::scope(|sc| {
            let threads: Vec<_> = trials
                .into_iter()
                .map(|(spec, hooks)| {
                    let gate = &gate;
                    sc.spawn(move || {
                        gate.wait();
                        ProcessRunner.run(spec, hooks)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| {
                    t.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a trial's thread panicked")))
                })
                .collect()
        })
    }

    fn run(
        &mut self,
        spec: &TrialSpec,
        hooks: &mut dyn TrialHooks,
    ) -> std::io::Result<TrialOutcome> {
        let mut cmd = command(spec);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The THP-disable flag and the CPU mask are inherited at spawn: set on this thread
        // (and process) for the spawn, put back right after. Every arm makes the same calls.
        // The flag is per process, so concurrent spawns (a library user's threads) take turns.
        let turn = SPAWN_TURN.lock().unwrap_or_else(|p| p.into_inner());
        let inherit = Inherited::set(spec.config.thp_policy(), spec.pin_cpu)?;
        let start_mono = mono_ns();
        let start = Instant::now();
        let spawned = cmd.spawn();
        drop(inherit);
        drop(turn);
        let mut child = spawned.map_err(|e| spawn_error(spec, e))?;
        let pid = child.id() as i32;
        let pidfd = match crate::sys::pidfd_open(pid as u32) {
            Ok(fd) => fd,
            Err(e) => {
                // SAFETY: the child is ours and not reaped, so the group id is still ours.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
                let _ = child.wait();
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("pidfd_open: {e} (hugelab needs Linux 5.3 or later to wait exactly)"),
                ));
            }
        };
        crate::control::signals::trial_started(pid);
        hooks.started(pid, start);
        let mut output = Output::new(child.stdout.take(), child.stderr.take());
        let mut o = TrialOutcome::default();
        let deadline = spec.timeout.map(|t| start + t);
        let mut collapse_at = spec.config.collapse_after.map(|d| start + d);
        // One blocking poll on the pidfd (readable at exit) and the two pipes: the exit is
        // timestamped the moment poll returns with it; output and deadlines are served between.
        let end_mono = loop {
            let next = [deadline, collapse_at].into_iter().flatten().min();
            let timeout = next.map_or(-1, |t| ms_ceil(t.saturating_duration_since(Instant::now())));
            let [fo, fe] = output.fds();
            let mut p = [pidfd.as_raw_fd(), fo, fe].map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: `p` is a valid array of pollfd of the length given.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 3, timeout) };
            if p[0].revents != 0 {
                break mono_ns();
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            for (i, q) in p[1..].iter().enumerate() {
                if q.revents != 0 {
                    output.read(i);
                }
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
        o.start_mono_ns = start_mono;
        o.end_mono_ns = end_mono;
        o.wall_ns = end_mono.saturating_sub(start_mono);
        hooks.exited();
        // The group may have members left (daemonized grandchildren): end them while the
        // zombie leader still holds the group id, then reap the leader.
        crate::control::signals::trial_ended(pid);
        // SAFETY: rusage is plain data; all-zero is a valid value.
        let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
        let mut status = 0;
        // SAFETY: the child has exited (its pidfd said so); this reaps it; rusage is valid.
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
        output.drain(Duration::from_secs(2));
        (o.stdout, o.stderr) = output.into_strings();
        std::mem::forget(child); // already reaped by wait4
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use output::OUTPUT_CAP;

    fn spec(argv: &[&str]) -> TrialSpec {
        TrialSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_child_of_known_duration_is_timed_to_well_under_a_millisecond() {
        // `sleep 0.005` and `sleep 0.013` are the same program sleeping 8 ms apart. Each trial
        // also pays exec, a wake-up after the sleep and the exit; load on the machine makes
        // those slower (a woken child waits for a busy CPU), but alike for both, and the
        // fastest of many trials has the least of it. So the difference of the two minimums is
        // the 8 ms slept plus hugelab's own timing error, which must be well under 1 ms. A
        // polling wait (every 25 ms) timed both as ~25 ms: a difference near 0.
        let fastest = |secs: &str| {
            (0..15)
                .map(|_| {
                    ProcessRunner
                        .run(&spec(&["sleep", secs]), &mut NoHooks)
                        .unwrap()
                        .wall_ns
                })
                .min()
                .unwrap() as f64
        };
        let (mut short, mut long) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..2 {
            // Interleaved, so a burst of load falls on both.
            short = short.min(fastest("0.005"));
            long = long.min(fastest("0.013"));
        }
        let diff = long - short;
        assert!(
            (diff - 8e6).abs() < 1e6,
            "min(sleep 0.013) − min(sleep 0.005) = {:.3} ms (min {:.3} and {:.3} ms)",
            diff / 1e6,
            long / 1e6,
            short / 1e6
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
        let mask = || {
            let own = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            own.lines()
                .find(|l| l.starts_with("Cpus_allowed_list"))
                .unwrap()
                .to_string()
        };
        let before = mask();
        let mut s = spec(&["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]);
        s.pin_cpu = Some(0);
        let o = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert!(o.succeeded());
        assert!(o.stdout.trim().ends_with("\t0"), "{:?}", o.stdout);
        // …and only the child's: the spawning thread has its own mask back.
        assert_eq!(mask(), before);
    }

    #[test]
    fn thp_disable_reaches_the_child_and_not_hugelab() {
        let mut s = spec(&["grep", "THP_enabled", "/proc/self/status"]);
        s.config.thp_disable = true;
        let off = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert!(off.stdout.trim().ends_with('0'), "{:?}", off.stdout);
        // SAFETY: PR_GET_THP_DISABLE takes no pointers.
        let flag = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(flag, 0);
        s.config.thp_disable = false;
        let on = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert!(on.stdout.trim().ends_with('1'), "{:?}", on.stdout);
    }

    #[test]
    fn advised_policy_reaches_the_child_and_not_hugelab() {
        if !crate::sys::thp_advised_supported() {
            // An older kernel refuses the flag: spawning must fail loudly, not run the child
            // under another policy.
            let mut s = spec(&["true"]);
            s.config.thp_advised = true;
            assert!(ProcessRunner.run(&s, &mut NoHooks).is_err());
            return;
        }
        // PR_GET_THP_DISABLE in the child: 1 | PR_THP_DISABLE_EXCEPT_ADVISED.
        let mut s = spec(&[
            "python3",
            "-c",
            "import ctypes; print(ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))",
        ]);
        s.config.thp_advised = true;
        let adv = ProcessRunner.run(&s, &mut NoHooks).unwrap();
        assert_eq!(adv.stdout.trim(), "3", "{adv:?}");
        assert_eq!(
            crate::sys::thp_policy().unwrap(),
            crate::sys::ThpPolicy::System
        );
    }

    #[test]
    fn a_number_printed_after_a_huge_log_is_kept() {
        // 6 MiB of noise, then the metric: the head and the tail are kept, the middle dropped.
        let o = ProcessRunner
            .run(
                &spec(&[
                    "sh",
                    "-c",
                    "head -c 6291456 /dev/zero | tr '\\0' x; echo; echo 'score: 42'",
                ]),
                &mut NoHooks,
            )
            .unwrap();
        assert!(
            o.stdout.trim_end().ends_with("score: 42"),
            "{}",
            &o.stdout[o.stdout.len() - 80..]
        );
        assert!(o.stdout.contains("bytes of output dropped here"));
        assert!(o.stdout.len() <= 2 * OUTPUT_CAP + 100);
    }

    #[test]
    fn each_child_leads_its_own_process_group() {
        let o = ProcessRunner
            .run(
                &spec(&["sh", "-c", "echo $$; cut -d' ' -f5 /proc/self/stat"]),
                &mut NoHooks,
            )
            .unwrap();
        let v: Vec<&str> = o.stdout.split_whitespace().collect();
        assert!(v.len() == 2 && v[0] == v[1], "{:?}", o.stdout);
    }
}
