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
            "huge=on",
            "--image",
            "example.org/hugelab:0.1.0",
        ],
    );
    // On the canary nodes only, with the image asked for and the settings said up front. The
    // label's value is a string to Kubernetes' YAML 1.1 reader too (the schema check below reads
    // it with one, where a bare `on` would be a boolean).
    let ds = common::object_of(&text, "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(
        pod["nodeSelector"],
        serde_json::json!({ "huge": "on" }),
        "{text}"
    );
    assert_eq!(
        pod["containers"][0]["image"], "example.org/hugelab:0.1.0",
        "{text}"
    );
    assert!(text.contains("#   thp.enabled = always"), "{text}");
    // Its pool is set at run time: the kubelet must restart before pods requesting it schedule.
    assert!(
        text.contains("# Note: the pools are set at run time") && text.contains("stays Pending"),
        "{text}"
    );
    // The container's arguments are a hugelab command line; with a pool, the applier checks
    // its node advertises it (its name from the pod's spec.nodeName, a ServiceAccount that may
    // read nodes/status) and restarts the kubelet in the host's namespaces (hostPID).
    let args = common::container_args(&text);
    assert_eq!(args[..2], ["apply", "/etc/hugelab/advice.json"], "{args:?}");
    assert!(args.contains(&"--restart-kubelet".to_string()), "{args:?}");
    let node_name = &pod["containers"][0]["env"][0];
    assert!(
        node_name["name"] == "NODE_NAME"
            && node_name["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
            && pod["serviceAccountName"] == "hugelab-apply"
            && pod["hostPID"] == true,
        "{text}"
    );
    let role = common::object_of(&text, "ClusterRole");
    assert_eq!(
        role["rules"],
        serde_json::json!([{ "apiGroups": [""], "resources": ["nodes/status"], "verbs": ["get"] }]),
        "{text}"
    );
    let binding = common::object_of(&text, "ClusterRoleBinding");
    assert!(
        binding["roleRef"]["name"] == role["metadata"]["name"]
            && binding["subjects"][0]["name"] == "hugelab-apply",
        "{text}"
    );
    // The ConfigMap holds the advice record `apply` reads: the same as --format json.
    let map = common::object_of(&text, "ConfigMap");
    assert_eq!(
        map["data"]["advice.json"],
        advise(&db, &["--format", "json"]),
        "{text}"
    );
    common::kubernetes_validates(&text, "\"nodeSelector\"", "\"nodeSelecter\"");
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

/// What `out` says up to the line holding `phrase` (a failure names what it said instead).
fn read_until(out: &mut impl BufRead, phrase: &str) -> String {
    let mut said = String::new();
    while !said.contains(phrase) {
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).unwrap() > 0,
            "ended before {phrase:?}: {said}"
        );
        said += &l;
    }
    said
}

/// `hugelab apply ADVICE ARGS…` started, its output read until it holds the settings.
fn apply_with(advice: &Path, args: &[&str]) -> (Applier, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .arg("apply")
        .arg(advice)
        .args(args)
        .env_remove("NODE_NAME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let said = read_until(&mut out, "holding them until stopped");
    assert!(said.contains("thp.enabled = always"), "{said}");
    assert!(said.contains("hugetlb.2M = 8"), "{said}");
    (Applier(child), said)
}

fn apply(advice: &Path) -> Applier {
    apply_with(advice, &[]).0
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
    let mut seen = read_until(&mut said, "measured under the settings");
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

/// An API server stand-in that answers `GET /api/v1/nodes/canary-1/status` as Kubernetes does:
/// the Node, whose `status.capacity` has `hugepages-2Mi: "0"` until the file `restarted` exists
/// in `dir` and `pool` after; a Status of 401 without the bearer token `stand-in-token`, and of
/// 404 for another node. Its URL, and the server to unblock when done.
fn stand_in(dir: &Path, pool: &'static str) -> (String, std::sync::Arc<tiny_http::Server>) {
    let server = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let (s, restarted) = (server.clone(), dir.join("restarted"));
    std::thread::spawn(move || {
        for req in s.incoming_requests() {
            let token = req.headers().iter().any(|h| {
                h.field.equiv("Authorization") && h.value.as_str() == "Bearer stand-in-token"
            });
            let status = |code: u16, reason: &str, message: &str| {
                format!(
                    r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}","reason":"{reason}","code":{code}}}"#
                )
            };
            let (code, body) = if !token {
                (401, status(401, "Unauthorized", "Unauthorized"))
            } else if req.url() != "/api/v1/nodes/canary-1/status" {
                (404, status(404, "NotFound", "nodes not found"))
            } else {
                let cap = if restarted.exists() { pool } else { "0" };
                (
                    200,
                    format!(
                        r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"canary-1"}},"status":{{"capacity":{{"cpu":"2","memory":"24Gi","hugepages-1Gi":"0","hugepages-2Mi":"{cap}","pods":"110"}}}}}}"#
                    ),
                )
            };
            let json: tiny_http::Header = "Content-Type: application/json".parse().unwrap();
            let resp = tiny_http::Response::from_string(body)
                .with_status_code(code)
                .with_header(json);
            let _ = req.respond(resp);
        }
    });
    (url, server)
}

/// On a Kubernetes node the applier reads, through the API server, whether its node advertises
/// the pool it set: it warns naming the node and the fix when it does not; with
/// `--restart-kubelet` it runs the restart command once and reads the node again until it does;
/// an API server that refuses it is named. The machine's values come back after each.
#[test]
#[cfg_attr(unprivileged, ignore = "needs root: changes kernel settings")]
fn the_applier_checks_its_node_advertises_the_pool_and_restarts_the_kubelet_when_asked() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = advice_file(dir.path());
    let before = (common::selected(THP), common::read_trim(POOL));
    let account = dir.path().join("account");
    std::fs::create_dir(&account).unwrap();
    std::fs::write(account.join("token"), "stand-in-token\n").unwrap();
    let (url, server) = stand_in(dir.path(), "16Mi");
    let at = [
        "--node",
        "canary-1",
        "--api-server",
        &url,
        "--service-account",
        account.to_str().unwrap(),
    ];
    // Not advertised, not asked to restart: a warning with the node, the gap and the fix.
    let (mut applier, said) = apply_with(&file, &at);
    assert!(
        said.contains("WARNING: node canary-1 advertises hugepages-2Mi 0 of the pool's 16M")
            && said.contains("a pod that requests hugepages-2Mi stays Pending")
            && said.contains("--restart-kubelet"),
        "{said}"
    );
    applier.signal(libc::SIGTERM);
    assert_eq!((common::selected(THP), common::read_trim(POOL)), before);
    // Asked: the command runs once, and the node is read again until it advertises the pool.
    let log = dir.path().join("restarts");
    let restart = format!(
        "echo kubelet >> {} && touch {}",
        log.display(),
        dir.path().join("restarted").display()
    );
    let asked = [&at[..], &["--restart-kubelet", &restart]].concat();
    let (mut applier, said) = apply_with(&file, &asked);
    assert!(
        said.contains(&format!("restarting its kubelet once (`{restart}`)"))
            && said.contains(
                "node canary-1 advertises hugepages-2Mi as large as the pools after its kubelet restarted"
            )
            && !said.contains("WARNING"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "kubelet\n");
    applier.signal(libc::SIGTERM);
    // Advertised already: nothing to restart.
    let (mut applier, said) = apply_with(&file, &asked);
    assert!(
        said.contains("advertises hugepages-2Mi as large as the pools: pods")
            && !said.contains("restarting"),
        "{said}"
    );
    applier.signal(libc::SIGTERM);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "kubelet\n");
    // An API server that refuses the token is named, with what a pod will see.
    std::fs::write(account.join("token"), "expired\n").unwrap();
    let (mut applier, said) = apply_with(&file, &at);
    assert!(
        said.contains("capacity cannot be read from the API server")
            && said.contains("401")
            && said.contains("Unauthorized"),
        "{said}"
    );
    applier.signal(libc::SIGTERM);
    server.unblock();
    assert_eq!((common::selected(THP), common::read_trim(POOL)), before);
    // The default restart command, as --help says: systemd's, in the host's namespaces.
    let help = common::hugelab_stdout(["apply", "--help"]);
    assert!(help.contains("systemctl restart kubelet"), "{help}");
}
