//! A private PostgreSQL for the tests that run one: the newest installed binaries, and a
//! cluster of its own in a temporary directory, owned by the postgres user and filled for
//! pgbench (`services.rs`, `answer.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The PostgreSQL binaries directory, if PostgreSQL is installed.
pub fn pg_bin() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib/postgresql").ok()?;
    let mut v: Vec<PathBuf> = dirs
        .filter_map(|d| Some(d.ok()?.path().join("bin")))
        .filter(|b| b.join("postgres").exists())
        .collect();
    v.sort();
    v.pop()
}

/// A private PostgreSQL cluster in `dir` (owned by the postgres user), initialised for
/// pgbench with scale 2; the server is stopped again.
pub fn pg_cluster(bin: &Path, dir: &Path, port: u16) -> PathBuf {
    let data = dir.join("data");
    Command::new("chown")
        .args(["postgres", &dir.display().to_string()])
        .status()
        .unwrap();
    let pg = hugelab::probe::user::lookup("postgres").expect("the postgres user");
    let as_pg = |prog: &Path, args: &[&str]| {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new(prog);
        c.args(args).uid(pg.uid).gid(pg.gid).current_dir(dir);
        c
    };
    super::succeed(&mut as_pg(
        &bin.join("initdb"),
        &[
            "-D",
            &data.display().to_string(),
            "-A",
            "trust",
            "-U",
            "postgres",
        ],
    ));
    let sock = dir.display().to_string();
    let port = port.to_string();
    let mut server = as_pg(
        &bin.join("postgres"),
        &[
            "-D",
            &data.display().to_string(),
            "-k",
            &sock,
            "-p",
            &port,
            "-c",
            "listen_addresses=",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let ready = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", &sock, "-p", &port])
            .status()
            .is_ok_and(|s| s.success())
    });
    assert!(ready, "the setup server did not come up");
    super::succeed(&mut as_pg(
        &bin.join("pgbench"),
        &["-q", "-i", "-s", "2", "-h", &sock, "-p", &port, "postgres"],
    ));
    // SAFETY: signalling the server this test started (smart shutdown).
    unsafe { libc::kill(server.id() as i32, libc::SIGINT) };
    server.wait().unwrap();
    data
}

/// A private PostgreSQL: the newest binaries, a cluster of its own in a temporary directory
/// (filled for pgbench), a free port and the directory as its unix socket directory.
pub struct PrivatePg {
    pub dir: tempfile::TempDir,
    pub bin: PathBuf,
    pub data: PathBuf,
    pub port: u16,
    /// The socket directory (the temporary directory), for `-k` and the clients' `-h`.
    pub sock: String,
}

impl PrivatePg {
    pub fn new() -> PrivatePg {
        let bin = pg_bin().expect("PostgreSQL is needed (.ci/run installs it)");
        let dir = tempfile::tempdir().unwrap();
        let port = super::free_port();
        let data = pg_cluster(&bin, dir.path(), port);
        let sock = dir.path().display().to_string();
        PrivatePg {
            dir,
            bin,
            data,
            port,
            sock,
        }
    }

    /// The server's command line on its socket only, with `extra` settings (`-c …`).
    pub fn server(&self, extra: &str) -> String {
        format!(
            "{} -D {} -k {} -p {} -c listen_addresses= {extra}",
            self.bin.join("postgres").display(),
            self.data.display(),
            self.sock,
            self.port
        )
        .trim_end()
        .to_string()
    }
}
