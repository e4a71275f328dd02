//! A server's processes: an exit status in words (reaped or not), whether a pidfd's process
//! has exited, a blocking wait for several, and SIGKILL of the whole tree.

use std::time::Instant;

/// A wait status in words.
pub(super) fn describe_wait_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!(
            "killed by {}",
            crate::workload::child::signal_name(libc::WTERMSIG(status))
        )
    } else {
        "status unknown".into()
    }
}

/// The status of an exited, unreaped child in words, without reaping it.
pub(super) fn describe_status(pid: i32) -> String {
    // SAFETY: siginfo_t is plain data; all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid to write; WNOWAIT leaves the child unreaped.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
        )
    };
    if r != 0 {
        return "status unknown".into();
    }
    // SAFETY: filled in by waitid for an exited child.
    let (code, status) = unsafe { (info.si_code, info.si_status()) };
    if code == libc::CLD_EXITED {
        format!("exit {status}")
    } else {
        format!("killed by {}", crate::workload::child::signal_name(status))
    }
}

/// Whether the process of a pidfd has exited (without blocking).
pub(super) fn exited(pidfd: i32) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; timeout 0 does not block.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

/// Block until the processes of every pidfd have exited, or `until`; whether they all did.
pub(super) fn wait_all_exit(pidfds: &[i32], until: Instant) -> bool {
    let mut left: Vec<i32> = pidfds.to_vec();
    loop {
        left.retain(|fd| !exited(*fd));
        if left.is_empty() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        let mut p: Vec<libc::pollfd> = left
            .iter()
            .map(|fd| libc::pollfd {
                fd: *fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = (until - now).as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `p` is a valid array of pollfd of the length given; blocks until one exits.
        unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    }
}

/// SIGKILL a server's process group and each process of its tree.
pub fn kill_tree(pid: i32, family: &[i32]) {
    // SAFETY: signalling our own server's group and the descendants just listed.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
        for p in family {
            libc::kill(*p, libc::SIGKILL);
        }
    }
}
