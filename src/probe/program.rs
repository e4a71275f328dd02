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
}
