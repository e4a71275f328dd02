//! Live-kernel tests (root): `status --json` agrees with the kernel's own files and with
//! hugeadm; a SIGKILLed settings holder is undone exactly by `hugelab restore`; SIGTERM
//! restores by itself; a test killed holding the knob lock has its settings put back by the
//! next holder. Every test holds the shared knob lock and puts settings back.

use crate::common;
use crate::common::{read_trim, selected};
use assert_cmd::Command;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const MTHP_64K: &str = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled";

fn status_json() -> serde_json::Value {
    common::hugelab_json(["status", "--json"])
}

fn meminfo_kb(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Start `hugelab hold SETTINGS…` and wait until it reports that it holds them.
fn start_hold(settings: &[&str]) -> std::process::Child {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .arg("hold")
        .args(settings)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("hold exited early").unwrap();
        if line.starts_with("holding") {
            break;
        }
    }
    child
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
#[cfg_attr(
    missing_hugeadm,
    ignore = "needs hugeadm (apt-get install libhugetlbfs-bin; .ci/run does)"
)]
fn status_agrees_with_kernel_files_and_hugeadm() {
    require_root!();
    let lock = common::knob_lock();
    let original = read_trim(POOL_2M);
    lock.set(POOL_2M, "3");
    let v = status_json();
    let hugeadm = std::process::Command::new("hugeadm")
        .arg("--pool-list")
        .output();
    lock.set(POOL_2M, &original);

    let pools = v["hugetlb"].as_array().unwrap();
    let p2m = pools.iter().find(|p| p["page_size"] == 2097152).unwrap();
    assert_eq!(p2m["total"], 3);
    assert_eq!(p2m["free"], 3);
    assert_eq!(
        v["memory"]["mem_total"].as_u64().unwrap(),
        meminfo_kb("MemTotal") * 1024
    );
    assert_eq!(v["memory"]["hugetlb"].as_u64().unwrap() % (2 << 20), 0);
    for p in pools {
        let kb = p["page_size"].as_u64().unwrap() / 1024;
        let dir = format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB");
        if kb != 2048 {
            assert_eq!(
                p["total"].as_u64().unwrap().to_string(),
                read_trim(&format!("{dir}/nr_hugepages"))
            );
        }
        assert_eq!(
            p["overcommit"].as_u64().unwrap().to_string(),
            read_trim(&format!("{dir}/nr_overcommit_hugepages"))
        );
    }
    assert_eq!(
        v["thp"]["enabled"]["selected"].as_str().unwrap(),
        selected(THP_ENABLED)
    );
    assert_eq!(
        v["thp"]["hpage_pmd_size"].as_u64().unwrap().to_string(),
        read_trim("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
    );

    // hugeadm --pool-list: Size Minimum Current Maximum Default; Current is nr_hugepages.
    let out = match hugeadm {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap(),
        other => panic!("hugeadm is needed (apt-get install libhugetlbfs-bin): {other:?}"),
    };
    let mut compared = 0;
    for line in out.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let size: u64 = f[0].parse().unwrap();
        let p = pools
            .iter()
            .find(|p| p["page_size"] == size)
            .expect("hugeadm size known to status");
        assert_eq!(
            p["total"].as_u64().unwrap().to_string(),
            f[2],
            "current pages of {size}"
        );
        compared += 1;
    }
    assert_eq!(compared, pools.len());
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn sigkill_then_restore_puts_back_exact_values() {
    require_root!();
    let _lock = common::knob_lock();
    let before = (
        selected(THP_ENABLED),
        read_trim(POOL_2M),
        selected(MTHP_64K),
    );
    let mut child = start_hold(&["thp.enabled=always", "hugetlb.2M=4", "mthp.64K=always"]);
    assert_eq!(selected(THP_ENABLED), "always");
    assert_eq!(read_trim(POOL_2M), "4");
    assert_eq!(selected(MTHP_64K), "always");
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(
        selected(THP_ENABLED),
        "always",
        "SIGKILL leaves the change in place"
    );
    assert!(std::path::Path::new("/run/hugelab/journal.json").exists());

    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .arg("restore")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("thp.enabled = madvise") && text.contains("hugetlb.2M = 0"),
        "{text}"
    );
    assert_eq!(
        (
            selected(THP_ENABLED),
            read_trim(POOL_2M),
            selected(MTHP_64K)
        ),
        before
    );
    assert!(!std::path::Path::new("/run/hugelab/journal.json").exists());

    let again = Command::cargo_bin("hugelab")
        .unwrap()
        .arg("restore")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to restore"));
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn any_command_recovers_a_dead_owner_first() {
    require_root!();
    let _lock = common::knob_lock();
    let before = selected(THP_ENABLED);
    let mut child = start_hold(&["thp.enabled=never"]);
    child.kill().unwrap();
    child.wait().unwrap();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["status", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("interrupted") && err.contains("thp.enabled = madvise"),
        "{err}"
    );
    assert_eq!(selected(THP_ENABLED), before);
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn sigterm_and_sigint_restore_by_themselves() {
    require_root!();
    let _lock = common::knob_lock();
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let before = (selected(THP_ENABLED), read_trim(POOL_2M));
        let mut child = start_hold(&["thp.enabled=never", "hugetlb.2M=2"]);
        assert_eq!(read_trim(POOL_2M), "2");
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + sig), "exit code for signal {sig}");
        assert_eq!(
            (selected(THP_ENABLED), read_trim(POOL_2M)),
            before,
            "after signal {sig}"
        );
        assert!(!std::path::Path::new("/run/hugelab/journal.json").exists());
    }
}

/// A test killed holding the knob lock never puts back what it wrote; the next test to take
/// the lock does, before it starts. The holder is this test run again in a child (the suite's
/// own binary, `KNOB_HOLDER` set): it takes the lock, writes a number and a sysfs choice, says
/// what they were, and waits to be killed with SIGKILL.
#[cfg_attr(
    unprivileged,
    ignore = "needs root: writes THP and compaction settings"
)]
#[test]
fn a_test_killed_holding_the_knob_lock_has_its_settings_put_back_by_the_next_holder() {
    require_root!();
    const DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
    const PROACTIVE: &str = "/proc/sys/vm/compaction_proactiveness";
    const TEST: &str = "status_live::a_test_killed_holding_the_knob_lock_has_its_settings_put_back_by_the_next_holder";
    if std::env::var_os("KNOB_HOLDER").is_some() {
        let lock = common::knob_lock();
        let before = (selected(DEFRAG), read_trim(PROACTIVE));
        let other = if before.0 == "never" {
            "always"
        } else {
            "never"
        };
        let higher = (before.1.parse::<u32>().unwrap() + 1).to_string();
        lock.set(DEFRAG, other);
        lock.set(PROACTIVE, &higher);
        // After libtest's "test NAME ... ", on the same line.
        println!("holding {} {} {other} {higher}", before.0, before.1);
        std::thread::sleep(std::time::Duration::from_secs(600));
        unreachable!("killed before this");
    }
    let mut holder = std::process::Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads", "1"])
        .env("KNOB_HOLDER", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let said = BufReader::new(holder.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| Some(l.split_once("holding ")?.1.to_owned()))
        .expect("the holder says what it wrote");
    let w: Vec<&str> = said.split_whitespace().collect();
    // The holder holds the lock: nobody can have put its writes back yet.
    assert_eq!(
        (selected(DEFRAG), read_trim(PROACTIVE)),
        (w[2].into(), w[3].into())
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    let next = common::knob_lock();
    assert_eq!(
        (selected(DEFRAG), read_trim(PROACTIVE)),
        (w[0].into(), w[1].into())
    );
    drop(next);
}
