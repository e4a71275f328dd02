//! `hugelab advise` on stored evidence: the advice a careful engineer would give for FASTER,
//! SLOWER, inconclusive, FLAGGED and stall-heavy runs; artefacts the real tools accept
//! (systemd-analyze, tuned's profile loader, virt-xml-validate); PostgreSQL's own pool size;
//! and the round trip advise → apply through the guard → `--check` → restore.

use crate::common;
use crate::common::advised::stored;
use std::path::{Path, PathBuf};
use std::process::Command;

fn advise(db: &Path, args: &[&str]) -> String {
    let mut v: Vec<String> = vec!["advise".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v.push("--db".into());
    v.push(db.display().to_string());
    common::hugelab_stdout(v)
}

fn tool(name: &str) -> bool {
    Command::new(name).arg("--help").output().is_ok()
}

/// THP `always` 10% faster: the plan names the setting with its evidence, and the artefacts
/// say the same thing in each tool's syntax.
#[test]
fn faster_arm_becomes_settings_with_their_evidence() {
    // The plan says each setting's value now: no other test changes one meanwhile.
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let id = stored(
        &db,
        &["never=thp=never", "always=thp=always,defrag=defer+madvise"],
        &[-0.10],
        &[false],
        &["sysbench", "memory", "run"],
        None,
        None,
    );
    let plan = advise(&db, &[&id.to_string()]);
    let flat = plan.replace("\n  ", " ");
    assert!(flat.starts_with("set thp.enabled = always, thp.defrag = defer+madvise — run 1: always vs never, wall_s -"), "{plan}");
    assert!(flat.contains("FASTER, 97% on huge pages"), "{plan}");
    assert!(plan.contains("  thp.enabled = always (now "), "{plan}");
    assert!(plan.contains("not measured: the latency cost"), "{plan}");
    let cmdline = advise(&db, &[&id.to_string(), "--format", "cmdline"]);
    assert!(
        cmdline.trim_end().ends_with("transparent_hugepage=always"),
        "{cmdline}"
    );
    assert!(
        cmdline.contains("not on the command line (sysfs only): thp.defrag"),
        "{cmdline}"
    );
    let tmpfiles = advise(&db, &[&id.to_string(), "--format", "tmpfiles"]);
    assert!(
        tmpfiles.contains("w /sys/kernel/mm/transparent_hugepage/defrag - - - - defer+madvise"),
        "{tmpfiles}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&advise(&db, &[&id.to_string(), "--format", "json"])).unwrap();
    assert_eq!(json["schema"], "hugelab.advice/1");
    // `--json`, as every command with a JSON record takes it, is the same record.
    let by_flag: serde_json::Value =
        serde_json::from_str(&advise(&db, &[&id.to_string(), "--json"])).unwrap();
    assert_eq!(by_flag, json);
    assert!(
        json["hugelab_version"]
            .as_str()
            .unwrap()
            .starts_with(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(json["adopt"], "always");
    assert_eq!(json["evidence"][0]["finding"], "adopt");
}

/// SLOWER, inconclusive and FLAGGED arms: no change, each said with what it reached; the
/// FLAGGED arm's large apparent gain is refused.
/// MongoDB 8.0's `always` profile with an mTHP size: the khugepaged setting is advised with
/// the rest, the mTHP size on the kernel command line as `thp_anon=`, the sysfs-only settings
/// named as such.
#[test]
fn todays_thp_profile_and_an_mthp_size_are_advised_in_todays_terms() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let id = stored(
        &db,
        &[
            "never=thp=never",
            "mongo=thp=always,defrag=defer+madvise,khugepaged.max_ptes_none=0,mthp.64K=always",
        ],
        &[-0.10],
        &[false],
        &["sysbench", "memory", "run"],
        None,
        None,
    );
    let plan = advise(&db, &[&id.to_string()]);
    assert!(
        plan.contains("  khugepaged.max_ptes_none = 0 (now "),
        "{plan}"
    );
    let cmdline = advise(&db, &[&id.to_string(), "--format", "cmdline"]);
    assert!(
        cmdline
            .trim_end()
            .ends_with("transparent_hugepage=always thp_anon=64K:always"),
        "{cmdline}"
    );
    assert!(
        cmdline.contains(
            "not on the command line (sysfs only): thp.defrag, khugepaged.max_ptes_none;"
        ),
        "{cmdline}"
    );
    let tmpfiles = advise(&db, &[&id.to_string(), "--format", "tmpfiles"]);
    assert!(
        tmpfiles
            .contains("w /sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none - - - - 0"),
        "{tmpfiles}"
    );
}

/// A service measured better on THP `madvise` (or `never`) than the rest: the unit line that
/// gives it that mode alone (`MemoryTHP=`), and whether this machine's systemd has it, checked.
#[test]
fn a_service_mode_of_its_own_is_advised_as_memory_thp_with_the_systemd_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    stored(
        &db,
        &[
            "always=thp=always,server.arg=--disable-thp,server.arg=no",
            "madvise=thp=madvise,server.arg=--disable-thp,server.arg=no",
        ],
        &[-0.10],
        &[false],
        &["redis-benchmark", "-q"],
        Some("redis"),
        None,
    );
    let service = advise(&db, &["--for", "redis", "--format", "service"]);
    assert!(service.contains("\nMemoryTHP=madvise\n"), "{service}");
    assert!(service.contains("disable-thp no"), "{service}");
    let plan = advise(&db, &["--for", "redis"]);
    let flat = plan.replace("\n  ", " ");
    let version = Command::new("systemctl")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
    let said = match version {
        Some(v) if v >= 260 => format!("this machine's systemd {v} has it"),
        Some(v) => format!("this machine's systemd {v} does not have it"),
        None => "no systemctl was found".to_string(),
    };
    assert!(
        flat.contains("MemoryTHP= needs systemd 260+") && flat.contains(&said),
        "{plan}"
    );
}

#[test]
fn slower_inconclusive_and_flagged_evidence_gives_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    stored(
        &db,
        &[
            "never=thp=never",
            "always=thp=always",
            "madvise=thp=madvise",
            "mthp=mthp.64K=always",
        ],
        &[0.12, 0.0, -0.3],
        &[false, false, true],
        &["app"],
        None,
        None,
    );
    let plan = advise(&db, &[]).replace("\n  ", " ");
    assert!(
        plan.starts_with("no change: no arm was measurably better"),
        "{plan}"
    );
    assert!(plan.contains("always (run 1) SLOWER"), "{plan}");
    assert!(
        plan.contains("mthp (run 1) FLAGGED (no advice from it)"),
        "{plan}"
    );
    assert!(plan.contains("note: do not adopt always:"), "{plan}");
    assert!(!plan.contains("\nset:"), "{plan}");
    let sysctl = advise(&db, &["--format", "sysctl"]);
    assert!(sysctl.contains("nothing here is a sysctl"), "{sysctl}");
}

/// A run traced with `--trace`: the stall cost of the adopted arm is part of its evidence.
#[test]
fn stall_heavy_evidence_is_shown_with_the_advice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    stored(
        &db,
        &["never=thp=never", "always=thp=always"],
        &[-0.08],
        &[false],
        &["app"],
        None,
        Some(40.0),
    );
    let plan = advise(&db, &[]);
    assert!(
        plan.contains("stalls: compaction +40.0 ms per trial"),
        "{plan}"
    );
    assert!(!plan.contains("not measured: the latency cost"), "{plan}");
}

/// A stored run whose THP-always-with-a-pool arm was faster, for the artefact tests.
fn faster_with_a_pool(dir: &Path) -> PathBuf {
    let db = dir.join("a.db");
    stored(
        &db,
        &["never=thp=never", "fast=thp=always,hugetlb.2M=16"],
        &[-0.10],
        &[false],
        &["app"],
        None,
        None,
    );
    db
}

/// The systemd unit passes `systemd-analyze verify`.
#[test]
#[cfg_attr(
    missing_systemd_analyze,
    ignore = "needs systemd-analyze (apt-get install systemd; .ci/run does)"
)]
fn the_systemd_unit_passes_systemd_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let db = faster_with_a_pool(dir.path());
    assert!(
        tool("systemd-analyze"),
        "systemd-analyze is needed (apt-get install systemd)"
    );
    {
        let unit = dir.path().join("hugelab-advice.service");
        advise(&db, &["--format", "systemd", "-o", unit.to_str().unwrap()]);
        let text = std::fs::read_to_string(&unit).unwrap();
        assert!(
            text.contains(
                "ExecStart=/bin/sh -c 'echo always > /sys/kernel/mm/transparent_hugepage/enabled'"
            ),
            "{text}"
        );
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&unit)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "systemd-analyze verify: {err}\n{text}"
        );
        assert!(!err.contains("hugelab-advice.service:"), "{err}");
    }
}

/// The tuned profile loads with tuned's own profile loader.
#[test]
#[cfg_attr(
    missing_tuned,
    ignore = "needs tuned's profile loader (apt-get install tuned; .ci/run does)"
)]
fn the_tuned_profile_loads_with_tuneds_loader() {
    let dir = tempfile::tempdir().unwrap();
    let db = faster_with_a_pool(dir.path());
    let tuned_dir = dir.path().join("profiles/hugelab");
    std::fs::create_dir_all(&tuned_dir).unwrap();
    let conf = tuned_dir.join("tuned.conf");
    advise(&db, &["--format", "tuned", "-o", conf.to_str().unwrap()]);
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.contains("[vm]\ntransparent_hugepages=always")
            && text.contains("[sysctl]\nvm.nr_hugepages=16"),
        "{text}"
    );
    assert!(
        Path::new("/usr/lib/python3/dist-packages/tuned/profiles/loader.py").exists(),
        "tuned's profile loader is needed (apt-get install tuned)"
    );
    {
        let script = format!(
            "import sys; sys.path.insert(0, '/usr/lib/python3/dist-packages')\n\
import tuned.profiles as p, tuned.utils.global_config as g\n\
from tuned.profiles.variables import Variables\n\
loader = p.Loader(p.Locator(['{}']), p.Factory(), p.Merger(), g.GlobalConfig(), Variables())\n\
prof = loader.load(['hugelab'])\n\
print(sorted(prof.units.keys()), dict(prof.units['vm'].options), dict(prof.units['sysctl'].options))\n",
            dir.path().join("profiles").display()
        );
        let out = Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tuned's loader refused the profile: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains("'transparent_hugepages': 'always'")
                && said.contains("'vm.nr_hugepages': '16'"),
            "{said}"
        );
    }
}

/// A QEMU run whose hugetlb-2m arm was faster: the libvirt XML validates inside a domain with
/// virt-xml-validate, and the pool is the guest's RAM in 2 MiB pages.
#[cfg_attr(
    missing_virt_xml_validate,
    ignore = "needs virt-xml-validate (apt-get install libvirt-clients; .ci/run does)"
)]
#[test]
fn qemu_advice_is_valid_libvirt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    stored(
        &db,
        &["4k=qemu.backing=4k", "h2m=qemu.backing=hugetlb-2m"],
        &[-0.05],
        &[false],
        &["qemu-system-x86_64", "-m", "1G", "-nographic"],
        None,
        None,
    );
    let json: serde_json::Value =
        serde_json::from_str(&advise(&db, &["--for", "qemu", "--format", "json"])).unwrap();
    assert_eq!(json["adopt"], "h2m");
    assert_eq!(json["settings"][0]["value"], "512", "{json}");
    let xml = json["service"][0]["line"].as_str().unwrap().to_string();
    assert!(xml.contains("<hugepages>"), "{xml}");
    assert!(
        tool("virt-xml-validate"),
        "no virt-xml-validate (apt-get install libvirt-clients; .ci/run does)"
    );
    let domain = format!(
        "<domain type='kvm'><name>g</name><memory unit='GiB'>1</memory>{xml}<os><type arch='x86_64'>hvm</type></os></domain>"
    );
    let file = dir.path().join("domain.xml");
    std::fs::write(&file, domain).unwrap();
    let out = Command::new("virt-xml-validate")
        .arg(&file)
        .arg("domain")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pg_bin() -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|d| Some(d.ok()?.path().join("bin")))
        .filter(|b| b.join("postgres").exists())
        .collect();
    v.sort();
    v.pop()
}

/// `--for postgres --pg-datadir`: the pool PostgreSQL itself computes for the data directory
/// (plus the 2-page margin), and `huge_pages = on` from the arm that was faster.
#[cfg_attr(
    missing_postgres,
    ignore = "needs PostgreSQL (apt-get install postgresql; .ci/run does)"
)]
#[cfg_attr(unprivileged, ignore = "needs root: runs initdb as the postgres user")]
#[test]
fn postgres_pool_is_what_postgres_computes() {
    require_root!();
    let (Some(bin), Some(pg)) = (pg_bin(), hugelab::probe::user::lookup("postgres")) else {
        panic!("no PostgreSQL or no postgres user (apt-get install postgresql; .ci/run does)");
    };
    let dir = tempfile::tempdir().unwrap();
    Command::new("chown")
        .arg("postgres")
        .arg(dir.path())
        .status()
        .unwrap();
    let data = dir.path().join("data");
    let as_pg = |prog: PathBuf, args: Vec<String>| {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new(prog);
        c.args(args).uid(pg.uid).gid(pg.gid).current_dir(dir.path());
        c
    };
    let d = data.display().to_string();
    common::succeed(&mut as_pg(
        bin.join("initdb"),
        vec!["-D".into(), d.clone(), "-A".into(), "trust".into()],
    ));
    std::fs::write(
        data.join("postgresql.auto.conf"),
        "shared_buffers = '256MB'\n",
    )
    .unwrap();
    let said = common::succeed(&mut as_pg(
        bin.join("postgres"),
        vec![
            "-D".into(),
            d.clone(),
            "-C".into(),
            "shared_memory_size_in_huge_pages".into(),
        ],
    ));
    let need: u64 = String::from_utf8_lossy(&said.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(
        need > 128,
        "256 MB of shared buffers need more than 128 pages: {need}"
    );
    let db = dir.path().join("a.db");
    stored(
        &db,
        &[
            "off=server.arg=-c,server.arg=huge_pages=off",
            "hugetlb-2m=server.arg=-c,server.arg=huge_pages=on,hugetlb.2M=100,expect=hugetlb-2m",
        ],
        &[-0.06],
        &[false],
        &["pgbench", "-S"],
        Some("postgres"),
        None,
    );
    let json: serde_json::Value = serde_json::from_str(&advise(
        &db,
        &[
            "--for",
            "postgres",
            "--format",
            "json",
            "--pg-datadir",
            &d,
            "--user",
            "postgres",
            "--pg-bin",
            bin.join("postgres").to_str().unwrap(),
        ],
    ))
    .unwrap();
    let pool = json["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["knob"]["knob"] == "hugetlb_pages")
        .unwrap_or_else(|| panic!("no pool in {json}"));
    assert_eq!(pool["value"], (need + 2).to_string(), "{json}");
    assert_eq!(json["service"][0]["line"], "huge_pages = on");
}

/// Advise → apply through the guard → `--check` passes; restored → `--check` fails with the
/// differences (exit 3).
#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn check_tells_a_machine_that_follows_the_advice() {
    require_root!();
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    stored(
        &db,
        &["never=thp=never", "always=thp=always,hugetlb.2M=4"],
        &[-0.10],
        &[false],
        &["app"],
        None,
        None,
    );
    let file = dir.path().join("advice.json");
    advise(&db, &["--format", "json", "-o", file.to_str().unwrap()]);
    let f = file.to_str().unwrap();
    let before = common::hugelab_exits(["advise", "--check", f], 3);
    assert!(
        before.contains("DIFFERS  thp.enabled: madvise, advised always"),
        "{before}"
    );
    {
        use hugelab::control::{Guard, Knob};
        let mut g = Guard::system().unwrap();
        g.set(Knob::ThpEnabled, "always").unwrap();
        g.set(
            Knob::HugetlbPages {
                size: 2 << 20,
                node: None,
            },
            "4",
        )
        .unwrap();
        let after = common::hugelab_exits(["advise", "--check", f], 0);
        assert!(after.contains("this machine follows"), "{after}");
        assert!(after.contains("ok       thp.enabled = always"), "{after}");
        // The sysctl.d lines apply with sysctl itself (the guard holds the pool's old value).
        g.set(
            Knob::HugetlbPages {
                size: 2 << 20,
                node: None,
            },
            "0",
        )
        .unwrap();
        let conf = dir.path().join("90-hugelab.conf");
        advise(&db, &["--format", "sysctl", "-o", conf.to_str().unwrap()]);
        common::succeed(Command::new("sysctl").arg("-p").arg(&conf));
        assert_eq!(common::read_trim("/proc/sys/vm/nr_hugepages"), "4");
    }
    // The guard restored both on drop.
    assert_eq!(
        common::selected("/sys/kernel/mm/transparent_hugepage/enabled"),
        "madvise"
    );
    common::hugelab_exits(["advise", "--check", f], 3);
}
