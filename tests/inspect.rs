//! `inspect`, `collapse` and `top` against helper processes with known memory.

use crate::common;
use assert_cmd::Command;
use hugelab::control::{Guard, Knob};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

struct Helper {
    child: Child,
    start: u64,
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn helper(args: &[&str]) -> Helper {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .arg("hold-memory")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .next()
        .expect("helper output")
        .unwrap();
    let start =
        u64::from_str_radix(line.split_whitespace().nth(1).expect("ready START END"), 16).unwrap();
    Helper { child, start }
}

fn inspect(pid: u32) -> serde_json::Value {
    let pid = pid.to_string();
    common::hugelab_json(["inspect", "--maps", "--all", "--json", &pid])["processes"][0].clone()
}

fn mapping(p: &serde_json::Value, start: u64) -> serde_json::Value {
    p["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["start"].as_u64().unwrap() <= start && start < m["end"].as_u64().unwrap())
        .cloned()
        .unwrap_or_else(|| panic!("no mapping at {start:x}"))
}

fn reasons(m: &serde_json::Value) -> String {
    m["why_not_huge"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn coverage_and_reasons_per_backing() {
    let _lock = common::knob_lock(); // helpers fault under the machine's own THP knobs
    let thp = helper(&["--backing", "thp", "--size", "64M"]);
    let plain = helper(&["--backing", "plain", "--size", "64M"]);
    let nh = helper(&["--backing", "4k", "--size", "64M"]);
    let disabled = helper(&["--backing", "thp", "--size", "64M", "--thp-disable"]);
    let small = helper(&["--backing", "plain", "--size", "1M", "--unaligned"]);

    let m = mapping(&inspect(thp.child.id()), thp.start);
    assert!(m["coverage"].as_f64().unwrap() > 0.95, "{m}");
    assert_eq!(m["anon_huge_pages"].as_u64().unwrap(), 64 << 20);
    assert!(reasons(&m).is_empty());
    assert_eq!(m["tlb"]["now"].as_u64().unwrap(), 32);

    let m = mapping(&inspect(plain.child.id()), plain.start);
    assert_eq!(m["coverage"].as_f64().unwrap(), 0.0);
    assert!(reasons(&m).contains("no MADV_HUGEPAGE"), "{}", reasons(&m));

    let m = mapping(&inspect(nh.child.id()), nh.start);
    assert!(reasons(&m).contains("MADV_NOHUGEPAGE"), "{}", reasons(&m));

    let p = inspect(disabled.child.id());
    assert_eq!(p["thp_enabled"], false);
    assert!(reasons(&mapping(&p, disabled.start)).contains("PR_SET_THP_DISABLE"));

    let m = mapping(&inspect(small.child.id()), small.start);
    assert!(
        reasons(&m).contains("smaller than 2 MiB"),
        "{}",
        reasons(&m)
    );
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn hugetlb_and_mthp_are_seen() {
    require_root!();
    let _lock = common::knob_lock();
    let mut g = Guard::system().unwrap();
    g.set(
        Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        },
        "8",
    )
    .unwrap();
    let h2m = helper(&["--backing", "hugetlb-2m", "--size", "16M"]);
    g.set(Knob::MthpEnabled { size: 65536 }, "always").unwrap();
    let m64 = helper(&["--backing", "mthp-64k", "--size", "32M"]);
    g.set(Knob::MthpEnabled { size: 65536 }, "never").unwrap();

    let p = inspect(h2m.child.id());
    let m = mapping(&p, h2m.start);
    assert_eq!(m["kind"], "hugetlb");
    assert_eq!(m["private_hugetlb"].as_u64().unwrap(), 16 << 20);
    assert_eq!(m["coverage"].as_f64().unwrap(), 1.0);
    assert_eq!(m["tlb"]["now"].as_u64().unwrap(), 8);
    assert!(reasons(&m).is_empty());
    // hugetlb is outside Rss; the process total counts it once.
    assert!(p["resident"].as_u64().unwrap() >= 16 << 20);
    assert!(p["folios"][(2u64 << 20).to_string()].as_u64().unwrap() >= 16 << 20);

    let m = mapping(&inspect(m64.child.id()), m64.start);
    let folios = &m["folios"];
    assert!(
        folios["65536"].as_u64().unwrap() >= 30 << 20,
        "mTHP 64K folios from pagemap+kpageflags: {folios}"
    );
    assert_eq!(
        m["anon_huge_pages"].as_u64().unwrap(),
        0,
        "mTHP shows in no smaps field"
    );
    assert!(m["coverage"].as_f64().unwrap() > 0.9);
    drop((h2m, m64));

    // 1 GiB pages, where the kernel can find one.
    let applied = g
        .set(
            Knob::HugetlbPages {
                size: 1 << 30,
                node: None,
            },
            "1",
        )
        .unwrap();
    if applied.actual == "1" {
        let h1g = helper(&["--backing", "hugetlb-1g", "--size", "1G"]);
        let m = mapping(&inspect(h1g.child.id()), h1g.start);
        assert_eq!(m["kind"], "hugetlb");
        assert_eq!(m["kernel_page_size"].as_u64().unwrap(), 1 << 30);
        assert_eq!(
            m["tlb"]["now"].as_u64().unwrap(),
            1,
            "one translation for 1 GiB"
        );
        assert_eq!(m["tlb"]["all_4k"].as_u64().unwrap(), 262_144);
    } else {
        common::skipped_core(
            "inspect: a 1 GiB hugetlb mapping's translations",
            &format!("no 1 GiB page could be had ({})", applied.actual),
        );
    }
    drop(g);
}

#[test]
fn collapse_promotes_a_running_process() {
    let _lock = common::knob_lock(); // helpers fault under the machine's own THP knobs
    let plain = helper(&["--backing", "plain", "--size", "32M"]);
    let pid = plain.child.id();
    let range = format!("{:x}-{:x}", plain.start, plain.start + (32 << 20));
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["collapse", "--json", "--range", &range])
        .arg(pid.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["coverage_before"].as_f64().unwrap(), 0.0);
    assert!(v["coverage_after"].as_f64().unwrap() > 0.9, "{v}");
    let m = mapping(&inspect(pid), plain.start);
    assert!(m["coverage"].as_f64().unwrap() > 0.9);

    // Under MADV_NOHUGEPAGE the kernel refuses, and the error says why.
    let nh = helper(&["--backing", "4k", "--size", "8M"]);
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args([
            "collapse",
            "--range",
            &format!("{:x}-{:x}", nh.start, nh.start + (8 << 20)),
        ])
        .arg(nh.child.id().to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The first line says it failed; the reason is a line of its own, wrapped at words.
    let first = text.lines().next().unwrap();
    assert!(
        first.contains("MADV_COLLAPSE FAILED for the requested range"),
        "{text}"
    );
    assert!(text.contains("failed (EINVAL)"), "{text}");
    let why: String = text
        .lines()
        .skip_while(|l| !l.starts_with("why: "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        why.starts_with("why: EINVAL") && why.contains("MADV_NOHUGEPAGE"),
        "{text}"
    );
    // Every wrapped line ends at a whole word: joined back with spaces, the words are intact.
    let rejoined = why.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(
        rejoined.contains("MADV_NOHUGEPAGE on the range, THP disabled for the process (prctl)"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn top_lists_processes_and_bad_pids_are_clear() {
    let _lock = common::knob_lock(); // helpers fault under the machine's own THP knobs
    let thp = helper(&["--backing", "thp", "--size", "32M"]);
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["top", "--json", "-n", "1000"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pid"] == thp.child.id())
        .expect("helper listed");
    assert!(row["anon_huge_pages"].as_u64().unwrap() >= 32 << 20);
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["inspect", "999999999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("process 999999999 does not exist"));
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .arg("inspect")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: changes kernel settings or switches user"
)]
#[test]
fn without_root_inspect_falls_back_to_smaps_and_says_why() {
    require_root!(); // to become `nobody`
    let _lock = common::knob_lock();
    let bin = assert_cmd::cargo::cargo_bin("hugelab");
    let script = format!(
        "{b} hold-memory --backing thp --size 32M --seconds 10 > /dev/null & sleep 0.7; {b} inspect $! --json; kill $!",
        b = bin.display()
    );
    let out = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["processes"][0];
    assert!(p["folios"].is_null(), "folio sizes need root");
    let notes = p["notes"].to_string();
    assert!(notes.contains("run as root"), "{notes}");
    assert!(
        p["coverage"].as_f64().unwrap() > 0.5,
        "coverage still comes from smaps: {p}"
    );
}

#[test]
fn tree_counts_a_shared_segment_once_across_a_forked_worker() {
    // A "server" that maps 64 MiB of shared anonymous memory, touches it, and forks a worker
    // that touches it too (as a postmaster and its backends share shared_buffers).
    let code = "import mmap,os,sys,time\nn=64<<20\nm=mmap.mmap(-1,n,flags=mmap.MAP_SHARED|mmap.MAP_ANONYMOUS)\nm.write(b'x'*n)\nif os.fork()==0:\n    s=sum(m[i] for i in range(0,n,4096))\n    time.sleep(60)\n    os._exit(0)\ntime.sleep(0.5)\nprint('ready',flush=True)\ntime.sleep(60)\n";
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("python3")
        .args(["-c", code])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id();
    let out = Command::cargo_bin("hugelab")
        .unwrap()
        .args(["inspect", "--tree", "--json", &pid.to_string()])
        .output()
        .unwrap();
    // SAFETY: the helper leads its own process group, which its worker shares.
    unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["instances"][0]["memory"];
    assert_eq!(m["processes"], 2, "{m}");
    let rss = m["rss"].as_u64().unwrap();
    // Each process has the 64 MiB resident; the instance counts them once.
    assert!((64 << 20..96 << 20).contains(&rss), "instance rss {rss}");
    let seg = &m["segments"][0];
    assert_eq!(
        (seg["kind"].as_str(), seg["size"].as_u64()),
        (Some("shm"), Some(64 << 20)),
        "{seg}"
    );
}
