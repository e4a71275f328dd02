//! Shared helpers for integration tests.
#![allow(dead_code)]

pub mod advised;
pub mod chase;
pub mod chromium;
pub mod http;
mod knob_lock;
pub mod openmetrics;
pub mod postgres;
pub mod printed;

#[allow(unused_imports)] // the benches share these helpers and change no setting
pub use knob_lock::{KnobLock, knob_lock};

use hugelab::control::{self, Knob, Settings, SysfsSettings};
use hugelab::error::ControlError;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Puts the calling test at the lowest CPU priority (nice 19), for a test that only computes and
/// whose time nothing reads (a study rerun, a script over the source tree): the tests beside it
/// that measure, or that hold the knob lock every other holder waits on, get the CPUs first,
/// and it takes what they leave. Linux keeps a nice value per thread, libtest gives each test a
/// thread of its own, and what the test starts (threads, processes) inherits it.
pub fn lowest_priority() {
    // SAFETY: setpriority on the calling thread (who 0); lowering a priority needs no privilege.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A test that changes live kernel settings (or switches user) needs root. Non-root builds mark
/// such tests `#[cfg_attr(unprivileged, ignore)]` (see build.rs), so `cargo test` reports them as
/// ignored; this catches a test binary built as root and run by another user.
#[macro_export]
macro_rules! require_root {
    () => {
        assert!(
            $crate::common::is_root(),
            "needs root, but this test binary was built by root: rebuild it as this user (`cargo test` does)"
        );
    };
}

/// Where tests that could not check their core claim on this host say so: cargo hides a
/// passing test's stderr, so `.ci/run` counts this file's lines into its closing totals.
pub fn skipped_core_log() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped-core.log")
}

/// A core check this host cannot make: said on stderr and logged where CI's totals see it
/// (`skipped_core_log`), never a silent pass.
pub fn skipped_core(test: &str, why: &str) {
    eprintln!("{test}: core check skipped: {why}");
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(skipped_core_log())
        .expect("the skipped-core log opens");
    writeln!(f, "{test}: {why}").expect("the skipped-core log takes a line");
}

pub fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

pub fn selected(path: &str) -> String {
    let t = read_trim(path);
    t.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or_else(|| panic!("no selection in {path}: {t}"))
        .to_string()
}

/// Run `hugelab ARGS…`, require success, and return what it printed on stdout.
pub fn hugelab_stdout<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    hugelab_exits(args, 0)
}

/// Run `hugelab ARGS…`, require exit code `code`, and return what it printed on stdout.
pub fn hugelab_exits<I, S>(args: I, code: i32) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    if out.status.code() != Some(code) {
        // What the run said on stdout too (a failed run's reason is in its output), the end of
        // it when long.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let tail: String = stdout
            .chars()
            .rev()
            .take(4000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        panic!(
            "exit {:?}, want {code}\n--- stderr\n{}\n--- stdout (end)\n{tail}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).unwrap()
}

/// Run `hugelab ARGS…`, require exit code `code`, and return what it said on stderr (bad
/// input: exit 2 and the reason).
pub fn hugelab_stderr<I, S>(args: I, code: i32) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let o = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{e}");
    e
}

/// Run `hugelab ARGS…`, require success, and parse its JSON output.
/// `hugelab run EXTRA --json --db DB -- CMD`, which must succeed, as JSON.
pub fn run_json(extra: &[&str], cmd: &[&str], db: &Path) -> serde_json::Value {
    let db = db.display().to_string();
    let mut all = vec!["run"];
    all.extend_from_slice(extra);
    all.extend(["--json", "--db", &db, "--"]);
    all.extend_from_slice(cmd);
    hugelab_json(all)
}

pub fn hugelab_json<I, S>(args: I) -> serde_json::Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    serde_json::from_str(&hugelab_stdout(args)).unwrap()
}

/// A fake sysfs with the knobs a guard test needs.
pub fn fake_sysfs(dir: &Path) {
    let thp = dir.join("sys/kernel/mm/transparent_hugepage");
    std::fs::create_dir_all(thp.join("hugepages-64kB")).unwrap();
    std::fs::write(thp.join("enabled"), "always [madvise] never\n").unwrap();
    std::fs::write(
        thp.join("defrag"),
        "always defer defer+madvise [madvise] never\n",
    )
    .unwrap();
    std::fs::write(
        thp.join("hugepages-64kB/enabled"),
        "always inherit madvise [never]\n",
    )
    .unwrap();
    let pool = dir.join("sys/kernel/mm/hugepages/hugepages-2048kB");
    std::fs::create_dir_all(&pool).unwrap();
    std::fs::write(pool.join("nr_hugepages"), "0\n").unwrap();
}

/// Sysfs writes replace the file; emulate the kernel re-rendering selectors.
pub struct FakeKernel(pub SysfsSettings);

impl Settings for FakeKernel {
    fn read(&self, knob: &Knob) -> Result<String, ControlError> {
        self.0.read(knob)
    }
    fn write(&self, knob: &Knob, value: &str) -> Result<(), ControlError> {
        let text = match knob.kind() {
            control::knob::ValueKind::Selector(choices) => choices
                .iter()
                .map(|c| {
                    if *c == value {
                        format!("[{c}]")
                    } else {
                        c.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            control::knob::ValueKind::Switch | control::knob::ValueKind::Number => {
                value.to_string()
            }
        };
        knob.validate(value)?;
        std::fs::write(self.0.root.path(knob.path()), text + "\n").unwrap();
        Ok(())
    }
}

/// A fixture machine copied into `dir`, so that a guard can write to its sysfs.
pub fn writable_fixture(name: &str, dir: &Path) -> hugelab::probe::Root {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    copy(&fixture(name), dir);
    hugelab::probe::Root::new(dir)
}

/// A settings guard over the fake sysfs under `root`, journaling into it.
pub fn fake_guard(root: &hugelab::probe::Root) -> control::Guard {
    control::Guard::new(
        Box::new(FakeKernel(SysfsSettings::new(root.clone()))),
        root.clone(),
        root.path("/run/journal.json"),
    )
    .unwrap()
}

/// Run a program, require success (showing what it printed if not), and return its output.
pub fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A `hugelab hold-memory` helper whose memory is faulted in (it printed `ready START END`);
/// killed and reaped when dropped.
pub struct Holder {
    pub child: std::process::Child,
    /// The `ready START END` line.
    pub ready: String,
}

impl Holder {
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `hugelab hold-memory ARGS…` and wait until it is ready.
pub fn hold_memory(args: &[&str]) -> Holder {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .arg("hold-memory")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert!(
        ready.starts_with("ready"),
        "hold-memory {args:?}: {ready:?}"
    );
    Holder { child, ready }
}

/// A free TCP port on loopback (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether Debian's `prometheus` (and `promtool`) are installed; `.ci/run` installs them.
pub fn has_prometheus() -> bool {
    let ok = |c: &str| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok()
    };
    ok("prometheus") && ok("promtool")
}

/// A private Prometheus on loopback over a data directory, killed (by its pid) when dropped.
pub struct PrometheusServer {
    pub addr: String,
    child: std::process::Child,
}

impl PrometheusServer {
    /// Start Prometheus with `config` (YAML text) on the TSDB in `data`, and wait until its
    /// API answers (a readiness wait, not a timing assertion).
    pub fn start(dir: &Path, config: &str, data: &Path) -> PrometheusServer {
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg("--storage.tsdb.retention.time=30d")
            .arg(format!("--web.listen-address={addr}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = PrometheusServer { addr, child };
        for _ in 0..240 {
            std::thread::sleep(std::time::Duration::from_millis(250));
            if let Ok(mut s) = std::net::TcpStream::connect(&server.addr) {
                use std::io::{Read, Write};
                let _ = write!(s, "GET /-/ready HTTP/1.0\r\nHost: {}\r\n\r\n", server.addr);
                let mut body = String::new();
                let _ = s.read_to_string(&mut body);
                if body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200") {
                    return server;
                }
            }
        }
        panic!("Prometheus at {} never became ready", server.addr);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `kubernetes-validate --strict` accepts the Kubernetes objects in `text`, and refuses them
/// with `field` misspelt as `misspelt`: the check can fail.
pub fn kubernetes_validates(text: &str, field: &str, misspelt: &str) {
    assert!(
        Command::new("kubernetes-validate")
            .arg("--help")
            .output()
            .is_ok(),
        "no kubernetes-validate (pip install kubernetes-validate; .ci/run does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (good, bad) = (dir.path().join("good.yaml"), dir.path().join("bad.yaml"));
    std::fs::write(&good, text).unwrap();
    succeed(
        Command::new("kubernetes-validate")
            .arg("--strict")
            .arg(&good),
    );
    assert!(text.contains(field), "{field} is not in the objects");
    std::fs::write(&bad, text.replace(field, misspelt)).unwrap();
    let out = Command::new("kubernetes-validate")
        .arg("--strict")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a misspelt {field} passed the schema check"
    );
}

/// Every YAML document of a manifest (a file `kubectl apply -f` reads), as JSON values.
pub fn yaml_documents(manifest: &str) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(manifest)
        .map(|d| serde_json::Value::deserialize(d).expect("a YAML document"))
        .filter(|d| !d.is_null())
        .collect()
}

/// The manifest's object of `kind`.
pub fn object_of(manifest: &str, kind: &str) -> serde_json::Value {
    yaml_documents(manifest)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in the manifest:\n{manifest}"))
}

/// The first container's `args` of the manifest's first object with a pod template, checked
/// to be a command line hugelab's own parser accepts.
pub fn container_args(manifest: &str) -> Vec<String> {
    let args = yaml_documents(manifest)
        .into_iter()
        .find_map(|d| {
            let args = &d["spec"]["template"]["spec"]["containers"][0]["args"];
            serde_json::from_value::<Vec<String>>(args.clone()).ok()
        })
        .expect("no container with args in the manifest");
    use clap::Parser;
    let parsed = hugelab::cli::Cli::try_parse_from(
        std::iter::once("hugelab".to_string()).chain(args.clone()),
    );
    assert!(parsed.is_ok(), "{args:?}: {:?}", parsed.err());
    args
}

/// Whether `docs` quotes `expected` exactly between `<!-- {marker}: {source} -->` and
/// `<!-- /{marker} -->` (a fenced block's fences aside): the tables the docs take from a
/// script's stored output. Names the rows typed there by hand and those left out.
pub fn quoted_exactly(
    docs: &str,
    marker: &str,
    source: &str,
    expected: &str,
) -> Result<(), String> {
    let quoted = docs
        .split(&format!("<!-- {marker}: {source} -->\n"))
        .nth(1)
        .and_then(|s| s.split(&format!("<!-- /{marker} -->")).next())
        .ok_or(format!("no table from {source} between {marker} markers"))?
        .trim_matches(['\n', '`']);
    if quoted == expected.trim_end() {
        return Ok(());
    }
    let (q, e): (Vec<&str>, Vec<&str>) = (quoted.lines().collect(), expected.lines().collect());
    let typed: Vec<&&str> = q.iter().filter(|l| !e.contains(l)).collect();
    let left: Vec<&&str> = e.iter().filter(|l| !q.contains(l)).collect();
    Err(format!(
        "the table is not {source}'s as printed: rows not printed {typed:#?}, printed rows left out {left:#?}"
    ))
}
