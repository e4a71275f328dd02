//! The deployment files in deploy/: the Grafana dashboard's structure (the schema fields it
//! uses), the alert rules and their unit tests under promtool, and the systemd unit under
//! systemd-analyze. (The dashboard's queries run against a real Prometheus in tests/exporter.rs.)

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(rel)
}

#[test]
fn grafana_dashboard_has_the_fields_grafana_needs() {
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(deploy("grafana/hugelab.json")).unwrap())
            .unwrap();
    assert!(d["title"].is_string() && d["uid"].as_str().unwrap().len() <= 40);
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36);
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(vars, ["datasource", "instance"]);
    let panels = d["panels"].as_array().unwrap();
    let mut ids = Vec::new();
    let mut cells = std::collections::HashSet::new();
    let mut queries = 0;
    for p in panels {
        let t = p["type"].as_str().unwrap();
        assert!(["timeseries", "row"].contains(&t), "panel type {t}");
        ids.push(p["id"].as_u64().unwrap());
        let g = &p["gridPos"];
        let (x, y, w, h) = (
            g["x"].as_u64().unwrap(),
            g["y"].as_u64().unwrap(),
            g["w"].as_u64().unwrap(),
            g["h"].as_u64().unwrap(),
        );
        assert!(x + w <= 24 && w > 0 && h > 0, "{}: gridPos {g}", p["title"]);
        // Panels do not overlap on Grafana's 24-column grid.
        for cx in x..x + w {
            for cy in y..y + h {
                assert!(
                    cells.insert((cx, cy)),
                    "{} overlaps another panel",
                    p["title"]
                );
            }
        }
        if t == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}");
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{} has no query", p["title"]);
        let mut refs: Vec<&str> = targets
            .iter()
            .map(|q| q["refId"].as_str().unwrap())
            .collect();
        refs.sort_unstable();
        refs.dedup();
        assert_eq!(refs.len(), targets.len(), "refIds repeat in {}", p["title"]);
        for q in targets {
            let e = q["expr"].as_str().unwrap();
            assert!(
                e.contains("instance=~\"$instance\""),
                "{e}: not filtered by host"
            );
            queries += 1;
        }
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "panel ids repeat");
    // The panels: pools by state, THP/mTHP success vs fallback, compaction stalls,
    // coverage of watched processes, huge pages per cgroup.
    let text = serde_json::to_string(&d).unwrap();
    for want in [
        "hugelab_hugetlb_pages",
        "fault_fallback",
        "anon_fault_fallback",
        "event=\\\"stall\\\"",
        "hugelab_process_huge_coverage_ratio",
        "hugelab_cgroup_huge_ratio",
        "hugelab_cgroup_hugetlb_bytes",
    ] {
        assert!(text.contains(want), "the dashboard lacks {want}");
    }
    assert!(queries >= 15);
}

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok()
}

#[test]
#[cfg_attr(
    missing_prometheus,
    ignore = "needs promtool (apt-get install prometheus)"
)]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    assert!(
        tool("promtool"),
        "no promtool (apt-get install prometheus; .ci/run does)"
    );
    let dir = deploy("prometheus");
    for args in [
        ["check", "rules", "hugelab-alerts.yml"],
        ["test", "rules", "hugelab-alerts.test.yml"],
    ] {
        common::succeed(Command::new("promtool").args(args).current_dir(&dir));
    }
}

#[test]
#[cfg_attr(missing_systemd_analyze, ignore = "needs systemd-analyze")]
fn systemd_unit_verifies() {
    assert!(
        tool("systemd-analyze"),
        "no systemd-analyze (apt-get install systemd)"
    );
    let unit = std::fs::read_to_string(deploy("systemd/hugelab-exporter.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/hugelab exporter"));
    // Verify it as installed, with this build's binary in place of /usr/bin/hugelab.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hugelab-exporter.service");
    std::fs::write(
        &path,
        unit.replace(
            "/usr/bin/hugelab",
            assert_cmd::cargo::cargo_bin("hugelab").to_str().unwrap(),
        ),
    )
    .unwrap();
    common::succeed(Command::new("systemd-analyze").arg("verify").arg(&path));
}

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs kubernetes-validate (pip install kubernetes-validate)"
)]
fn kubernetes_daemonset_passes_the_schema_check_and_runs_hugelab_s_own_arguments() {
    let path = deploy("kubernetes/hugelab-exporter.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    // The file is what `hugelab exporter --manifest` writes for the command line it names.
    let command: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("# Written by `hugelab "))
        .and_then(|l| l.strip_suffix(" --manifest FILE`."))
        .expect("the file names the command that wrote it")
        .split(' ')
        .map(String::from)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("exporter.yaml");
    common::succeed(
        Command::new(env!("CARGO_BIN_EXE_hugelab"))
            .args(&command)
            .arg("--manifest")
            .arg(&written),
    );
    assert!(
        std::fs::read_to_string(&written).unwrap() == text,
        "{} is not what hugelab writes now; write it again: cargo run --release -- {} --manifest {}",
        path.display(),
        command.join(" "),
        path.display()
    );
    // The container's arguments are a valid `hugelab exporter` command line, serving beyond the
    // pod's loopback on the port the pod exposes and Prometheus is told to scrape.
    let args = common::container_args(&text);
    assert_eq!(
        args[..3],
        ["exporter", "--listen", "0.0.0.0:9717"],
        "{args:?}"
    );
    let ds = common::object_of(&text, "DaemonSet");
    let pod = &ds["spec"]["template"];
    assert!(
        pod["spec"]["hostPID"] == true
            && pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 9717
            && pod["metadata"]["annotations"]["prometheus.io/port"] == "9717"
            && pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] == true,
        "{text}"
    );
    common::kubernetes_validates(&text, "\"hostPID\"", "\"hostPid\"");
    // A manifest whose exporter would listen on the pod's own loopback is refused, naming the fix.
    let err = common::hugelab_stderr(["exporter", "--manifest", "/dev/null"], 2);
    assert!(err.contains("give --listen 0.0.0.0:9717"), "{err}");
}

/// The fields of an AnalysisTemplate metric and of its job provider that Argo Rollouts'
/// `analysistemplates.argoproj.io` CRD (argoproj/argo-rollouts, manifests/crds/
/// analysis-template-crd.yaml) defines, as read there; the Job's own spec is Kubernetes'
/// JobSpec, checked by the Kubernetes schema below.
const ANALYSIS_METRIC_FIELDS: &str = "name count interval initialDelay failureLimit inconclusiveLimit consecutiveErrorLimit successCondition failureCondition provider";

/// The judgement docs/fleet.md writes as an analysis step (Argo Rollouts and Flagger).
const FLEET_STEP: [&str; 11] = [
    "judge",
    "--prometheus",
    "http://prometheus.monitoring:9090",
    "--canary",
    "node_pool=\"huge-canary\"",
    "--baseline",
    "node_pool=\"default\"",
    "--last",
    "30m",
    "--metric",
    "p99=avg by (instance) (http_p99_seconds{$sel}),lower,critical",
];

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs kubernetes-validate (pip install kubernetes-validate)"
)]
fn the_analysis_template_runs_the_judgement_as_a_job_that_passes_the_schema_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("analysis.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args(FLEET_STEP)
        .arg("--analysis-template")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Parsed as Kubernetes parses it (PyYAML, which kubernetes-validate brings): the metric's
    // fields are the CRD's, and the Job's container runs a valid `hugelab judge` command line
    // that fails the step only on WORSE or FLAGGED, printing one line of JSON.
    let script = format!(
        "import json, sys, yaml\n\
         t = yaml.safe_load(open(sys.argv[1]))\n\
         assert t['apiVersion'] == 'argoproj.io/v1alpha1' and t['kind'] == 'AnalysisTemplate', t\n\
         m = t['spec']['metrics'][0]\n\
         extra = set(m) - set('{ANALYSIS_METRIC_FIELDS}'.split())\n\
         assert not extra, extra\n\
         assert set(m['provider']) == {{'job'}} and set(m['provider']['job']) <= {{'metadata', 'spec'}}, m\n\
         j = m['provider']['job']\n\
         job = {{'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': dict(name='hugelab-judge', **j.get('metadata', {{}})), 'spec': j['spec']}}\n\
         yaml.safe_dump(job, open(sys.argv[2], 'w'))\n\
         print(json.dumps(j['spec']['template']['spec']['containers'][0]['args']))\n"
    );
    let job = dir.path().join("job.yaml");
    let py = common::succeed(
        Command::new("python3")
            .arg("-c")
            .arg(&script)
            .arg(&path)
            .arg(&job),
    );
    let args: Vec<String> = serde_json::from_slice(&py.stdout).unwrap();
    assert_eq!(args[0], "judge", "{args:?}");
    use clap::Parser;
    let parsed = hugelab::cli::Cli::try_parse_from(
        std::iter::once("hugelab".to_string()).chain(args.clone()),
    );
    assert!(parsed.is_ok(), "{args:?}: {:?}", parsed.err());
    let joined = args.join(" ");
    assert!(
        joined.contains("--fail-on worse,flagged")
            && joined.ends_with("--line")
            && joined.contains("--last 30m")
            && joined.contains("node_pool=\"huge-canary\"")
            && !joined.contains("--analysis-template"),
        "{joined}"
    );
    let job_text = std::fs::read_to_string(&job).unwrap();
    common::kubernetes_validates(&job_text, "restartPolicy", "restartpolicy");
    // An analysis step judges the window before it: an absolute window is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args([
            "judge",
            "--prometheus",
            "http://p:9090",
            "--canary",
            "a=\"1\"",
            "--baseline",
            "a=\"0\"",
            "--from",
            "1795447980",
            "--to",
            "1795491150",
            "--metric",
            "x=avg(x{$sel}),lower",
            "--analysis-template",
        ])
        .arg(dir.path().join("no.yaml"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fields of a Flagger Canary's `analysis.webhooks` entry and the webhook types, as Flagger
/// documents them (docs.flagger.app, "Webhooks"; fluxcd/flagger's CanaryWebhook type).
const FLAGGER_WEBHOOK_FIELDS: &str = "name type url muteAlert timeout retries metadata disableTLS";
const FLAGGER_WEBHOOK_TYPES: &str = "confirm-rollout pre-rollout rollout confirm-traffic-increase confirm-promotion post-rollout rollback event";

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs kubernetes-validate (pip install kubernetes-validate)"
)]
fn the_flagger_step_serves_the_judgement_as_a_webhook_that_passes_the_schema_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flagger.yaml");
    common::succeed(
        Command::new(env!("CARGO_BIN_EXE_hugelab"))
            .args(FLEET_STEP)
            .arg("--flagger")
            .arg(&path),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    common::kubernetes_validates(&text, "\"readinessProbe\"", "\"readinesProbe\"");
    // The container serves this judgement: a `hugelab judge` command line with --webhook on the
    // port the Service targets, failing only on WORSE or FLAGGED.
    let args = common::container_args(&text);
    let joined = args.join(" ");
    assert!(
        args[0] == "judge"
            && joined.contains("--webhook 0.0.0.0:8080")
            && joined.contains("--fail-on worse,flagged")
            && joined.contains("--last 30m")
            && !joined.contains("--flagger")
            && !joined.contains("--line"),
        "{joined}"
    );
    assert!(text.contains("\"containerPort\": 8080") && text.contains("\"port\": 8080"));
    // The Canary's webhook entry in the comment: Flagger's fields, a type it runs, and the
    // Service's address.
    let entry: String = text
        .lines()
        .skip_while(|l| !l.starts_with("#   analysis:"))
        .take_while(|l| l.starts_with("#   "))
        .map(|l| format!("{}\n", &l[4..]))
        .collect();
    let script = format!(
        "import sys, yaml\n\
         hooks = yaml.safe_load(sys.stdin.read())['analysis']['webhooks']\n\
         for h in hooks:\n\
         \x20   assert set(h) <= set('{FLAGGER_WEBHOOK_FIELDS}'.split()), h\n\
         \x20   assert h['type'] in '{FLAGGER_WEBHOOK_TYPES}'.split(), h\n\
         \x20   print(h['url'])\n"
    );
    let mut py = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    py.stdin
        .take()
        .unwrap()
        .write_all(entry.as_bytes())
        .unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success(), "{entry}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "http://hugelab-judge.NAMESPACE:8080/"
    );
}

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs kubernetes-validate (pip install kubernetes-validate)"
)]
fn each_step_writes_the_rollouts_node_selection_which_patches_a_pod_template_validly() {
    let dir = tempfile::tempdir().unwrap();
    for (step, engine) in [
        ("--analysis-template", "rollout"),
        ("--flagger", "deployment"),
    ] {
        let (file, placed) = (dir.path().join("step.yaml"), dir.path().join("placed.yaml"));
        common::succeed(
            Command::new(env!("CARGO_BIN_EXE_hugelab"))
                .args(FLEET_STEP)
                .args([step, file.to_str().unwrap(), "--placement"])
                .arg(&placed)
                .args(["--node-label", "node_pool=huge-canary"])
                .args(["--toleration", "dedicated=huge:NoSchedule"])
                .args(["--toleration", "hugelab.io/canary:NoExecute"]),
        );
        // The step's own command line judges; the placement options are not in it.
        let step_text = std::fs::read_to_string(&file).unwrap();
        for flag in ["--placement", "--node-label", "--toleration"] {
            assert!(
                !step_text.contains(flag),
                "{flag} in the step:\n{step_text}"
            );
        }
        let text = std::fs::read_to_string(&placed).unwrap();
        assert!(
            text.contains(&format!("kubectl patch {engine} NAME")),
            "{text}"
        );
        // Patched into a pod template (the Flagger step's own Deployment, merged as a strategic
        // merge patch merges maps), the result passes Kubernetes' strict schema: the selector
        // and the tolerations are fields of a pod spec, typed as it types them.
        let script = "import sys, yaml\n\
             def merge(a, b):\n\
             \x20   for k, v in b.items():\n\
             \x20       a[k] = merge(a.get(k, {}), v) if isinstance(v, dict) else v\n\
             \x20   return a\n\
             d = next(x for x in yaml.safe_load_all(open(sys.argv[1])) if x['kind'] == 'Deployment')\n\
             p = yaml.safe_load(open(sys.argv[2]))\n\
             assert p['spec']['template']['spec']['nodeSelector'] == {'node_pool': 'huge-canary'}, p\n\
             yaml.safe_dump(merge(d, p), open(sys.argv[3], 'w'))\n";
        let (flagger, merged) = (dir.path().join("f.yaml"), dir.path().join("merged.yaml"));
        common::succeed(
            Command::new(env!("CARGO_BIN_EXE_hugelab"))
                .args(FLEET_STEP)
                .arg("--flagger")
                .arg(&flagger),
        );
        common::succeed(
            Command::new("python3")
                .args(["-c", script])
                .args([&flagger, &placed, &merged]),
        );
        let merged = std::fs::read_to_string(&merged).unwrap();
        assert!(
            merged.contains("operator: Equal") && merged.contains("operator: Exists"),
            "{merged}"
        );
        common::kubernetes_validates(&merged, "nodeSelector:", "nodeSelecter:");
    }
    // A toleration whose effect is not a taint's is refused, naming the ones there are.
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args(FLEET_STEP)
        .args(["--flagger", "/dev/null", "--toleration", "a=b:Never"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("NoSchedule, PreferNoSchedule, NoExecute"),
        "{err}"
    );
}

#[test]
fn the_fleet_walk_through_s_hugelab_commands_are_command_lines_hugelab_accepts() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fleet.md"),
    )
    .unwrap();
    let walk = doc
        .split("## One service, end to end")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/fleet.md walks one service end to end");
    let lines: Vec<String> = walk
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.trim().trim_start_matches("sudo ").to_string())
        .filter(|l| l.starts_with("hugelab "))
        .collect();
    assert!(lines.len() >= 4, "{lines:?}");
    // Split as the shell splits them (quotes, a trailing comment).
    let split = common::succeed(
        Command::new("python3")
            .args([
                "-c",
                "import json, shlex, sys\nprint(json.dumps([shlex.split(l, comments=True) for l in sys.argv[1:]]))",
            ])
            .args(&lines),
    );
    let commands: Vec<Vec<String>> = serde_json::from_slice(&split.stdout).unwrap();
    use clap::Parser;
    for args in commands {
        let parsed = hugelab::cli::Cli::try_parse_from(&args);
        assert!(parsed.is_ok(), "{args:?}: {}", parsed.err().unwrap());
    }
    assert!(walk.contains("--placement placement.yaml"), "{walk}");
}
