//! The canary node's applier: `advise --format daemonset` writes a ConfigMap and DaemonSet the
//! Kubernetes schema accepts, whose container runs `hugelab apply` on the advice; and `hugelab
//! apply` on this machine sets the advised THP mode and pool, `status` shows them, and SIGTERM —
//! or, after a SIGKILL, `hugelab restore` — puts the machine's own values back.

use crate::common;
use crate::common::advised::stored;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const POOL: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";

/// A THP `always` arm with an 8-page pool, 10% faster than `never`: advice to set both.
fn advised(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("a.db");
    stored(
        &db,
        &["never=thp=never", "always=thp=always,hugetlb.2M=8"],
        &[-0.10],
        &[false],
        &["sysbench", "memory", "run"],
        None,
        None,
    );
    db
}

fn advise(db: &Path, args: &[&str]) -> String {
    let mut v: Vec<String> = vec!["advise".into(), "1".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v.extend(["--db".into(), db.display().to_string()]);
    common::hugelab_stdout(v)
}

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs kubernetes-validate (pip install kubernetes-validate)"
)]
fn the_daemonset_passes_the_schema_check_and_runs_hugelab_apply_on_the_advice() {
    // The advice says each setting's value now: no other test changes one meanwhile.
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = advised(dir.path());
    let text = advise(
        &db,
        &[
            "--format",
            "daemonset",
            "--node-label",
            "pool=canary",
            "--image",
            "example.org/hugelab:0.1.0",
        ],
    );
    // On the canary nodes only, with the image asked for and the settings said up front.
    assert!(
        text.contains("nodeSelector:\n        pool: \"canary\""),
        "{text}"
    );
    assert!(text.contains("image: example.org/hugelab:0.1.0"), "{text}");
    assert!(text.contains("#   thp.enabled = always"), "{text}");
    // Its pool is set at run time: the kubelet must restart before pods requesting it schedule.
    assert!(
        text.contains("# Note: the pools are set at run time") && text.contains("stays Pending"),
        "{text}"
    );
    // The container's arguments are a hugelab command line.
    let args = common::container_args(&text);
    assert_eq!(args[..2], ["apply", "/etc/hugelab/advice.json"], "{args:?}");
    // The ConfigMap holds the advice record `apply` reads: the same as --format json.
    let record: String = text
        .split("advice.json: |\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("    "))
        .map(|l| format!("{}\n", &l[4..]))
        .collect();
    assert_eq!(record, advise(&db, &["--format", "json"]));
    common::kubernetes_validates(&text, "nodeSelector:", "nodeSelecter:");
    // A label that is not KEY=VALUE is bad input, named.
    let err = common::hugelab_stderr(
        [
            "advise",
            "1",
            "--format",
            "daemonset",
            "--node-label",
            "canary",
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(err.contains("\"canary\" is not KEY=VALUE"), "{err}");
}

/// A running `hugelab apply`, stopped with SIGTERM (so it restores) when dropped: a failing
/// test leaves the machine as it found it.
struct Applier(std::process::Child);

impl Applier {
    fn signal(&mut self, sig: i32) {
        // SAFETY: signalling the child this test started and has not reaped.
        unsafe { libc::kill(self.0.id() as i32, sig) };
        self.0.wait().unwrap();
    }
}

impl Drop for Applier {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            self.signal(libc::SIGTERM);
        }
    }
}

/// The advice record (`--format json`) of [`advised`]'s run, written in `dir`.
fn advice_file(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("advice.json");
    advise(
        &advised(dir),
        &["--format", "json", "-o", file.to_str().unwrap()],
    );
    file
}

/// `hugelab apply` started on an advice file, its output read until it holds the settings.
fn apply(advice: &Path) -> Applier {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .arg("apply")
        .arg(advice)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    while !said.contains("holding them until stopped") {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "apply ended: {said}");
        said += &l;
    }
    assert!(said.contains("thp.enabled = always"), "{said}");
    assert!(said.contains("hugetlb.2M = 8"), "{said}");
    Applier(child)
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: changes kernel settings")]
fn apply_holds_the_advice_until_stopped_and_is_restored_after_a_sigkill() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = advice_file(dir.path());
    let before = (common::selected(THP), common::read_trim(POOL));
    // Held: the machine and `status` say so.
    let mut child = apply(&file);
    assert_eq!(common::selected(THP), "always");
    assert_eq!(common::read_trim(POOL), "8");
    let status = common::hugelab_json(["status", "--json"]);
    assert_eq!(
        status["thp"]["enabled"]["selected"], "always",
        "{}",
        status["thp"]
    );
    let pool = status["hugetlb"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["page_size"] == 2 << 20)
        .unwrap();
    assert_eq!(pool["total"], 8, "{pool}");
    // SIGTERM (what removing the DaemonSet sends): every value back.
    child.signal(libc::SIGTERM);
    assert_eq!((common::selected(THP), common::read_trim(POOL)), before);
    // SIGKILL leaves its journal: `hugelab restore` puts the values back from it.
    let mut child = apply(&file);
    child.signal(libc::SIGKILL);
    assert_eq!(
        common::selected(THP),
        "always",
        "a SIGKILL restores nothing"
    );
    let out = common::hugelab_stdout(["restore"]);
    assert!(out.contains("thp.enabled"), "{out}");
    assert_eq!((common::selected(THP), common::read_trim(POOL)), before);
}

/// `hugelab ARGS…` with a guard against a hang (the bug this file's applier tests catch is a
/// run that waits for an applier which never ends): its exit code, stdout and stderr.
fn hugelab_guarded(args: &[&str]) -> (Option<i32>, String, String) {
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .args(args)
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: changes kernel settings")]
fn with_the_applier_holding_a_run_that_changes_nothing_measures_under_it_and_others_are_refused() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = advice_file(dir.path());
    let before = (common::selected(THP), common::read_trim(POOL));
    let mut applier = apply(&file);
    let pid = applier.0.id();
    // A run that changes nothing answers at once, under the applied values, and names them.
    let (code, out, err) = hugelab_guarded(&[
        "run",
        "-a",
        "a=env.X=1",
        "-a",
        "b=env.X=2",
        "--blocks",
        "2",
        "--no-save",
        "--json",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("waiting for"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let notes = v["notes"].to_string();
    for said in [
        format!("measured under the settings pid {pid}: `"),
        "hugelab apply".into(),
        "thp.enabled = always (was madvise)".into(),
        "hugetlb.2M = 8 (was 0)".into(),
    ] {
        assert!(notes.contains(&said), "{said} in {notes}");
    }
    // One that would change them is refused at once, naming the applier.
    let (code, _, err) = hugelab_guarded(&[
        "run",
        "-a",
        "a=thp=never",
        "-a",
        "b=thp=always",
        "--blocks",
        "2",
        "--no-save",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {pid}: `")) && err.contains("apply"),
        "{err}"
    );
    // Stopped while a run measures under its values, the applier restores them only after
    // that run ends: each of its trials finds THP still `always`.
    let check = "sleep 1; grep -q '\\[always\\]' /sys/kernel/mm/transparent_hugepage/enabled";
    let mut reader = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args([
            "run",
            "-a",
            "a=env.X=1",
            "-a",
            "b=env.X=2",
            "--blocks",
            "3",
            "--no-save",
        ])
        .args(["--shell", "--", check])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(reader.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("measured under the settings") {
        let mut l = String::new();
        assert!(said.read_line(&mut l).unwrap() > 0, "run ended: {seen}");
        seen += &l;
    }
    // SAFETY: signalling the applier this test started and has not reaped.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let mut applier_err = String::new();
    std::io::Read::read_to_string(applier.0.stderr.as_mut().unwrap(), &mut applier_err).unwrap();
    std::io::Read::read_to_string(&mut said, &mut seen).unwrap();
    let ran = reader.wait().unwrap();
    assert!(ran.success(), "{seen}");
    applier.0.wait().unwrap();
    assert!(
        applier_err.contains(&format!("waiting for pid {}: `", reader.id())),
        "{applier_err}"
    );
    assert_eq!((common::selected(THP), common::read_trim(POOL)), before);
}
