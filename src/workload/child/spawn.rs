//! What a child is started with: its command (program or `/bin/sh -c`, directory, environment,
//! user, a process group of its own), the THP-disable flag and CPU mask it inherits for one spawn
//! (set on the spawning thread and put back), its pidfd, and the monotonic clock it is timed by.

use super::TrialSpec;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// CLOCK_MONOTONIC now, ns (the clock of `Instant`, and of `time.monotonic_ns()` in a child).
pub fn mono_ns() -> u64 {
    // SAFETY: a zeroed timespec is a valid out-parameter for clock_gettime.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: CLOCK_MONOTONIC always exists; the pointer is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Held from setting what a child inherits until it is spawned and put back.
pub(crate) static SPAWN_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What a spawned child inherits from the spawning thread, set for one spawn: the process's
/// THP-disable flag (`PR_SET_THP_DISABLE`, kept across fork and exec) and the thread's CPU mask.
/// Dropping it puts back what was there before.
pub(crate) struct Inherited {
    thp_was: crate::sys::ThpPolicy,
    mask_was: Option<libc::cpu_set_t>,
}

impl Inherited {
    pub(crate) fn set(
        thp: crate::sys::ThpPolicy,
        pin: Option<usize>,
    ) -> std::io::Result<Inherited> {
        let last = std::io::Error::last_os_error;
        let was = crate::sys::thp_policy()?;
        crate::sys::set_thp_policy(thp)?;
        let mut guard = Inherited {
            thp_was: was,
            mask_was: None,
        };
        if let Some(cpu) = pin {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: cpu_set_t is plain data; the pointers are to live locals of `size` bytes.
            unsafe {
                let mut old: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, size, &mut old) != 0 {
                    return Err(last());
                }
                guard.mask_was = Some(old);
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, size, &set) != 0 {
                    return Err(last());
                }
            }
        }
        Ok(guard)
    }
}

impl Drop for Inherited {
    fn drop(&mut self) {
        let _ = crate::sys::set_thp_policy(self.thp_was);
        if let Some(m) = &self.mask_was {
            // SAFETY: the mask is a live local of its full size.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), m) };
        }
    }
}

/// The command of a spec, in a process group of its own: program or `/bin/sh -c`, directory,
/// environment (the spec's, then the arm's), and the user to run as.
pub(crate) fn command(spec: &TrialSpec) -> Command {
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
    // The child starts as its own process group, by posix_spawn (vfork + exec, as hyperfine
    // does): a pre_exec closure would force a full fork, +0.8 ms per trial measured here.
    cmd.process_group(0);
    if let Some((uid, gid)) = spec.user {
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (setgroups, setgid, setuid) on values computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd
}

/// A spawn error that names the program and, when it was not found, the fix.
pub(crate) fn spawn_error(spec: &TrialSpec, e: std::io::Error) -> std::io::Error {
    let what = if spec.shell {
        "/bin/sh".to_string()
    } else {
        spec.argv[0].clone()
    };
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => {
            " (not found: give a path, or check PATH; use --shell for shell syntax)"
        }
        std::io::ErrorKind::PermissionDenied => " (not executable by the user it runs as)",
        _ => "",
    };
    std::io::Error::new(e.kind(), format!("cannot start {what:?}: {e}{hint}"))
}
