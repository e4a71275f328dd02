//! A private PostgreSQL for the tests that run one: the newest installed binaries, and a
//! cluster of its own in a temporary directory, owned by the postgres user and filled for
//! pgbench (`services.rs`, `answer.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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
/// pgbench with scale 2: a copy of the suite's template.
pub fn pg_cluster(bin: &Path, dir: &Path) -> PathBuf {
    let data = dir.join("data");
    Command::new("chown")
        .args(["postgres", &dir.display().to_string()])
        .status()
        .unwrap();
    super::succeed(Command::new("cp").arg("-a").arg(template(bin)).arg(&data));
    data
}

/// The cluster every private one is a copy of, made once: initdb, a server started to fill
/// pgbench's tables, and its stop take seconds, which a test holding the knob lock would make
/// every other holder wait for (a copy takes a tenth of a second). It is kept in cargo's
/// temporary directory for the binaries' major version (`cargo clean` removes it), and put
/// there whole or not at all.
fn template(bin: &Path) -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let version = bin.parent().and_then(Path::file_name).unwrap();
        let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("postgres-{}-pgbench-s2", version.to_string_lossy()));
        if kept.join("PG_VERSION").exists() {
            return kept;
        }
        let dir = tempfile::tempdir().unwrap();
        let made = fill_cluster(bin, dir.path(), super::free_port());
        let part = kept.with_extension(std::process::id().to_string());
        super::succeed(Command::new("cp").arg("-a").arg(&made).arg(&part));
        std::fs::rename(&part, &kept)
            .or_else(|e| match kept.join("PG_VERSION").exists() {
                // Another suite process put its own there first: the same cluster.
                true => std::fs::remove_dir_all(&part),
                false => Err(e),
            })
            .unwrap_or_else(|e| panic!("keeping the template cluster at {}: {e}", kept.display()));
        kept
    })
}

/// A new cluster in `dir` (owned by the postgres user), filled for pgbench with scale 2 by a
/// server that is stopped again.
fn fill_cluster(bin: &Path, dir: &Path, port: u16) -> PathBuf {
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
            // Never a page of a pool another test sized for its own process.
            "-c",
            "huge_pages=off",
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
        let data = pg_cluster(&bin, dir.path());
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
