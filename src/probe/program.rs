//! Where exec would find a program.

/// A program as exec would find it: a path containing `/`, or the first match in PATH.
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = std::path::PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| executable(p))
}

/// A client tool that comes with a server (`psql` and `pgbench` with `postgres`, `redis-cli`
/// with `redis-server`): beside the server's program first — the directory it was found in,
/// then the one its symbolic link leads to (`/usr/local/bin/postgres` →
/// `/usr/lib/postgresql/15/bin/`) — then on PATH.
pub fn find_client(server_program: &str, client: &str) -> Option<std::path::PathBuf> {
    if let Some(server) = find_program(server_program) {
        let real = std::fs::canonicalize(&server).ok();
        for dir in [server.parent(), real.as_deref().and_then(|r| r.parent())]
            .into_iter()
            .flatten()
        {
            if let Some(p) = find_program(&dir.join(client).display().to_string()) {
                return Some(p);
            }
        }
    }
    find_program(client)
}

/// The major version of the systemd on this machine, from the first line of
/// `systemctl --version` (`systemd 252 (252.39-1~deb12u2)`); `None` without systemctl.
pub fn systemd_version() -> Option<u32> {
    let out = std::process::Command::new(find_program("systemctl")?)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_systemd_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_systemd_version(text: &str) -> Option<u32> {
    text.lines()
        .next()?
        .strip_prefix("systemd ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_version_is_the_first_lines_number() {
        assert_eq!(
            parse_systemd_version("systemd 252 (252.39-1~deb12u2)\n+PAM +AUDIT\n"),
            Some(252)
        );
        assert_eq!(parse_systemd_version("systemd 260 (260-1)"), Some(260));
        assert_eq!(parse_systemd_version("something else"), None);
    }

    #[test]
    fn finds_a_program_on_path_or_by_path() {
        assert!(find_program("sh").is_some());
        assert_eq!(
            find_program("/bin/sh"),
            Some(std::path::PathBuf::from("/bin/sh"))
        );
        assert_eq!(find_program("no-such-program-hugelab"), None);
        // A directory is not a program.
        assert_eq!(find_program("/tmp"), None);
    }

    #[test]
    fn a_client_is_found_beside_its_server_and_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("lib/pg/bin");
        std::fs::create_dir_all(&bin).unwrap();
        for f in ["postgres", "psql"] {
            std::fs::write(bin.join(f), "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(
                bin.join(f),
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
            )
            .unwrap();
        }
        let local = dir.path().join("local");
        std::fs::create_dir_all(&local).unwrap();
        std::os::unix::fs::symlink(bin.join("postgres"), local.join("postgres")).unwrap();
        let server = local.join("postgres").display().to_string();
        assert_eq!(find_client(&server, "psql"), Some(bin.join("psql")));
        let direct = bin.join("postgres").display().to_string();
        assert_eq!(find_client(&direct, "psql"), Some(bin.join("psql")));
        assert_eq!(find_client(&server, "no-such-client-here"), None);
    }
}
