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

#[cfg(test)]
mod tests {
    use super::*;

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
