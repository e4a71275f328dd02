//! Each arm's private directory for a service run (`{dir}`): its server's socket, and with the
//! postgres preset a copy of the user's data directory (reflinked where the filesystem can;
//! the user's directory is only read). Removed with every copy when the run ends.

use std::path::{Path, PathBuf};

pub struct ArmDirs {
    root: crate::collect::load::TrialDir,
    pub dirs: Vec<PathBuf>,
}

impl ArmDirs {
    /// A directory per arm under one private root, owned by `owner` when given; `copy` is
    /// copied into each as `data` (ownership and modes kept).
    pub fn new(
        owner: Option<(u32, u32)>,
        arms: &[String],
        copy: Option<&Path>,
    ) -> std::io::Result<ArmDirs> {
        let root = crate::collect::load::TrialDir::new(owner)?;
        let mut dirs = Vec::new();
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
        Ok(ArmDirs { root, dirs })
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
        let d = ArmDirs::new(None, &["off".into(), "huge 2m".into()], Some(src.path())).unwrap();
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
        assert!(ArmDirs::new(None, &["a".into()], Some(Path::new("/nonexistent/x"))).is_err());
    }
}
