//! Marks a build made by a user who is not root (`cfg(unprivileged)`), so that tests which
//! change kernel settings are reported as ignored in that user's `cargo test`, not as passed.

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
}
