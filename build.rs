//! Marks a build made by a user who is not root (`cfg(unprivileged)`), so that tests which
//! change kernel settings are reported as ignored in that user's `cargo test`, not as passed;
//! marks the tools some tests need and this machine lacks (`cfg(missing_postgres)`, …) so that
//! those tests are reported as ignored too — except under CI (`HUGELAB_CI` set), where a
//! missing tool must fail them;
//! marks a host whose memory controller is on cgroup v1 (`cfg(memory_on_cgroup_v1)`);
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
    version();
    missing_tools();
    cgroup_layout();
}

/// `cfg(memory_on_cgroup_v1)` where the memory controller is mounted as cgroup v1 (systemd's
/// hybrid layout, as on this project's VMs): a pure cgroup2 host cannot be had here, so the test
/// that reads one live is reported ignored. A layout is the host's, not a tool to install, so
/// CI is marked the same way.
fn cgroup_layout() {
    println!("cargo::rustc-check-cfg=cfg(memory_on_cgroup_v1)");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let v1_memory = mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "memory")
    });
    if v1_memory {
        println!("cargo::rustc-cfg=memory_on_cgroup_v1");
    }
}

/// `cfg(missing_NAME)` for each tool a test needs that is not installed here (not under CI).
fn missing_tools() {
    println!("cargo::rerun-if-env-changed=HUGELAB_CI");
    let ci = std::env::var_os("HUGELAB_CI").is_some();
    // Installing a tool changes these directories: the marks are taken again. Under CI no
    // mark is taken, so nothing is watched: CI builds while it installs the tools, and a
    // watched directory would make the build that follows compile hugelab again.
    if !ci {
        println!("cargo::rerun-if-env-changed=PATH");
        println!("cargo::rerun-if-changed=tests/fixtures/jmh");
        for dir in ["/usr/bin", "/usr/sbin"] {
            if std::path::Path::new(dir).is_dir() {
                println!("cargo::rerun-if-changed={dir}");
            }
        }
    }
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    let postgres = std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|d| {
        d.filter_map(Result::ok)
            .any(|v| v.path().join("bin/postgres").is_file())
    });
    for (cfg, found) in [
        ("missing_postgres", postgres),
        ("missing_virt_xml_validate", on_path("virt-xml-validate")),
        ("missing_runuser", on_path("runuser")),
        (
            "missing_prometheus",
            on_path("prometheus") && on_path("promtool"),
        ),
        ("missing_systemd_analyze", on_path("systemd-analyze")),
        (
            "missing_redis",
            on_path("redis-server") && on_path("redis-benchmark") && on_path("redis-cli"),
        ),
        (
            "missing_memcached",
            on_path("memcached") && on_path("memcslap"),
        ),
        ("missing_sysbench", on_path("sysbench")),
        ("missing_mariadb", on_path("mariadbd") || on_path("mysqld")),
        ("missing_java", on_path("java") && on_path("javac")),
        (
            "missing_jmh",
            on_path("java")
                && std::path::Path::new("tests/fixtures/jmh/target/benchmarks.jar").is_file(),
        ),
        (
            "missing_tuned",
            std::path::Path::new("/usr/lib/python3/dist-packages/tuned/profiles/loader.py")
                .is_file(),
        ),
        ("missing_hugeadm", on_path("hugeadm")),
        ("missing_jq", on_path("jq") && on_path("xz")),
        ("missing_qemu", on_path("qemu-system-x86_64")),
        (
            "missing_kubernetes_validate",
            on_path("kubernetes-validate"),
        ),
        (
            "missing_chromium",
            ["chromium", "chromium-browser", "google-chrome"]
                .iter()
                .any(|b| std::path::Path::new("/usr/bin").join(b).is_file()),
        ),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if !found && !ci {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

/// `HUGELAB_VERSION`: the package version, and the commit when built from a git checkout.
fn version() {
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
