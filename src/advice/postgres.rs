//! PostgreSQL's own count of the pool its shared memory needs.

use crate::error::UsageError;
use std::path::Path;

/// How to ask PostgreSQL for its pool: the data directory, the binary, and the user to run it
/// as (PostgreSQL refuses root).
pub struct Postgres<'a> {
    pub datadir: &'a Path,
    pub bin: &'a str,
    pub user: Option<&'a str>,
}

impl Postgres<'_> {
    /// The 2 MiB pages PostgreSQL says its shared memory needs for this data directory
    /// (`postgres -D DIR -C shared_memory_size_in_huge_pages`, PostgreSQL 15+; the server may
    /// run).
    pub fn pages(&self) -> anyhow::Result<u64> {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(self.bin);
        cmd.arg("-D")
            .arg(self.datadir)
            .args(["-C", "shared_memory_size_in_huge_pages"]);
        if let Some(u) = self.user {
            let ids = crate::probe::user::lookup(u)
                .ok_or_else(|| UsageError(format!("--user {u:?}: no such user on this system")))?;
            cmd.uid(ids.uid).gid(ids.gid);
        }
        let out = cmd.stdin(std::process::Stdio::null()).output().map_err(|e| {
            UsageError(format!(
                "--pg-bin {:?}: cannot run it ({e}); give the path, e.g. /usr/lib/postgresql/15/bin/postgres",
                self.bin
            ))
        })?;
        let text = String::from_utf8_lossy(&out.stdout);
        match text.trim().parse::<u64>() {
            Ok(n) if out.status.success() => Ok(n),
            _ => Err(UsageError(format!(
                "`{} -D {} -C shared_memory_size_in_huge_pages` printed no page count (PostgreSQL 15+, an initialised data directory, and --user postgres when run as root): {}",
                self.bin,
                self.datadir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
            .into()),
        }
    }
}
