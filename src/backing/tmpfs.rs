//! File-backed huge pages: a file on a tmpfs that hugelab mounts with `huge=` (`never`,
//! `always`, `within_size`), mapped shared, as a database's shared memory or a JVM's heap file
//! would be.
//!
//! The tmpfs is mounted, the file made and mapped, and the mount detached at once
//! (`umount2(MNT_DETACH)`): the mapping keeps the file system alive until it is unmapped, and
//! nothing is left to clean up if hugelab is killed. A mount left between the mount and the
//! detach by a process that died is detached by the next one.

pub use crate::model::arm::backing::TmpfsHuge;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A tmpfs mounted with a `huge=` policy for one arm of a run, at `/run/hugelab/tmpfs-PID-N`
/// (mode 1777: a trial run as another user writes there too); its files are removed before
/// each trial (`clear`). Unmounted when dropped, and on an immediate exit (Ctrl-C); after a
/// SIGKILL the next hugelab detaches it.
pub struct Mount {
    pub path: PathBuf,
    pub huge: TmpfsHuge,
}

impl Mount {
    pub fn new(huge: TmpfsHuge) -> std::io::Result<Mount> {
        let dir = fresh_dir()?;
        if let Err(e) = mount(&dir, None, huge) {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
        crate::control::signals::mount_created(&dir);
        Ok(Mount { path: dir, huge })
    }

    /// A tmpfs with `huge` mounted at the existing directory `dir` (a server arm's `{dir}`),
    /// mode 0777 so a server run as another user writes there (its root owns the rest).
    pub fn at(dir: &Path, huge: TmpfsHuge) -> std::io::Result<Mount> {
        mount(dir, None, huge)?;
        crate::control::signals::mount_created(dir);
        Ok(Mount {
            path: dir.to_path_buf(),
            huge,
        })
    }

    /// Remove every file in it: each trial starts on an empty tmpfs.
    pub fn clear(&self) -> std::io::Result<()> {
        for e in std::fs::read_dir(&self.path)?.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
        }
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        detach(&self.path);
        crate::control::signals::mount_removed(&self.path);
    }
}

/// Detach the tmpfs at `dir` and remove the mount point.
pub fn detach(dir: &Path) {
    let d = c_path(dir);
    // SAFETY: a NUL-terminated path; a mount point that is not mounted just fails.
    unsafe { libc::umount2(d.as_ptr(), libc::MNT_DETACH) };
    let _ = std::fs::remove_dir(dir);
}

/// A fresh mount point under /run/hugelab, after detaching those of dead processes.
fn fresh_dir() -> std::io::Result<PathBuf> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    sweep();
    std::fs::create_dir_all(DIR)?;
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = PathBuf::from(format!("{DIR}/tmpfs-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// Where hugelab mounts its tmpfs file systems (each detached right after use).
const DIR: &str = "/run/hugelab";

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("a path made here has no NUL")
}

/// Detach and remove the mount points of hugelab processes that are gone (`tmpfs-PID-N`):
/// before each new mount, and by `hugelab restore`.
pub fn sweep() {
    let Ok(rd) = std::fs::read_dir(DIR) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("tmpfs-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            detach(&e.path());
        }
    }
}

/// A shared mapping of `len` bytes (a multiple of 2 MiB) of a file on a fresh tmpfs mounted
/// with `huge`, starting on a 2 MiB boundary. Needs CAP_SYS_ADMIN (the mount). Nothing is
/// faulted in.
pub fn map(len: usize, huge: TmpfsHuge) -> std::io::Result<*mut u8> {
    let dir = fresh_dir()?;
    let mounted = mount(&dir, Some(len + (2 << 20)), huge);
    let mapped = mounted.and_then(|()| map_file(&dir.join("region"), len));
    // Detaching leaves the mapped file system alive.
    detach(&dir);
    mapped
}

/// Mount a tmpfs at `dir` with `huge` (and a size limit, else the kernel's default: half of
/// the memory).
fn mount(dir: &Path, size: Option<usize>, huge: TmpfsHuge) -> std::io::Result<()> {
    let target = c_path(dir);
    let options = CString::new(match size {
        Some(s) => format!("huge={},size={s},mode=0700", huge.option()),
        None => format!("huge={},mode=1777", huge.option()),
    })
    .expect("no NUL");
    // SAFETY: NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            c"hugelab".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr() as *const libc::c_void,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            " (mounting a tmpfs needs root)"
        } else if e.raw_os_error() == Some(libc::EINVAL) {
            " (this kernel's tmpfs has no huge= option: CONFIG_TRANSPARENT_HUGEPAGE)"
        } else {
            ""
        };
        return Err(std::io::Error::new(
            e.kind(),
            format!(
                "mount tmpfs huge={} at {}: {e}{hint}",
                huge.option(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The file at `path`, `len` bytes long, mapped shared and writable at a 2 MiB-aligned
/// address, then unlinked (the mapping holds it).
fn map_file(path: &Path, len: usize) -> std::io::Result<*mut u8> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    file.set_len(len as u64)?;
    let p = super::segment::map_file_aligned(&file, len, libc::PROT_READ | libc::PROT_WRITE)
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("mmap MAP_SHARED of the tmpfs file: {e}"))
        })?;
    let _ = std::fs::remove_file(path);
    Ok(p as *mut u8)
}
