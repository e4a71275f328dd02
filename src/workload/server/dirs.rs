//! Each arm's private directory for a service run (`{dir}`): its server's socket, and with the
//! postgres preset a copy of the user's data directory (reflinked where the filesystem can;
//! the user's directory is only read). Removed with every copy when the run ends. Also the
//! private directory of one trial's load files ([`TrialDir`]).

use std::path::{Path, PathBuf};

/// A fresh directory for one trial's load files (pgbench's log, memtier's JSON), owned by the
/// user the load runs as; removed when dropped.
pub struct TrialDir(std::path::PathBuf);

impl TrialDir {
    pub fn new(owner: Option<(u32, u32)>) -> std::io::Result<TrialDir> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("hugelab-trial-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir); // a leftover of a killed run with this pid
        std::fs::create_dir(&dir)?;
        // Removed by drop, or by the signal handler on an immediate exit (a second Ctrl-C).
        crate::control::signals::dir_created(&dir);
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))?;
        }
        Ok(TrialDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TrialDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        crate::control::signals::dir_removed(&self.0);
    }
}

pub struct ArmDirs {
    /// The arms' tmpfs mounts (`tmpfs.huge=`), unmounted before the root goes (fields drop in
    /// order).
    _mounts: Vec<crate::backing::tmpfs::Mount>,
    root: TrialDir,
    pub dirs: Vec<PathBuf>,
}

impl ArmDirs {
    /// A directory per arm under one private root, owned by `owner` when given; `copy` is
    /// copied into each as `data` (ownership and modes kept). An arm with a `huge=` policy in
    /// `tmpfs` gets a tmpfs mounted with it as its directory (so its data copy and files sit
    /// there).
    pub fn new(
        owner: Option<(u32, u32)>,
        arms: &[String],
        copy: Option<&Path>,
        tmpfs: &[Option<crate::backing::TmpfsHuge>],
    ) -> std::io::Result<ArmDirs> {
        let root = TrialDir::new(owner)?;
        let mut dirs = Vec::new();
        let mut mounts = Vec::new();
        for (i, a) in arms.iter().enumerate() {
            let name: String = a
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let d = root.path().join(format!("{i}-{name}"));
            std::fs::create_dir(&d)?;
            if let Some(h) = tmpfs.get(i).copied().flatten() {
                mounts.push(crate::backing::tmpfs::Mount::at(&d, h)?);
            }
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::chown(&d, Some(uid), Some(gid))?;
            }
            if let Some(src) = copy {
                let st = std::process::Command::new("cp")
                    .args(["-a", "--reflink=auto"])
                    .arg(src)
                    .arg(d.join("data"))
                    .stdin(std::process::Stdio::null())
                    .output()?;
                if !st.status.success() {
                    return Err(std::io::Error::other(format!(
                        "cp -a {} {}: {}",
                        src.display(),
                        d.join("data").display(),
                        String::from_utf8_lossy(&st.stderr).trim()
                    )));
                }
            }
            dirs.push(d);
        }
        Ok(ArmDirs {
            _mounts: mounts,
            root,
            dirs,
        })
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_arm_gets_its_own_copy_and_all_go_at_the_end() {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("PG_VERSION"), "15\n").unwrap();
        let d = ArmDirs::new(
            None,
            &["off".into(), "huge 2m".into()],
            Some(src.path()),
            &[],
        )
        .unwrap();
        assert!(d.dirs[1].ends_with("1-huge_2m"));
        for x in &d.dirs {
            assert_eq!(
                std::fs::read_to_string(x.join("data/PG_VERSION")).unwrap(),
                "15\n"
            );
        }
        std::fs::write(d.dirs[0].join("data/PG_VERSION"), "changed").unwrap();
        assert_eq!(
            std::fs::read_to_string(src.path().join("PG_VERSION")).unwrap(),
            "15\n"
        );
        let root = d.root().to_path_buf();
        drop(d);
        assert!(!root.exists());
        assert!(ArmDirs::new(None, &["a".into()], Some(Path::new("/nonexistent/x")), &[]).is_err());
    }
}
