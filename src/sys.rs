//! Raw Linux calls the libc crate does not wrap: PAGEMAP_SCAN, pidfd_open, process_madvise,
//! and PR_SET_THP_DISABLE. Other `unsafe` blocks sit beside the call they make (mmap in
//! `backing`, perf and tracepoint reads in `collect`, getpwnam_r in `probe::user`), each with
//! its SAFETY comment (`clippy::undocumented_unsafe_blocks` is denied).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const MADV_COLLAPSE: libc::c_int = 25;
const PAGEMAP_SCAN: libc::c_ulong = 0xC060_6610; // _IOWR('f', 16, struct pm_scan_arg), Linux 6.7
const PAGE_IS_PRESENT: u64 = 1 << 3;

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// Ranges of present pages within `[start, end)` of the process whose pagemap is `pagemap`,
/// found with PAGEMAP_SCAN (Linux 6.7+) so sparse mappings cost what is resident, not their
/// virtual size. `Err` with ENOTTY/EINVAL on kernels without it.
pub fn present_ranges(
    pagemap: &std::fs::File,
    start: u64,
    end: u64,
) -> std::io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut buf = vec![PageRegion::default(); 1024];
    let mut at = start;
    while at < end {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: at,
            end,
            vec: buf.as_mut_ptr() as u64,
            vec_len: buf.len() as u64,
            category_mask: PAGE_IS_PRESENT,
            return_mask: PAGE_IS_PRESENT,
            ..PmScanArg::default()
        };
        // SAFETY: `arg` and `buf` outlive the call; vec/vec_len describe `buf` exactly.
        let n = unsafe {
            libc::ioctl(
                pagemap.as_raw_fd(),
                PAGEMAP_SCAN,
                &mut arg as *mut PmScanArg,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        out.extend(buf[..n as usize].iter().map(|r| (r.start, r.end)));
        if arg.walk_end <= at {
            break;
        }
        at = arg.walk_end;
    }
    Ok(out)
}

/// A pidfd for `pid` (Linux 5.3+).
pub fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new file descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// process_madvise(pidfd, [start, start+len), advice): bytes advised (Linux 5.10+).
pub fn process_madvise(
    pidfd: &OwnedFd,
    start: u64,
    len: u64,
    advice: libc::c_int,
) -> std::io::Result<u64> {
    process_madvise_ranges(pidfd, &[(start, len)], advice)
}

/// process_madvise over several ranges in one call (at most IOV_MAX, 1024): bytes advised. The
/// kernel flushes the TLB once per call, not once per range (MADV_DONTNEED, Linux 6.12+).
pub fn process_madvise_ranges(
    pidfd: &OwnedFd,
    ranges: &[(u64, u64)],
    advice: libc::c_int,
) -> std::io::Result<u64> {
    let iov: Vec<libc::iovec> = ranges
        .iter()
        .map(|&(start, len)| libc::iovec {
            iov_base: start as *mut libc::c_void,
            iov_len: len as usize,
        })
        .collect();
    // SAFETY: the iovecs describe memory of the *target* process; the kernel validates them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd.as_raw_fd(),
            iov.as_ptr(),
            iov.len(),
            advice,
            0u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u64)
}

/// PR_THP_DISABLE_EXCEPT_ADVISED (linux/prctl.h, Linux 6.18): with PR_SET_THP_DISABLE, THP
/// stays on where the process asked for it (MADV_HUGEPAGE, MADV_COLLAPSE).
pub const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;

/// A process's own THP policy (PR_SET_THP_DISABLE), inherited across fork and exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpPolicy {
    /// The system's THP settings apply.
    System,
    /// No THP of any kind for the process (`THP_enabled: 0`).
    Off,
    /// THP only in regions the process advised (MADV_HUGEPAGE): `madvise` for it alone.
    Advised,
}

/// Set this process's THP policy (and its future children's).
pub fn set_thp_policy(p: ThpPolicy) -> std::io::Result<()> {
    let (on, flags) = match p {
        ThpPolicy::System => (0, 0),
        ThpPolicy::Off => (1, 0),
        ThpPolicy::Advised => (1, PR_THP_DISABLE_EXCEPT_ADVISED),
    };
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, on as libc::c_ulong, flags, 0, 0) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// This process's THP policy (PR_GET_THP_DISABLE: 0, 1, or 1 | EXCEPT_ADVISED).
pub fn thp_policy() -> std::io::Result<ThpPolicy> {
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(match r as libc::c_ulong {
        0 => ThpPolicy::System,
        r if r & PR_THP_DISABLE_EXCEPT_ADVISED != 0 => ThpPolicy::Advised,
        _ => ThpPolicy::Off,
    })
}

/// Whether this kernel knows PR_THP_DISABLE_EXCEPT_ADVISED (an older one refuses the flag with
/// EINVAL): tried in a short-lived child, so that this process's own flag, which every spawn
/// inherits, is never touched outside a spawn.
pub fn thp_advised_supported() -> bool {
    use std::os::unix::process::CommandExt;
    static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KNOWN.get_or_init(|| {
        let mut c = std::process::Command::new("/bin/true");
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe { c.pre_exec(|| set_thp_policy(ThpPolicy::Advised)) };
        c.stdin(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_arg_layout_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<PmScanArg>(), 96);
        assert_eq!(std::mem::size_of::<PageRegion>(), 24);
        assert_eq!(
            PAGEMAP_SCAN,
            (3 << 30) | (96 << 16) | ((b'f' as u64) << 8) as libc::c_ulong | 16
        );
    }

    #[test]
    fn finds_only_present_pages() {
        let mut r = crate::backing::Region::map(64 << 20, crate::backing::Backing::Base).unwrap();
        let s = r.as_mut_slice();
        s[0] = 1;
        s[10 << 20] = 1;
        let f = std::fs::File::open("/proc/self/pagemap").unwrap();
        match present_ranges(&f, r.start(), r.start() + (64 << 20)) {
            Ok(ranges) => {
                let pages: u64 = ranges.iter().map(|(a, b)| (b - a) / 4096).sum();
                assert_eq!(pages, 2, "{ranges:x?}");
            }
            Err(e) => crate::eprintln_safe!(
                "PAGEMAP_SCAN unavailable here ({e}); inspect falls back to reading pagemap"
            ),
        }
    }
}
