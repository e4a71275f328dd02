//! `advise --platform`: from a stored THP run and a stored PostgreSQL hugetlb run, each
//! engine's canary node-pool artefact passes that engine's schema (tests/fixtures/engines: the
//! documented example passes it, a planted unknown field fails it), names the canary label and
//! pool, and the plan beside it lists what the engine cannot set with the DaemonSet as the
//! lever for those. GKE's 60% share of a node's memory refuses a pool too large for the node.

use crate::common;
use crate::common::advised::stored;
use std::path::{Path, PathBuf};
use std::process::Command;

/// THP `always` with defer+madvise and a khugepaged setting, 10% faster than `never`.
fn thp_run(dir: &Path) -> PathBuf {
    let db = dir.join("thp.db");
    stored(
        &db,
        &[
            "never=thp=never",
            "always=thp=always,defrag=defer+madvise,khugepaged.scan_sleep_millisecs=1000",
        ],
        &[-0.10],
        &[false],
        &["sysbench", "memory", "run"],
        None,
        None,
    );
    db
}

/// PostgreSQL with huge_pages=on on a 600-page 2 MiB pool, 6% faster than huge_pages=off.
fn pg_run(dir: &Path) -> PathBuf {
    let db = dir.join("pg.db");
    stored(
        &db,
        &[
            "off=server.arg=-c,server.arg=huge_pages=off",
            "hugetlb-2m=server.arg=-c,server.arg=huge_pages=on,hugetlb.2M=600,expect=hugetlb-2m",
        ],
        &[-0.06],
        &[false],
        &["pgbench", "-S"],
        Some("postgres"),
        None,
    );
    db
}

/// `hugelab advise 1 --platform P ARGS -o FILE --db DB`: the artefact and the plan printed.
fn advise(db: &Path, platform: &str, args: &[&str], file: &Path) -> (String, String) {
    let out = common::succeed(
        Command::new(env!("CARGO_BIN_EXE_hugelab"))
            .args(["advise", "1", "--platform", platform])
            .args(args)
            .arg("-o")
            .arg(file)
            .arg("--db")
            .arg(db),
    );
    (
        std::fs::read_to_string(file).unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engines")
}

/// Whether `engine`'s schema check accepts `file`.
fn valid(engine: &str, file: &Path) -> Result<(), String> {
    let out = Command::new("python3")
        .arg(fixtures().join("check.py"))
        .arg(engine)
        .arg(file)
        .output()
        .expect("python3 runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The artefact passes; the same with `field` misspelt as `planted` fails; and the engine's
/// documented example passes the same schema, so the check is the engine's shape and not ours.
fn schema_holds(engine: &str, ext: &str, text: &str, field: &str, planted: &str) {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join(format!("good.{ext}"));
    std::fs::write(&good, text).unwrap();
    if let Err(e) = valid(engine, &good) {
        panic!("{engine}: the artefact fails its schema: {e}\n{text}");
    }
    assert!(text.contains(field), "{field} not in\n{text}");
    let bad = dir.path().join(format!("bad.{ext}"));
    std::fs::write(&bad, text.replacen(field, planted, 1)).unwrap();
    assert!(
        valid(engine, &bad).is_err(),
        "{engine}: a planted {planted} passed the schema"
    );
    let example = fixtures().join(format!("{engine}.example.{ext}"));
    valid(engine, &example).unwrap_or_else(|e| panic!("{engine}'s documented example: {e}"));
}

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs PyYAML and jsonschema (pip install kubernetes-validate brings both)"
)]
fn each_platform_writes_an_artefact_its_schema_accepts_and_says_what_it_cannot_set() {
    let dir = tempfile::tempdir().unwrap();
    let (thp, pg) = (thp_run(dir.path()), pg_run(dir.path()));
    let label = ["--node-label", "pool=canary", "--node-memory", "16G"];
    let f = |name: &str| dir.path().join(name);

    // GKE: THP mode and defrag as its enums, the pool in hugepageConfig; khugepaged not.
    let (gke, plan) = advise(&thp, "gke", &label, &f("gke.yaml"));
    assert!(
        gke.contains("transparentHugepageEnabled: TRANSPARENT_HUGEPAGE_ENABLED_ALWAYS")
            && gke.contains(
                "transparentHugepageDefrag: TRANSPARENT_HUGEPAGE_DEFRAG_DEFER_WITH_MADVISE"
            )
            && gke.contains("--node-labels=pool=canary")
            && gke.contains("node-pools create hugecanary"),
        "{gke}"
    );
    for text in [&gke, &plan] {
        assert!(
            text.contains("cannot set khugepaged.scan_sleep_millisecs = 1000")
                && text.contains("--format daemonset --node-label pool=canary"),
            "{text}"
        );
    }
    schema_holds(
        "gke",
        "yaml",
        &gke,
        "transparentHugepageDefrag:",
        "transparentHugepageDefrg:",
    );
    let (gke_pg, _) = advise(&pg, "gke", &label, &f("gke-pg.yaml"));
    assert!(
        gke_pg.contains("hugepageConfig:\n    hugepage_size2m: 600"),
        "{gke_pg}"
    );
    assert!(gke_pg.contains("GKE allows at most 60%"), "{gke_pg}");
    schema_holds("gke", "yaml", &gke_pg, "hugepage_size2m", "hugepage_size2M");

    // AKS: JSON without comments, so the plan beside it says what it cannot set.
    let for_pg = [&label[..], &["--for", "postgres"]].concat();
    let (aks, plan) = advise(&pg, "aks", &for_pg, &f("aks.json"));
    assert_eq!(aks.trim(), "{}", "{aks}");
    assert!(
        plan.contains(
            "cannot set hugetlb.2M = 600: AKS's custom node configuration reserves no hugetlb pool"
        ) && plan.contains("--labels pool=canary")
            && plan.contains("not in it: the service's own lines (`hugelab advise 1 --for postgres --format service`)"),
        "{plan}"
    );
    // Its pool goes through the DaemonSet, at run time: the plan says how it reaches the
    // scheduler. GKE's is reserved at boot.
    assert!(
        plan.contains("with the DaemonSet, the pools are set at run time")
            && plan.contains("a pod that requests them stays Pending"),
        "{plan}"
    );
    let (_, gke_plan) = advise(&pg, "gke", &label, &f("gke-pg-2.yaml"));
    assert!(
        gke_plan.contains("the pools are reserved as the node boots")
            && !gke_plan.contains("Pending"),
        "{gke_plan}"
    );
    let (aks, _) = advise(&thp, "aks", &label, &f("aks-thp.json"));
    let v: serde_json::Value = serde_json::from_str(&aks).unwrap();
    assert_eq!(v["transparentHugePageEnabled"], "always");
    assert_eq!(v["transparentHugePageDefrag"], "defer+madvise");
    schema_holds(
        "aks",
        "json",
        &aks,
        "transparentHugePageDefrag",
        "transparentHugePageDefragment",
    );

    // Bottlerocket: the label, THP at run time, the pool at boot.
    let (br, _) = advise(&pg, "bottlerocket", &label, &f("br.toml"));
    assert!(
        br.contains("\"pool\" = \"canary\"") && br.contains("\"2Mi\" = { count = \"600\" }"),
        "{br}"
    );
    schema_holds(
        "bottlerocket",
        "toml",
        &br,
        "\nessential = ",
        "\nesential = ",
    );
    // Upstream's per-NUMA form of the same count passes the same schema.
    let numa = dir.path().join("br-numa.toml");
    std::fs::write(
        &numa,
        br.replace("count = \"600\"", "count = \"0:300,1:300\""),
    )
    .unwrap();
    valid("bottlerocket", &numa).unwrap();
    let (br, _) = advise(&thp, "bottlerocket", &label, &f("br-thp.toml"));
    assert!(br.contains("defrag = \"defer+madvise\""), "{br}");
    schema_holds("bottlerocket", "toml", &br, "\ndefrag =", "\ndefragment =");

    // OpenShift: every knob (khugepaged through the sysfs plugin), the pool on the kernel
    // command line, the MachineConfigPool selecting the labelled nodes.
    let (os, plan) = advise(&thp, "openshift", &label, &f("os.yaml"));
    assert!(!plan.contains("cannot set"), "{plan}");
    assert!(
        os.contains("/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs=1000")
            && os.contains("transparent_hugepages=always"),
        "{os}"
    );
    let pool = common::object_of(&os, "MachineConfigPool");
    assert_eq!(
        pool["spec"]["nodeSelector"]["matchLabels"],
        serde_json::json!({ "pool": "canary" }),
        "{os}"
    );
    schema_holds(
        "openshift",
        "yaml",
        &os,
        "\"nodeSelector\"",
        "\"nodeSelecter\"",
    );
    let (os_pg, _) = advise(&pg, "openshift", &label, &f("os-pg.yaml"));
    let profile = &common::object_of(&os_pg, "Tuned")["spec"]["profile"][0]["data"];
    assert!(
        profile.as_str().is_some_and(
            |d| d.contains("[bootloader]\ncmdline_hugelab=hugepagesz=2M hugepages=600")
        ),
        "{os_pg}"
    );
    schema_holds(
        "openshift",
        "yaml",
        &os_pg,
        "\"priority\": 20",
        "\"prority\": 20",
    );
}

/// `linuxConfig`'s fields in a gcloud from before GKE's THP fields: its reference for
/// `--system-config-from-file` lists `sysctl`, `hugepageConfig` and `cgroupMode` only.
const OLDER_GCLOUD_FIELDS: [&str; 3] = ["sysctl", "hugepageConfig", "cgroupMode"];

/// An older gcloud's loader, planted as the GKE schema less the fields it does not know,
/// refuses the THP file naming a field; the file and the plan beside it name that field and the
/// GKE release and gcloud it needs. Each other engine's plan names its minimum release.
#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs PyYAML and jsonschema (pip install kubernetes-validate brings both)"
)]
fn each_artefact_names_the_releases_its_fields_need_and_an_older_loader_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let (thp, pg) = (thp_run(dir.path()), pg_run(dir.path()));
    let label = ["--node-label", "pool=canary", "--node-memory", "16G"];
    let f = |name: &str| dir.path().join(name);
    let (gke, plan) = advise(&thp, "gke", &label, &f("gke.yaml"));
    // The planted loader: check.py beside a schema whose linuxConfig has only the old fields.
    let old = dir.path().join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::copy(fixtures().join("check.py"), old.join("check.py")).unwrap();
    let mut schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("gke.schema.json")).unwrap())
            .unwrap();
    let fields = schema["properties"]["linuxConfig"]["properties"]
        .as_object_mut()
        .unwrap();
    fields.retain(|k, _| OLDER_GCLOUD_FIELDS.contains(&k.as_str()));
    std::fs::write(old.join("gke.schema.json"), schema.to_string()).unwrap();
    let out = Command::new("python3")
        .arg(old.join("check.py"))
        .arg("gke")
        .arg(f("gke.yaml"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "the older loader took {gke}");
    let refused = String::from_utf8_lossy(&out.stderr);
    let unknown: Vec<&str> = ["transparentHugepageEnabled", "transparentHugepageDefrag"]
        .into_iter()
        .filter(|k| refused.contains(k))
        .collect();
    assert!(!unknown.is_empty(), "{refused}");
    for text in [&gke, &plan] {
        let warning = text
            .lines()
            .find(|l| l.contains("needs GKE 1.34.1-gke.3084001 or later"))
            .unwrap_or_else(|| panic!("no GKE release in\n{text}"));
        assert!(
            unknown.iter().all(|k| warning.contains(k)) && warning.contains("gcloud"),
            "{warning}"
        );
    }
    // A pool alone needs no THP field; its limit says where GKE documents it.
    let (gke_pg, _) = advise(&pg, "gke", &label, &f("gke-pg.yaml"));
    assert!(
        !gke_pg.contains("1.34.1") && gke_pg.contains("60% of available memory on the node"),
        "{gke_pg}"
    );
    let needs = |platform: &str, db: &Path, release: &str| {
        let (_, plan) = advise(db, platform, &label, &f(&format!("{platform}.out")));
        assert!(plan.contains(&format!("needs {release}")), "{plan}");
        plan
    };
    needs("aks", &thp, "Azure CLI 2.35.0 or later");
    let br = needs("bottlerocket", &pg, "Bottlerocket 1.64.0 or later");
    assert!(br.contains("mind: essential = true"), "{br}");
    let os = needs(
        "openshift",
        &pg,
        "OpenShift Container Platform 4.9 or later",
    );
    assert!(
        os.contains("belongs to 2 custom roles") && os.contains("reboots the pool's nodes"),
        "{os}"
    );
    // The DaemonSet says it in its own comment.
    let (ds, _) = advise(&pg, "daemonset", &label, &f("ds.yaml"));
    assert!(ds.contains("Kubernetes 1.14 or later"), "{ds}");
}

#[test]
fn a_pool_over_gke_s_share_of_the_node_is_refused_naming_the_memory_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let pg = pg_run(dir.path());
    // 600 × 2 MiB = 1.17 GiB on a 1.5 GiB node: 78%.
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args(["advise", "1", "--platform", "gke", "--node-memory", "1536M"])
        .arg("--db")
        .arg(&pg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("78%") && err.contains("at most 60%") && err.contains("--node-memory"),
        "{err}"
    );
    // An AKS pool name longer than AKS allows is refused before anything is written.
    let out = Command::new(env!("CARGO_BIN_EXE_hugelab"))
        .args([
            "advise",
            "1",
            "--platform",
            "aks",
            "--pool",
            "huge-canary-pool",
        ])
        .arg("--db")
        .arg(&pg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 12"));
}

/// The `hugelab advise RUN …` commands docs/fleet.md shows, as argument lists (a trailing `\`
/// continues a line).
fn fleet_doc_advise_commands() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fleet.md"))
        .unwrap();
    let joined = doc.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("hugelab advise RUN "))
        .map(|l| l.split_whitespace().skip(1).map(String::from).collect())
        .collect()
}

#[test]
#[cfg_attr(
    missing_kubernetes_validate,
    ignore = "needs PyYAML, jsonschema and kubernetes-validate (pip install kubernetes-validate)"
)]
fn the_node_pool_commands_docs_fleet_shows_write_what_their_engine_accepts() {
    let _lock = common::knob_lock(); // the DaemonSet's advice reads the live settings
    let dir = tempfile::tempdir().unwrap();
    let db = thp_run(dir.path());
    let commands = fleet_doc_advise_commands();
    assert!(commands.len() >= 2, "{commands:?}");
    for args in commands {
        let at = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .map(|i| args[i + 1].clone())
        };
        let engine = at("--platform").or(at("--format")).unwrap();
        let out = at("-o").unwrap();
        let label = at("--node-label").unwrap();
        let mut args = args.clone();
        args[1] = "1".into();
        let file = dir.path().join(&out);
        let i = args.iter().position(|a| a == "-o").unwrap();
        args[i + 1] = file.display().to_string();
        args.extend(["--db".into(), db.display().to_string()]);
        common::succeed(Command::new(env!("CARGO_BIN_EXE_hugelab")).args(&args));
        let text = std::fs::read_to_string(&file).unwrap();
        match engine.as_str() {
            "daemonset" => {
                common::kubernetes_validates(&text, "\"nodeSelector\"", "\"nodeSelecter\"")
            }
            e => valid(e, &file).unwrap_or_else(|err| panic!("{args:?}: {err}\n{text}")),
        }
        let (k, v) = label.split_once('=').unwrap();
        assert!(
            text.contains(k) && text.contains(v),
            "{args:?} lost the label:\n{text}"
        );
    }
}
