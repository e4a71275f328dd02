//! Child commands for `run`: start one trial under a per-process configuration, sample its
//! memory while it runs, and return everything measured. The [`Runner`] trait is the seam that
//! lets the planner and the block order be tested without starting processes.

use crate::backing::arm::ProcessConfig;
use crate::probe::process::parse_rollup;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Keep at most this much of each output stream (the head: metrics are usually printed once).
const OUTPUT_CAP: usize = 4 << 20;
const SAMPLE_EVERY: Duration = Duration::from_millis(25);

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
}

/// Memory of the child's process group over its life (smaps_rollup of every member).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemorySamples {
    pub samples: u64,
    pub peak_rss: u64,
    pub peak_anon_huge: u64,
    pub peak_hugetlb: u64,
    /// Time-weighted mean of (AnonHugePages + hugetlb) / (Rss + hugetlb).
    pub mean_huge_coverage: Option<f64>,
    /// Huge coverage at the sample with the largest resident memory.
    pub coverage_at_peak: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialOutcome {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub max_rss_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub interrupted: bool,
    pub memory: MemorySamples,
    /// What the delayed MADV_COLLAPSE did, if the arm asked for it.
    pub collapse: Option<String>,
    /// perf counts for the child and its descendants (from just after it started).
    pub perf: BTreeMap<crate::probe::pmu::PerfEvent, u64>,
    /// perf events that could not be opened, with the reason.
    pub perf_unavailable: Vec<String>,
    #[serde(skip)]
    pub stdout: String,
    #[serde(skip)]
    pub stderr: String,
}

impl TrialOutcome {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.interrupted
    }
}

pub trait Runner {
    fn run(&mut self, spec: &TrialSpec, stop: &AtomicBool) -> std::io::Result<TrialOutcome>;
}

/// Starts real processes.
pub struct ProcessRunner {
    pub cpu: crate::probe::cpu::Cpu,
}

/// Counted for every trial where the kernel allows: faults always, TLB and cycles with a PMU.
const CHILD_EVENTS: [crate::probe::pmu::PerfEvent; 4] = [
    crate::probe::pmu::PerfEvent::PageFaults,
    crate::probe::pmu::PerfEvent::DtlbLoadMisses,
    crate::probe::pmu::PerfEvent::Cycles,
    crate::probe::pmu::PerfEvent::DtlbWalkCycles,
];

fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rfind(')')
                        .and_then(|i| s[i + 1..].split_whitespace().nth(2)?.parse::<i32>().ok())
                })
                == Some(pgid)
        })
        .collect()
}

/// (Rss, AnonHugePages, hugetlb) summed over the processes.
fn sample(pids: &[i32]) -> (u64, u64, u64) {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok())
        .filter_map(|t| parse_rollup(&t).ok())
        .fold((0, 0, 0), |(r, a, h), m| {
            let g = |k: &str| m.get(k).copied().unwrap_or(0);
            (
                r + g("Rss"),
                a + g("AnonHugePages"),
                h + g("Private_Hugetlb") + g("Shared_Hugetlb"),
            )
        })
}

/// MADV_COLLAPSE every eligible anonymous mapping of `pid`; a one-line account.
pub fn collapse_pid(pid: i32) -> String {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return format!("pid {pid} exited before the collapse");
    };
    let Ok(maps) = crate::probe::process::parse_smaps(&text) else {
        return "unreadable smaps".into();
    };
    let pidfd = match crate::sys::pidfd_open(pid as u32) {
        Ok(f) => f,
        Err(e) => return format!("pidfd_open failed: {e}"),
    };
    let (mut ok, mut bytes, mut errors) = (0, 0u64, BTreeMap::<String, u32>::new());
    for m in maps.iter().filter(|m| {
        m.path.is_empty() && m.perms.starts_with("rw") && m.field("Rss") > 0 && m.size() >= 2 << 20
    }) {
        match crate::sys::process_madvise(&pidfd, m.start, m.size(), crate::sys::MADV_COLLAPSE) {
            Ok(_) => {
                ok += 1;
                bytes += m.size();
            }
            Err(e) => *errors.entry(e.to_string()).or_insert(0) += 1,
        }
    }
    let errs: Vec<String> = errors
        .into_iter()
        .map(|(e, n)| format!("{n}× {e}"))
        .collect();
    format!(
        "collapsed {ok} mappings ({} MiB){}",
        bytes >> 20,
        if errs.is_empty() {
            String::new()
        } else {
            format!("; failed: {}", errs.join(", "))
        }
    )
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

impl Runner for ProcessRunner {
    fn run(&mut self, spec: &TrialSpec, stop: &AtomicBool) -> std::io::Result<TrialOutcome> {
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
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (setpgid, prctl, setgroups, setgid, setuid).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if thp_disable && libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
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
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|e| {
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
        // Opened just after the exec; inherit follows the children it starts from now on.
        let mut counters =
            crate::collect::perf::Counters::open_for(&CHILD_EVENTS, &self.cpu, true, Some(pid));
        counters.start();
        let out = reader(child.stdout.take().expect("piped"));
        let err = reader(child.stderr.take().expect("piped"));
        let mut o = TrialOutcome::default();
        let (mut weighted, mut weight) = (0.0f64, 0.0f64);
        let mut last = Instant::now();
        let mut members = vec![pid];
        let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
        let mut status = 0;
        let mut rounds = 0u64;
        loop {
            // SAFETY: reaping our own child; rusage is a valid out-parameter.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut rusage) };
            if r == pid {
                break;
            }
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if rounds.is_multiple_of(4) {
                members = group_members(pid);
            }
            rounds += 1;
            let (rss, anon, htlb) = sample(&members);
            let resident = rss + htlb;
            if resident > 0 {
                let cov = (anon + htlb) as f64 / resident as f64;
                let dt = last.elapsed().as_secs_f64();
                weighted += cov * dt;
                weight += dt;
                o.memory.samples += 1;
                if resident > o.memory.peak_rss {
                    o.memory.peak_rss = resident;
                    o.memory.coverage_at_peak = Some(cov);
                }
                o.memory.peak_anon_huge = o.memory.peak_anon_huge.max(anon);
                o.memory.peak_hugetlb = o.memory.peak_hugetlb.max(htlb);
            }
            last = Instant::now();
            if let Some(after) = spec.config.collapse_after
                && o.collapse.is_none()
                && start.elapsed() >= after
            {
                o.collapse = Some(
                    members
                        .iter()
                        .map(|m| collapse_pid(*m))
                        .collect::<Vec<_>>()
                        .join("; "),
                );
            }
            let timed_out = spec.timeout.is_some_and(|t| start.elapsed() >= t);
            if timed_out || stop.load(Ordering::Relaxed) {
                o.timed_out = timed_out;
                o.interrupted = !timed_out;
                // SAFETY: signalling the child's own process group.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
        o.wall_ns = start.elapsed().as_nanos() as u64;
        o.perf = counters.stop();
        o.perf_unavailable = counters
            .unavailable
            .iter()
            .map(|(e, why)| format!("{}: {why}", e.name()))
            .collect();
        // SAFETY: the group may have members left (daemonized grandchildren); end them too.
        unsafe { libc::killpg(pid, libc::SIGKILL) };
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
        if weight > 0.0 {
            o.memory.mean_huge_coverage = Some(weighted / weight);
        }
        o.stdout = out.join().unwrap_or_default();
        o.stderr = err.join().unwrap_or_default();
        std::mem::forget(child); // already reaped by wait4
        Ok(o)
    }
}

/// A shared stop flag, set on SIGINT/SIGTERM while a run is in progress.
pub fn stop_flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}
