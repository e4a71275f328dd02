//! The Prometheus exporter: metric values equal the kernel files they come from (fixture roots
//! and the live kernel), watched processes come and go, HTTP content negotiation and errors,
//! and a real Prometheus scraping it.

use crate::common;
use crate::common::http::{api, get, query, serve};

use clap::Parser;
use hugelab::exporter::{Exporter, ExporterArgs};
use hugelab::probe::Root;
use hugelab::render::prometheus;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: ExporterArgs,
}

fn args(extra: &[&str]) -> ExporterArgs {
    T::parse_from(std::iter::once("exporter").chain(extra.iter().copied())).a
}

/// `name{labels} value` lines of classic text → (name{labels}, value).
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn scrape_text(ex: &mut Exporter) -> String {
    prometheus::classic(&prometheus::openmetrics(&ex.scrape().unwrap()))
}

fn write(root: &Root, path: &str, v: &str) {
    std::fs::write(root.path(path), format!("{v}\n")).unwrap();
}

const POOL: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB";

#[test]
fn pool_states_add_up_and_reserved_free_is_not_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::writable_fixture("linux-6.18", dir.path());
    // 10 pages (1 surplus): 4 faulted in, 6 free of which 2 promised to a mapping.
    for (f, v) in [
        ("nr_hugepages", "10"),
        ("free_hugepages", "6"),
        ("resv_hugepages", "2"),
        ("surplus_hugepages", "1"),
        ("nr_overcommit_hugepages", "3"),
    ] {
        write(&root, &format!("{POOL}/{f}"), v);
    }
    let mut ex = Exporter::with_root(&args(&[]), root).unwrap();
    let s = samples(&scrape_text(&mut ex));
    let state = |st: &str| s[&format!("hugelab_hugetlb_pages{{size=\"2M\",state=\"{st}\"}}")];
    assert_eq!(state("in_use"), 4.0);
    assert_eq!(state("reserved_free"), 2.0);
    assert_eq!(state("free_unreserved"), 4.0);
    assert_eq!(
        state("in_use") + state("reserved_free") + state("free_unreserved"),
        10.0
    );
    assert_eq!(s["hugelab_hugetlb_surplus_pages{size=\"2M\"}"], 1.0);
    assert_eq!(s["hugelab_hugetlb_persistent_pages{size=\"2M\"}"], 9.0);
    assert_eq!(
        s["hugelab_hugetlb_overcommit_limit_pages{size=\"2M\"}"],
        3.0
    );
    assert_eq!(
        s["hugelab_hugetlb_pool_bytes{size=\"2M\"}"],
        10.0 * 2097152.0
    );
}

#[test]
fn fixture_values_equal_the_kernel_files() {
    let root = Root::new(common::fixture("linux-6.18"));
    let mut ex = Exporter::with_root(&args(&[]), root.clone()).unwrap();
    let text = scrape_text(&mut ex);
    let s = samples(&text);
    let file = |p: &str| -> f64 {
        common::read_trim(root.path(p).to_str().unwrap())
            .parse()
            .unwrap()
    };
    // Every mTHP stats counter, by size and event.
    let thp = "/sys/kernel/mm/transparent_hugepage";
    let mut checked = 0;
    for dir in std::fs::read_dir(root.path(thp)).unwrap() {
        let name = dir.unwrap().file_name().into_string().unwrap();
        let Some(kb) = name
            .strip_prefix("hugepages-")
            .and_then(|n| n.strip_suffix("kB"))
        else {
            continue;
        };
        let size = hugelab::units::Bytes(kb.parse::<u64>().unwrap() * 1024).to_string();
        for st in std::fs::read_dir(root.path(format!("{thp}/{name}/stats"))).unwrap() {
            let ev = st.unwrap().file_name().into_string().unwrap();
            let want = file(&format!("{thp}/{name}/stats/{ev}"));
            let key = match ev.as_str() {
                "nr_anon" => format!("hugelab_mthp_anon_folios{{size=\"{size}\",kind=\"all\"}}"),
                "nr_anon_partially_mapped" => {
                    format!("hugelab_mthp_anon_folios{{size=\"{size}\",kind=\"partially_mapped\"}}")
                }
                _ => format!("hugelab_mthp_events_total{{size=\"{size}\",event=\"{ev}\"}}"),
            };
            assert_eq!(s.get(&key), Some(&want), "{key}");
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} mTHP stats files");
    // The numeric settings of a THP profile, by the names arms use.
    for (name, path) in [
        ("khugepaged.max_ptes_none", "khugepaged/max_ptes_none"),
        ("khugepaged.max_ptes_swap", "khugepaged/max_ptes_swap"),
        ("khugepaged.max_ptes_shared", "khugepaged/max_ptes_shared"),
        ("khugepaged.pages_to_scan", "khugepaged/pages_to_scan"),
        (
            "khugepaged.scan_sleep_millisecs",
            "khugepaged/scan_sleep_millisecs",
        ),
        ("khugepaged.defrag", "khugepaged/defrag"),
        ("thp.shrink_underused", "shrink_underused"),
        ("thp.use_zero_page", "use_zero_page"),
    ] {
        let key = format!("hugelab_thp_knob{{knob=\"{name}\"}}");
        assert_eq!(s.get(&key), Some(&file(&format!("{thp}/{path}"))), "{key}");
    }
    // vmstat thp_* and compact_* counters.
    let vmstat = std::fs::read_to_string(root.path("/proc/vmstat")).unwrap();
    for l in vmstat.lines() {
        let (k, v) = l.split_once(' ').unwrap();
        let v: f64 = v.parse().unwrap();
        let key = if let Some(e) = k.strip_prefix("thp_") {
            format!("hugelab_thp_events_total{{event=\"{e}\"}}")
        } else if let Some(e) = k.strip_prefix("compact_") {
            format!("hugelab_compaction_events_total{{event=\"{e}\"}}")
        } else {
            continue;
        };
        assert_eq!(s.get(&key), Some(&v), "{key}");
    }
    // Buddy free blocks, every order of every zone.
    let buddy = std::fs::read_to_string(root.path("/proc/buddyinfo")).unwrap();
    for l in buddy.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (node, zone) = (f[1].trim_end_matches(','), f[3]);
        for (order, n) in f[4..].iter().enumerate() {
            let key = format!(
                "hugelab_buddy_free_blocks{{node=\"{node}\",zone=\"{zone}\",order=\"{order}\"}}"
            );
            assert_eq!(s.get(&key), Some(&n.parse::<f64>().unwrap()), "{key}");
        }
    }
    // The mode in force is the bracketed word.
    let enabled = common::selected(root.path(format!("{thp}/enabled")).to_str().unwrap());
    assert_eq!(
        s.get(&format!(
            "hugelab_thp_setting_info{{setting=\"enabled\",mode=\"{enabled}\"}}"
        )),
        Some(&1.0)
    );
}

#[test]
fn live_values_equal_the_kernel_files() {
    let text = common::hugelab_stdout(["exporter", "--once"]);
    let s = samples(&text);
    let sys = |p: &str| -> f64 { common::read_trim(p).parse().unwrap() };
    let pool = "/sys/kernel/mm/hugepages/hugepages-2048kB";
    assert_eq!(
        s["hugelab_hugetlb_pool_bytes{size=\"2M\"}"],
        sys(&format!("{pool}/nr_hugepages")) * 2097152.0
    );
    let mem_total = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: f64 = mem_total
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    assert_eq!(s["hugelab_memory_bytes{kind=\"total\"}"], kb * 1024.0);
    let mode = common::selected("/sys/kernel/mm/transparent_hugepage/enabled");
    assert_eq!(
        s[&format!("hugelab_thp_setting_info{{setting=\"enabled\",mode=\"{mode}\"}}")],
        1.0
    );
    // The classic format is what Prometheus's own linter accepts.
    if let Ok(mut p) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_watched_process_is_measured_and_its_series_drop_when_it_exits() {
    // A child holding 64 MiB of THP-backed memory: huge pages faulted where a kernel-wide count
    // in another test would see them, so one at a time with those.
    let _lock = common::knob_lock();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["hold-memory", "--backing", "thp", "--size", "64M"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("ready"), "{line}");
    let pid = child.id();
    let mut ex = Exporter::new(&args(&["--pid", &pid.to_string()])).unwrap();
    let s = samples(&scrape_text(&mut ex));
    let id = format!("pid=\"{pid}\",comm=\"hugelab\"");
    let resident = s[&format!("hugelab_process_resident_bytes{{{id}}}")];
    let thp = s[&format!("hugelab_process_huge_bytes{{{id},kind=\"anon_thp\"}}")];
    assert!(resident >= (64 << 20) as f64, "{resident}");
    assert!(thp >= (60 << 20) as f64, "THP-backed: {thp}");
    // Judged by the rule `run` uses: its 64M region is the memory that matters, on THP.
    let matters = s[&format!("hugelab_process_huge_matters_ratio{{{id}}}")];
    assert!(matters >= 0.9, "{matters}");
    if common::is_root() {
        // The folio pass spreads over scrapes within the budget (a loaded machine needs more of
        // them); once complete it shows the THP as 2 MiB folios.
        let key = format!("hugelab_process_folio_bytes{{{id},folio_size=\"2M\"}}");
        let mut folio_2m = s.get(&key).copied();
        for _ in 0..200 {
            if folio_2m.is_some() {
                break;
            }
            folio_2m = samples(&scrape_text(&mut ex)).get(&key).copied();
        }
        let folio_2m = folio_2m.expect("the folio pass never completed in 200 scrapes");
        assert!(folio_2m >= (60 << 20) as f64, "{folio_2m}");
    }
    assert_eq!(s[&format!("hugelab_watched_up{{pid=\"{pid}\"}}")], 1.0);
    child.kill().unwrap();
    child.wait().unwrap();
    let after = samples(&scrape_text(&mut ex));
    // Its series drop; the pid asked for stays, as not up.
    assert!(!after.keys().any(|k| k.contains(&id)), "{after:?}");
    assert_eq!(after[&format!("hugelab_watched_up{{pid=\"{pid}\"}}")], 0.0);
}

#[test]
fn a_pid_that_does_not_exist_is_an_error_once_and_a_warning_when_serving() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["exporter", "--once", "--pid", "999999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--pid 999999: no such process"), "{e}");
    let ex = serve(&["--pid", "999999"]);
    assert!(
        ex.before
            .iter()
            .any(|l| l.contains("warning: --pid 999999: no such process")),
        "{:?}",
        ex.before
    );
    let (_, body) = get(&ex.addr, "/metrics", None);
    assert!(
        body.contains("hugelab_watched_up{pid=\"999999\"} 0"),
        "{body}"
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    for (extra, want) in [
        (&["--budget", "0ms"][..], "--budget"),
        (&["--top", "0"][..], "--top 0"),
        (&["--listen", "localhost"][..], "--listen \"localhost\""),
    ] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
            .arg("exporter")
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{extra:?}: {e}");
    }
}

fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
}

#[test]
fn http_negotiates_openmetrics_and_says_what_is_wrong() {
    let ex = serve(&[]);
    let (head, body) = get(&ex.addr, "/metrics", None);
    assert!(
        head.contains("200") && head.contains("text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(body.contains("# TYPE hugelab_thp_events_total counter") && !body.contains("# EOF"));
    let (head, body) = get(
        &ex.addr,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.contains("# TYPE hugelab_thp_events counter") && body.ends_with("# EOF\n"));
    assert!(get(&ex.addr, "/nope", None).0.contains("404"));
    // A second exporter on the same port says the port is taken.
    let out = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["exporter", "--listen", &ex.addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!("{} is already in use", ex.addr)) && e.contains("--listen"),
        "{e}"
    );
}

/// Every PromQL expression of the Grafana dashboard, with its variables filled in.
fn dashboard_exprs() -> Vec<String> {
    let d: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/hugelab.json"),
        )
        .unwrap(),
    )
    .unwrap();
    d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            t["expr"]
                .as_str()
                .unwrap()
                .replace("$instance", ".*")
                .replace("$__rate_interval", "1m")
        })
        .collect()
}

#[test]
#[cfg_attr(
    missing_prometheus,
    ignore = "needs prometheus (apt-get install prometheus)"
)]
fn a_real_prometheus_scrapes_the_exporter() {
    assert!(
        Command::new("prometheus").arg("--version").output().is_ok(),
        "no prometheus on this machine (apt-get install prometheus; .ci/run does)"
    );
    // As root, with --trace, so that the dashboard's stall panels have their metric too; its
    // exporter then mounts tracefs if it is not, and unmounts it after, under the knob lock
    // like every test whose trace changes what the others read.
    let (_lock, ex) = if common::is_root() {
        let lock = common::knob_lock();
        let ex = serve(&["--top", "3", "--trace", "compaction,reclaim,migrate"]);
        (Some(lock), ex)
    } else {
        (None, serve(&["--top", "3"]))
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\nscrape_configs:\n  - job_name: hugelab\n    static_configs:\n      - targets: ['{}']\n",
            ex.addr
        ),
    )
    .unwrap();
    let prom = format!("127.0.0.1:{}", common::free_port());
    let mut p = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }
    let _kill = Kill(&mut p);
    // Wait for the first scrape to be queryable (a readiness wait, not a timing assert).
    let mut pools = Vec::new();
    for _ in 0..120 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if TcpStream::connect(&prom).is_err() {
            continue;
        }
        pools = query(&prom, "hugelab_hugetlb_pages");
        if !pools.is_empty() {
            break;
        }
    }
    assert!(!pools.is_empty(), "Prometheus never stored a scrape");
    let states: Vec<&str> = pools
        .iter()
        .filter(|r| r["metric"]["size"] == "2M")
        .map(|r| r["metric"]["state"].as_str().unwrap())
        .collect();
    assert_eq!(states.len(), 3, "{pools:?}");
    let up = query(&prom, "max_over_time(up[1m])");
    assert_eq!(up[0]["value"][1], "1", "{up:?}");
    let thp = query(&prom, "hugelab_thp_events_total");
    assert!(
        thp.iter().any(|r| r["metric"]["event"] == "fault_alloc"),
        "{thp:?}"
    );
    // Prometheus parsed the counter as a counter (OpenMetrics was negotiated).
    let meta = get(&prom, "/api/v1/metadata?metric=hugelab_thp_events", None).1;
    assert!(meta.contains("\"counter\""), "{meta}");
    // Every dashboard query is valid PromQL, and every metric it names is one the exporter has.
    let served = get(&ex.addr, "/metrics", None).1;
    for e in dashboard_exprs() {
        let v = api(&prom, &e);
        assert_eq!(v["status"], "success", "{e}: {v}");
        for name in e
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("hugelab_"))
        {
            // A family is served when it has samples or, like folio sizes before their first
            // complete pass, only its declaration.
            if name.starts_with("hugelab_kernel_stall") && !common::is_root() {
                continue; // --trace needs root
            }
            // Per-cgroup hugetlb series exist only for groups in a hugetlb hierarchy, which
            // this host's largest are not; tests/cgroups.rs makes one and has a real
            // Prometheus scrape it.
            if name == "hugelab_cgroup_hugetlb_bytes"
                && served.contains("hugelab_cgroup_memory_bytes{")
            {
                continue;
            }
            let family = name
                .trim_end_matches("_bucket")
                .trim_end_matches("_sum")
                .trim_end_matches("_count");
            // Or, under load, a series whose first pass has not completed within --budget:
            // the scrape names it as pending rather than dropping it silently.
            let pending = format!("hugelab_exporter_series_pending{{family=\"{family}\"}} ");
            let named = served
                .lines()
                .find_map(|l| l.strip_prefix(pending.as_str()))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .is_some_and(|n| n > 0.0);
            assert!(
                served.contains(&format!("\n{name}"))
                    || served.contains(&format!("# TYPE {family} "))
                    || named,
                "{e}: the exporter serves no {name} and names none pending"
            );
        }
    }
    // That it leaves tracefs as it found it is checked in
    // `trace_exports_stall_histograms_and_unmounts_what_it_mounted`.
    drop(ex);
}

#[test]
fn an_old_kernel_without_mthp_or_node_pools_exports_what_exists() {
    let mut ex =
        Exporter::with_root(&args(&[]), Root::new(common::fixture("linux-4.19-old"))).unwrap();
    let text = scrape_text(&mut ex);
    assert!(
        text.contains("hugelab_hugetlb_pages{size=\"2M\",state=\"in_use\"}"),
        "{text}"
    );
    assert!(
        !text.contains("hugelab_mthp_setting_info{"),
        "no mTHP on 4.19"
    );
    assert!(
        !text.contains("hugelab_hugetlb_node_pages{"),
        "no per-node pools in this fixture"
    );
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: tracepoints")]
fn trace_exports_stall_histograms_and_unmounts_what_it_mounted() {
    require_root!();
    // It compacts all memory (undoing another test's fragmented memory under its feet, once)
    // and reads whether tracefs is mounted, which another test's trace changes: one at a time
    // with them.
    let _lock = common::knob_lock();
    let before = tracefs_mounted();
    let mut ex = serve(&["--trace", "compaction"]);
    // Compacting all memory on request runs compact_zone in this writer: background compaction.
    let mut count = 0.0;
    for _ in 0..50 {
        std::fs::write("/proc/sys/vm/compact_memory", "1").unwrap();
        let body = get(&ex.addr, "/metrics", None).1;
        count = samples(&body)
            .get("hugelab_kernel_stall_seconds_count{kind=\"background compaction\"}")
            .copied()
            .unwrap_or(0.0);
        if count > 0.0 {
            assert!(body.contains("# TYPE hugelab_kernel_stall_seconds histogram"));
            assert!(body.contains("le=\"+Inf\",kind=\"background compaction\"}"));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(count >= 1.0, "no compaction seen in 50 tries");
    // Ctrl-C stops it cleanly: tracefs is as it was.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(ex.child.id() as i32, libc::SIGINT) };
    let status = ex.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(tracefs_mounted(), before);
}

/// A budget too small for a watched process's first folio pass: its folio sizes are not
/// served yet, and the scrape says so — the pass's progress per process and the family as
/// pending — instead of dropping the series silently.
#[test]
#[cfg_attr(unprivileged, ignore = "needs root: folio sizes (kpageflags)")]
fn a_folio_pass_the_budget_has_not_finished_is_named_pending() {
    require_root!();
    let ex = serve(&["--top", "3", "--budget", "1ms"]);
    let body = get(&ex.addr, "/metrics", None).1;
    let pending = body
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "hugelab_exporter_series_pending{family=\"hugelab_process_folio_bytes\"} ",
            )
        })
        .unwrap_or_else(|| panic!("no pending series:\n{body}"))
        .trim()
        .parse::<f64>()
        .unwrap() as usize;
    let pids = |prefix: &str| {
        let mut p: Vec<&str> = body
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.split("pid=\"").nth(1)?.split('"').next())
            .collect();
        p.sort();
        p.dedup();
        p.len()
    };
    let watched = pids("hugelab_process_resident_bytes{");
    let served = pids("hugelab_process_folio_bytes{");
    // Every watched process is served its folio sizes or counted pending, none dropped.
    assert!(watched >= 1, "{body}");
    assert_eq!(served + pending, watched, "{body}");
}
