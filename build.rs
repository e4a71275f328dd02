//! Marks a build made by a user who is not root (`cfg(unprivileged)`), so that tests which
//! change kernel settings are reported as ignored in that user's `cargo test`, not as passed;
//! and names the git commit the binary is built from (`HUGELAB_COMMIT`, for `--version`), when
//! it is built from a git checkout.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(unprivileged)");
    println!("cargo::rerun-if-changed=build.rs");
    // A different user (sudo sets USER) re-runs this script.
    println!("cargo::rerun-if-env-changed=USER");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or("0");
    if euid != "0" {
        println!("cargo::rustc-cfg=unprivileged");
    }
    commit();
}

/// `HUGELAB_VERSION`: the package version, and the commit when built from a git checkout.
fn commit() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--absolute-git-dir"]).and_then(|dir| {
        println!("cargo::rerun-if-changed={dir}/HEAD");
        println!("cargo::rerun-if-changed={dir}/refs/heads");
        git(&["rev-parse", "--short=12", "HEAD"])
    });
    match commit {
        Some(c) => println!("cargo::rustc-env=HUGELAB_VERSION={version} (commit {c})"),
        // A packaged crate or a tarball: no commit to name.
        None => println!("cargo::rustc-env=HUGELAB_VERSION={version}"),
    }
}
