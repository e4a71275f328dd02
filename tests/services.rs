//! `run --server`: real servers (PostgreSQL, Redis) started per trial in temporary directories
//! on loopback or unix sockets, never the system services, with their real clients as the load.
//! What must hold: the server's own memory is the evidence (the main segment on 2 MiB pages,
//! Redis's THP opt-out found and said), a silent fallback is FLAGGED with the server's words,
//! pgbench's percentiles equal those computed by hand from its log, and every way a server can
//! fail fails the run loudly (exit 4) with nothing left running and the settings restored.

use crate::common;
use crate::common::postgres::{PrivatePg, pg_bin, pg_cluster};

use std::path::Path;
use std::process::Command;

fn have(program: &str) -> bool {
    hugelab::probe::program::find_program(program).is_some()
}

/// Processes whose command line contains `needle` (our private servers name their directory
/// or port there).
fn running_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && !cmd.contains("hugelab") {
            out.push(format!("{pid}: {cmd}"));
        }
    }
    out
}

/// A private Redis on `port`, under its command line or the title it sets itself
/// (`redis-server 127.0.0.1:PORT`).
fn redis_running(port: &str) -> Vec<String> {
    let mut v = running_with(&format!("--port {port}"));
    v.extend(running_with(&format!(":{port}")));
    v
}

fn thp_enabled() -> String {
    common::selected("/sys/kernel/mm/transparent_hugepage/enabled")
}

fn pool_2m() -> String {
    common::read_trim("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
}

/// A service trial's server as read after its load.
fn served(t: &hugelab::store::TrialRow) -> &hugelab::model::evidence::ServerEvidence {
    t.evidence
        .server
        .as_ref()
        .expect("a service trial's server")
}

fn trials(db: &Path) -> Vec<hugelab::store::TrialRow> {
    hugelab::store::Store::open(db).unwrap().load(1).unwrap().2
}

fn arm_trials<'a>(
    all: &'a [hugelab::store::TrialRow],
    v: &serde_json::Value,
    arm: &str,
) -> Vec<&'a hugelab::store::TrialRow> {
    let idx = v["plan"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .position(|a| a["name"] == arm)
        .unwrap_or_else(|| panic!("no arm {arm}")) as i64;
    all.iter()
        .filter(|t| t.arm_idx == idx && t.block >= 0)
        .collect()
}

#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: hugetlb pools, THP modes, runs PostgreSQL as postgres"
)]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn postgres_preset_puts_shared_memory_on_the_pages_each_arm_asks_for_and_flags_try() {
    require_root!();
    let _lock = common::knob_lock();
    let pg = PrivatePg::new();
    let (dir, port, sock) = (&pg.dir, pg.port, pg.sock.clone());
    let server = pg.server("-c shared_buffers=64MB");
    let db = dir.path().join("r.db");
    let (thp_before, pool_before) = (thp_enabled(), pool_2m());
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "postgres",
        "--user",
        "postgres",
        "--server",
        &server,
        // huge_pages=try with no pool: PostgreSQL falls back and says so only at DEBUG1.
        "--arm",
        "try=server.arg=-c,server.arg=huge_pages=try,server.arg=-c,server.arg=log_min_messages=debug1,hugetlb.2M=0,expect=hugetlb-2m",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "pgbench",
        "-S",
        "-T",
        "1",
        "-c",
        "2",
        "-h",
        &sock,
        "-p",
        &port.to_string(),
        "postgres",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let all = trials(&db);
    assert_eq!(all.len(), 8, "4 arms × 2 blocks");
    for t in arm_trials(&all, &v, "hugetlb-2m") {
        let s = served(t);
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        assert!(
            s.memory.hugetlb.get(&(2 << 20)).copied().unwrap_or(0) > 0,
            "{s:?}"
        );
        let carried = s.carried_by.as_deref().unwrap();
        assert!(
            carried.starts_with("/anon_hugepage") && carried.contains("on 2M hugetlb"),
            "{carried}"
        );
        assert!(t.metrics["tps"] > 0.0 && t.metrics["lat_p99_ms"] > 0.0);
        // The server's memory cost counts every pool page committed to it — faulted or
        // reserved at mmap and not yet used — as the kernel's pool counts them at that moment
        // (this server is the pool's only user).
        let m = &s.memory;
        let committed = m.hugetlb_committed as f64;
        let k = m.kernel.as_ref().unwrap();
        let at = |b: &std::collections::BTreeMap<u64, u64>| b.get(&(2 << 20)).copied().unwrap_or(0);
        let pool = at(&k.hugetlb_in_use) + at(&k.hugetlb_reserved);
        assert!(
            (committed / pool as f64 - 1.0).abs() < 0.05,
            "committed {committed} vs the pool's in use + reserved {pool}: {m:?}"
        );
        assert!(
            t.metrics["server_mem_bytes"] >= committed,
            "{:?}",
            t.metrics
        );
        // CPU per transaction: the server's CPU over tps × the load's wall time.
        let per_op = t.metrics["server_cpu_s"] * 1e6 / (t.metrics["tps"] * t.metrics["wall_s"]);
        assert!(
            (t.metrics["server_cpu_per_op_us"] / per_op - 1.0).abs() < 1e-9,
            "{:?}",
            t.metrics
        );
    }
    for t in arm_trials(&all, &v, "thp") {
        let s = served(t);
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        assert!(s.memory.shmem_pmd > 0, "{s:?}");
        assert!(s.memory.hugetlb.is_empty(), "{s:?}");
    }
    for t in arm_trials(&all, &v, "off") {
        let m = &served(t).memory;
        assert!(t.flagged.is_none());
        assert_eq!(m.shmem_pmd + m.anon_huge, 0, "{m:?}");
        assert!(m.hugetlb.is_empty(), "{m:?}");
    }
    for t in arm_trials(&all, &v, "try") {
        let f = t.flagged.as_deref().expect("a silent fallback is flagged");
        assert!(
            f.contains("0% of the memory that matters") && f.contains("on 2M hugetlb pages"),
            "{f}"
        );
        assert!(
            f.contains("PostgreSQL said") && f.contains("MAP_HUGETLB failed"),
            "{f}"
        );
    }
    // The verdicts are about tps (pgbench's primary metric), each arm's server is summarised.
    assert_eq!(v["plan"]["metrics"][1]["name"], "tps");
    assert_eq!(v["servers"].as_array().unwrap().len(), 4);
    assert_eq!(
        (thp_enabled(), pool_2m()),
        (thp_before, pool_before),
        "settings restored"
    );
    assert!(running_with(&sock).is_empty(), "{:?}", running_with(&sock));
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: runs PostgreSQL as postgres")]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn pgbench_percentiles_equal_those_computed_by_hand_from_its_log() {
    require_root!();
    let pg = PrivatePg::new();
    let (dir, port, sock) = (&pg.dir, pg.port, pg.sock.clone());
    let keep = dir.path().join("logs");
    std::fs::create_dir(&keep).unwrap();
    Command::new("chown")
        .args(["postgres", &keep.display().to_string()])
        .status()
        .unwrap();
    let server = pg.server("");
    // With --shell the load names the log itself; it also keeps a copy for this test.
    let load = format!(
        "pgbench -S -T 1 -c 2 -h {sock} -p {port} -l --log-prefix=$HUGELAB_TRIAL_DIR/pgbench_log postgres && d=$(mktemp -d -p {k}) && cp $HUGELAB_TRIAL_DIR/pgbench_log* $d/ && echo KEPT=$d",
        k = keep.display()
    );
    let db = dir.path().join("r.db");
    common::hugelab_stdout([
        "run",
        "--shell",
        "--user",
        "postgres",
        "--server",
        &server,
        "--ready",
        "log:database system is ready to accept connections",
        "--arm",
        "a=",
        "--arm",
        "b=env.PGAPPNAME=b",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        &load,
    ]);
    let all = trials(&db);
    assert_eq!(all.len(), 4);
    for t in &all {
        let tail = &t.evidence.load_output_tail;
        let kept = tail
            .iter()
            .find_map(|l| l.strip_prefix("KEPT="))
            .expect("the load printed where it kept the log");
        let mut us: Vec<f64> = Vec::new();
        for f in std::fs::read_dir(kept).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            us.extend(
                text.lines()
                    .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok()),
            );
        }
        us.sort_by(f64::total_cmp);
        assert!(us.len() > 100, "{} transactions", us.len());
        // Nearest rank: the ceil(p·n)-th smallest latency.
        let by_hand =
            |p: f64| us[((p / 100.0 * us.len() as f64).ceil() as usize).max(1) - 1] / 1000.0;
        for (p, name) in [
            (50.0, "lat_p50_ms"),
            (95.0, "lat_p95_ms"),
            (99.0, "lat_p99_ms"),
            (99.9, "lat_p999_ms"),
        ] {
            assert_eq!(t.metrics[name], by_hand(p), "{name}");
        }
        assert!(t.metrics["tps"] > 0.0);
    }
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: THP modes")]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn redis_preset_shows_thp_reaching_redis_only_when_it_does_not_opt_out() {
    require_root!();
    assert!(
        have("redis-server") && have("redis-benchmark"),
        "redis-server or redis-benchmark is not installed (.ci/run installs them)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port().to_string();
    let server = format!(
        "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no --dir {}",
        dir.path().display()
    );
    let db = dir.path().join("r.db");
    let thp_before = thp_enabled();
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "redis",
        "--server",
        &server,
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--hot",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "redis-benchmark",
        "-p",
        &port,
        "-q",
        "--csv",
        "-t",
        "set,get",
        "-n",
        "20000",
        "-d",
        "1024",
        "-r",
        "100000",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let all = trials(&db);
    for t in arm_trials(&all, &v, "always") {
        let m = &served(t).memory;
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        // --hot: what the load touched, read after it — some, and no more than is resident
        // (THP counts a touched 2 MiB page whole, so on THP it can reach all of it).
        let hot = served(t).hot_bytes.unwrap();
        let resident = m.rss;
        assert!(hot > 0 && hot <= resident, "hot {hot} of {resident}");
        assert!(m.anon_huge >= 2 << 20, "{m:?}");
        assert!(m.thp_disabled.is_empty());
        assert!(t.metrics["set_p99_ms"] > 0.0 && t.metrics["get_rps"] > 0.0);
    }
    for t in arm_trials(&all, &v, "always-default") {
        // Redis's own opt-out: FLAGGED or PARTIAL by what was on THP before it, said as such.
        let b = t.evidence.backing.as_ref().unwrap();
        assert_ne!(b.state, hugelab::model::evidence::State::Got, "{b:?}");
        let f = &b.why;
        assert!(
            f.contains("THP disabled by the process after startup")
                && f.contains("THP_enabled: 0")
                && f.contains("disable-thp no"),
            "{f}"
        );
    }
    // THP madvise beside always: the advised policy, confirmed per trial by the kernel's own
    // THPeligible (none of the server's anonymous memory outside advised regions) and
    // THP_enabled (not off).
    for t in arm_trials(&all, &v, "madvise") {
        let s = served(t);
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        let policy = s.thp_policy.as_ref().unwrap();
        assert!(policy.held, "{policy:?}");
        assert!(policy.words.contains("PR_THP_DISABLE_EXCEPT_ADVISED"));
        assert_eq!(s.memory.thp_eligible_unadvised, 0);
        assert!(s.memory.thp_disabled.is_empty());
        assert_eq!(s.memory.anon_huge, 0, "{:?}", s.memory);
    }
    for t in arm_trials(&all, &v, "always") {
        // The same server under the system's `always`: its heap is THP-eligible.
        assert!(served(t).memory.thp_eligible_unadvised > 0);
    }
    assert!(
        out.contains("arm madvise: THP madvise for its server alone"),
        "{out}"
    );
    for t in arm_trials(&all, &v, "never") {
        let s = served(t);
        assert_eq!(s.memory.anon_huge, 0);
        assert!(s.thp_policy.as_ref().unwrap().held);
        assert!(t.flagged.is_none());
        // On 4 KiB pages the load's 20,000 SETs of 1 KiB values (about 18,000 distinct keys)
        // touch at least those values, and no more than the server holds.
        let hot = s.hot_bytes.unwrap();
        let resident = s.memory.rss;
        assert!(
            hot >= 10 << 20 && hot <= resident,
            "hot {hot} of {resident}"
        );
    }
    let arms = v["report"]["evidence"].as_array().unwrap();
    assert!(
        arms.iter().all(|e| e["mean_hot"].as_f64().is_some()),
        "{arms:?}"
    );
    assert_eq!(thp_enabled(), thp_before, "THP mode restored");
    assert!(redis_running(&port).is_empty());
}

/// `hugelab run` of a Redis server that fails in some way: exit 4, the reason in the stop
/// reason, nothing left running on the port.
fn failing_redis(port: &str, server: &str, extra: &[&str], load: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut args = vec![
        "run",
        "--server",
        server,
        "--arm",
        "a=",
        "--arm",
        "b=env.X=1",
        "--blocks",
        "2",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(extra);
    let dbs = db.display().to_string();
    args.extend(["--json", "--db", &dbs, "--"]);
    args.extend_from_slice(load);
    let out = common::hugelab_exits(args, 4);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let store = hugelab::store::Store::open(&db).unwrap();
    assert_eq!(store.load(1).unwrap().0.status, "failed");
    assert!(redis_running(port).is_empty(), "{:?}", redis_running(port));
    v["stop_reason"].as_str().unwrap().to_string()
}

#[test]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn a_server_that_fails_fails_the_run_loudly_and_leaves_nothing_running() {
    assert!(
        have("redis-server") && have("redis-cli"),
        "redis-server or redis-cli is not installed (.ci/run installs them)"
    );
    let port = common::free_port().to_string();
    let ready = format!("tcp:127.0.0.1:{port}");
    let ok_server =
        format!("redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no");
    let ping: Vec<&str> = vec!["redis-cli", "-p", &port, "ping"];
    // 1. It does not start: its own error is the reason.
    let bad = format!("{ok_server} --no-such-directive yes");
    let why = failing_redis(&port, &bad, &["--ready", &ready], &ping);
    assert!(why.contains("exited before it was ready (exit 1)"), "{why}");
    assert!(
        why.to_lowercase().contains("bad directive") || why.contains("no-such-directive"),
        "{why}"
    );
    // 2. It is never ready (the probe waits for a line it never prints).
    let why = failing_redis(
        &port,
        &ok_server,
        &["--ready", "log:never printed", "--ready-timeout", "1s"],
        &ping,
    );
    assert!(why.contains("not ready after 1.0 s"), "{why}");
    // 3. It exits during the load.
    let shutdown: Vec<&str> = vec!["redis-cli", "-p", &port, "shutdown", "nosave"];
    let why = failing_redis(&port, &ok_server, &["--ready", &ready], &shutdown);
    assert!(why.contains("the server exited during the load"), "{why}");
    // 4. Its port is taken by another process before it starts.
    let holder = std::net::TcpListener::bind(format!("127.0.0.1:{port}")).unwrap();
    let why = failing_redis(&port, &ok_server, &["--ready", &ready], &ping);
    assert!(
        why.contains("already answers before the server started"),
        "{why}"
    );
    drop(holder);
}

#[test]
fn server_input_is_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let dbs = db.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--server",
                "no-such-server-binary --x",
                "--ready",
                "tcp:127.0.0.1:1",
            ],
            "not found",
        ),
        (&["--server", "true"], "--server needs --ready"),
        // A preset's server with {dir} but a literal port: every arm's server on one port.
        (
            &[
                "--preset",
                "redis",
                "--server",
                "redis-server --port 6391 --dir {dir}",
            ],
            "would both listen on port 6391",
        ),
        (
            &["--server", "true", "--ready", "http://x"],
            "tcp:HOST:PORT",
        ),
        (&["--ready", "tcp:127.0.0.1:1"], "need --server"),
        (&["--preset", "postgres"], "give --server"),
        (&["--hot"], "--hot is for services"),
        (
            &[
                "--server",
                "true",
                "--ready",
                "tcp:127.0.0.1:1",
                "--metric",
                "nosuchformat",
            ],
            "not NAME=REGEX",
        ),
        (
            &[
                "--server",
                "true",
                "--ready",
                "tcp:127.0.0.1:1",
                "--ready-timeout",
                "0",
            ],
            "zero",
        ),
        (
            &[
                "--server",
                "true",
                "--ready",
                "tcp:127.0.0.1:1",
                "--arm",
                "x=expect=2m",
            ],
            "valid: 4k, no-thp, thp",
        ),
        (
            &[
                "--server",
                "true",
                "--ready",
                "tcp:127.0.0.1:1",
                "--arm",
                "x=shmem=sometimes",
            ],
            "within_size",
        ),
    ];
    for (extra, want) in cases {
        let mut args: Vec<&str> = vec!["run", "--db", &dbs];
        args.extend_from_slice(extra);
        if !extra.contains(&"--arm") {
            args.extend(["--arm", "a=", "--arm", "b="]);
        } else {
            args.extend(["--arm", "a="]);
        }
        args.extend(["--", "redis-benchmark", "-t", "set", "--csv"]);
        let out = assert_cmd::Command::cargo_bin("hugelab")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    assert!(!db.exists(), "nothing stored for a usage error");
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: THP modes")]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn ctrl_c_stops_the_server_and_restores_settings() {
    require_root!();
    assert!(
        have("redis-server"),
        "redis-server is not installed (.ci/run installs it)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port().to_string();
    let server = format!("redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no");
    let db = dir.path().join("r.db");
    let thp_before = thp_enabled();
    /// The hugelab under test, killed if the test fails before it exits (it would hold the
    /// settings journal and fail every later test).
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    for presses in [1, 2] {
        let mut child = Running(
            std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
                .args([
                    "run",
                    "--server",
                    &server,
                    "--ready",
                    &format!("tcp:127.0.0.1:{port}"),
                    "--arm",
                    "never=thp=never",
                    "--arm",
                    "always=thp=always",
                    "--blocks",
                    "5",
                    "--warmup",
                    "0",
                    "--db",
                    &db.display().to_string(),
                    "--",
                    "sleep",
                    "3",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Wait until the trial's server is up (after any other test's `hugelab run` holding
        // the settings, for minutes: the wait's end is a hang), then press Ctrl-C once or twice.
        let up = (0..6000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            !redis_running(&port).is_empty()
        });
        assert!(up, "the server came up");
        for _ in 0..presses {
            // SAFETY: signalling the hugelab this test started.
            unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let status = child.0.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{presses} Ctrl-C");
        assert!(
            redis_running(&port).is_empty(),
            "{presses} Ctrl-C: server left"
        );
        assert_eq!(thp_enabled(), thp_before, "{presses} Ctrl-C: THP restored");
    }
}

/// A memcached command on a free loopback port with `mb` MiB of cache (its port, the command,
/// and memcslap's `--servers` for it); `mb` tells the tests' servers apart.
fn memcached_on_free_port(mb: u32) -> (String, String, String) {
    let port = common::free_port().to_string();
    let server = format!("memcached -u root -l 127.0.0.1 -p {port} -m {mb}");
    let target = format!("--servers=127.0.0.1:{port}");
    (port, server, target)
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: THP modes")]
#[cfg_attr(
    missing_memcached,
    ignore = "needs memcached and memcslap (.ci/run installs them)"
)]
fn memcached_large_pages_land_on_thp_and_refusal_under_never_is_loud() {
    require_root!();
    assert!(
        have("memcached") && have("memcslap"),
        "memcached or memcslap is not installed (.ci/run installs them)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let (port, server, target) = memcached_on_free_port(256);
    let db = dir.path().join("r.db");
    let thp_before = thp_enabled();
    // memcached -L refuses to start when THP is `never`: with --keep-going the run goes on and
    // that arm's trials fail with memcached's words; no block has every arm ok, so the run
    // failed (exit 4) although the other arms were measured. The restart design sets THP
    // `never` system-wide for that arm's trials (side by side, its server alone would get it).
    let out = common::hugelab_exits(
        [
            "run",
            "--design",
            "restart",
            "--preset",
            "memcached",
            "--arm",
            "never-L=thp=never,server.arg=-L,expect=thp",
            "--server",
            &server,
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--keep-going",
            "--json",
            "--db",
            &db.display().to_string(),
            "--",
            "memcslap",
            &target,
            "--concurrency=2",
            "--execute-number=2000",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let all = trials(&db);
    for t in arm_trials(&all, &v, "large-pages") {
        let m = &served(t).memory;
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        assert!(m.anon_huge >= 16 << 20, "{m:?}");
    }
    for t in arm_trials(&all, &v, "off") {
        assert_eq!(served(t).memory.anon_huge, 0);
    }
    for t in arm_trials(&all, &v, "never-L") {
        let why = t.evidence.failure_reason.as_deref().unwrap();
        assert!(
            !t.ok && why.contains("memcached said") && why.contains("huge pages support disabled"),
            "{why}"
        );
    }
    assert_eq!(thp_enabled(), thp_before);
    assert!(running_with(&format!("-p {port}")).is_empty());
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: memcached as root")]
#[cfg_attr(
    missing_memcached,
    ignore = "needs memcached and memcslap (.ci/run installs them)"
)]
fn memcached_preset_runs_warm_with_a_port_per_arm_and_memcslap_follows() {
    require_root!();
    assert!(
        have("memcached") && have("memcslap"),
        "memcached or memcslap is not installed (.ci/run installs them)"
    );
    // -L needs THP madvise or always: no other test may set `never` meanwhile.
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    // The user's command as they would run it, one literal port: the preset gives every arm's
    // server its own, and points memcslap and the readiness probe at it.
    let (port, server, target) = memcached_on_free_port(129);
    let db = dir.path().join("r.db");
    let v = common::hugelab_json([
        "run",
        "--preset",
        "memcached",
        "--server",
        &server,
        "--blocks",
        "4",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "memcslap",
        &target,
        "--concurrency=2",
        "--execute-number=2000",
    ]);
    let sp = &v["plan"]["server"];
    assert_eq!(sp["design"], "warm", "{sp}");
    assert_eq!(sp["ready"], "tcp:127.0.0.1:{port}", "{sp}");
    let ports: Vec<u64> = sp["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["port"].as_u64().unwrap())
        .collect();
    assert!(
        ports[0] != ports[1] && !ports.iter().any(|p| p.to_string() == port),
        "{ports:?}"
    );
    let load = v["plan"]["command"].to_string();
    assert!(load.contains("--servers=127.0.0.1:{port}"), "{load}");
    let all = trials(&db);
    for t in arm_trials(&all, &v, "large-pages") {
        let m = &served(t).memory;
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        assert!(m.anon_huge >= 16 << 20, "{m:?}");
    }
    let off = arm_trials(&all, &v, "off");
    assert_eq!(off.len(), 4);
    for t in off {
        assert!(t.ok, "{:?}", t.evidence);
        assert_eq!(served(t).memory.anon_huge, 0);
    }
    assert!(running_with("-m 129").is_empty());
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: hugetlb pools")]
#[cfg_attr(missing_java, ignore = "needs a JDK (.ci/run installs it)")]
fn jvm_preset_sizes_a_pool_for_the_heap_so_hugetlbfs_is_measured() {
    require_root!();
    assert!(have("java") && have("javac"), "no JDK (java, javac)");
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("build");
    common::succeed(
        Command::new("javac")
            .arg("-d")
            .arg(&build)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jvm/Touch.java")),
    );
    let db = dir.path().join("r.db");
    let pool_before = pool_2m();
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "jvm",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "java",
        "-Xms256m",
        "-Xmx256m",
        "-cp",
        &build.display().to_string(),
        "Touch",
        "64",
        "2",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let all = trials(&db);
    let hugetlbfs = arm_trials(&all, &v, "hugetlbfs");
    assert_eq!(hugetlbfs.len(), 2);
    for t in hugetlbfs {
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        assert!(
            t.evidence.gathered.memory.peak_hugetlb >= 64 << 20,
            "{:?}",
            t.evidence.gathered.memory
        );
    }
    // The pool was the arm's alone: 128 heap pages + 8 + 128.
    let spec = &v["plan"]["arms"][2]["system"][0];
    assert_eq!(spec[1], "264", "{spec}");
    assert_eq!(pool_2m(), pool_before, "pool restored");
}

#[test]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn a_server_that_daemonizes_is_followed_through_its_pidfile() {
    assert!(
        have("redis-server") && have("redis-cli"),
        "redis-server or redis-cli is not installed (.ci/run installs them)"
    );
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port().to_string();
    let pidfile = dir.path().join("redis.pid");
    let server = format!(
        "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile {}",
        pidfile.display()
    );
    // A pidfile left behind naming a process that has exited but is not reaped (a zombie, as
    // a previous daemon stays when PID 1 does not reap orphans): not the daemon to follow.
    let zombie = Command::new("true").spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::fs::write(&pidfile, format!("{}\n", zombie.id())).unwrap();
    let db = dir.path().join("r.db");
    common::hugelab_stdout([
        "run",
        "--server",
        &server,
        "--server-pidfile",
        &pidfile.display().to_string(),
        "--ready",
        &format!("tcp:127.0.0.1:{port}"),
        "--arm",
        "a=",
        "--arm",
        "b=env.X=1",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "redis-cli",
        "-p",
        &port,
        "ping",
    ]);
    let all = trials(&db);
    assert_eq!(all.len(), 4);
    let mut pids = std::collections::BTreeSet::new();
    for t in &all {
        let s = served(t);
        assert!(t.ok, "{s:?}");
        // The daemon itself was read (its memory, its comm), not the command that started it.
        assert!(s.memory.rss > 1 << 20, "{s:?}");
        assert!(!s.memory.segments.is_empty(), "{s:?}");
        pids.insert(s.pid.unwrap());
    }
    assert_eq!(pids.len(), 4, "a fresh daemon per trial");
    assert!(
        !pids.contains(&(zombie.id() as i32)),
        "the zombie was followed"
    );
    drop(zombie);
    assert!(redis_running(&port).is_empty());
}

#[test]
#[cfg_attr(missing_sysbench, ignore = "needs sysbench (.ci/run installs it)")]
fn sysbench_output_is_read_by_its_parser() {
    assert!(
        have("sysbench"),
        "sysbench is not installed (.ci/run installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = common::hugelab_stdout([
        "run",
        "--metric",
        "sysbench",
        "--arm",
        "a=",
        "--arm",
        "b=",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "sysbench",
        "memory",
        "--memory-total-size=64M",
        "--percentile=99",
        "run",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["plan"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    // The load's metrics, then the costs every run records.
    assert_eq!(
        names,
        [
            "wall_s",
            "events_per_s",
            "lat_avg_ms",
            "lat_p99_ms",
            "peak_mem_bytes",
            "user_cpu_s",
            "sys_cpu_s"
        ]
    );
    for t in trials(&db) {
        assert!(t.ok, "{:?}", t.evidence);
        assert!(
            t.metrics["events_per_s"] > 0.0 && t.metrics["mib_per_s"] > 0.0,
            "{:?}",
            t.metrics
        );
        assert!(t.metrics.contains_key("lat_p99_ms"));
    }
}

/// `a` is within `tol` (a fraction) of `b`.
fn near(a: u64, b: u64, tol: f64) -> bool {
    (a as f64 - b as f64).abs() <= tol * b.max(1) as f64
}

#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: hugetlb pools, shmem THP, runs PostgreSQL as postgres"
)]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn warm_postgres_counts_each_servers_huge_pages_as_the_kernel_does_and_flags_a_fallback() {
    require_root!();
    let _lock = common::knob_lock();
    let pg = PrivatePg::new();
    let (dir, port, sock) = (&pg.dir, pg.port, pg.sock.clone());
    let server = pg.server("-c shared_buffers=64MB");
    let db = dir.path().join("r.db");
    let (shmem_before, pool_before) = (
        common::selected("/sys/kernel/mm/transparent_hugepage/shmem_enabled"),
        pool_2m(),
    );
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "postgres",
        "--user",
        "postgres",
        "--server",
        &server,
        // A server that is not on what its arm expects: FLAGGED under the warm design too.
        "--arm",
        "mislabelled=server.arg=-c,server.arg=huge_pages=off,expect=hugetlb-2m",
        // One-second bursts: this claim is about memory, not timing, and a burst calibrated
        // against a busy machine's noise (`-T 7` in CI) only makes the test longer.
        "--burst",
        "1s",
        "--blocks",
        "4",
        "--lifetime-blocks",
        "2",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "pgbench",
        "-S",
        "-T",
        "1",
        "-c",
        "2",
        "-h",
        &sock,
        "-p",
        &port.to_string(),
        "postgres",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["plan"]["server"]["design"], "warm",
        "{}",
        v["plan"]["server"]
    );
    let all = trials(&db);
    assert_eq!(all.len(), 16, "4 arms × 4 blocks");
    let lifetimes: std::collections::BTreeSet<usize> =
        all.iter().filter_map(|t| t.evidence.lifetime).collect();
    assert_eq!(lifetimes.len(), 2, "two lifetimes of two blocks");
    for t in arm_trials(&all, &v, "hugetlb-2m") {
        let m = &served(t).memory;
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        // The segment's own pages against the pool's pages in use, read at the same moment;
        // under the warm design only this arm's server uses the pool.
        let ours = m.hugetlb.get(&(2 << 20)).copied().unwrap_or(0);
        let kernel = m.kernel.as_ref().unwrap().hugetlb_in_use[&(2 << 20)];
        assert!(
            ours >= 16 << 20,
            "the prewarmed buffers are on the pool: {m:?}"
        );
        assert!(
            near(ours, kernel, 0.05),
            "ours {ours} vs the kernel's {kernel}"
        );
        assert!(
            m.segments
                .iter()
                .any(|s| s.counted.as_deref() == Some("segment")),
            "{m:?}"
        );
        assert!(served(t).during_load.processes >= 3);
    }
    for t in arm_trials(&all, &v, "thp") {
        let m = &served(t).memory;
        assert!(t.ok && t.flagged.is_none(), "{:?}", t.flagged);
        let ours = m.shmem_pmd;
        let kernel = m.kernel.as_ref().unwrap().shmem_huge;
        assert!(ours >= 16 << 20, "{m:?}");
        assert!(
            near(ours, kernel, 0.05),
            "ours {ours} vs ShmemHugePages {kernel}"
        );
    }
    for t in arm_trials(&all, &v, "off") {
        // THP never for this server alone, under the run's shmem_enabled=always.
        let m = &served(t).memory;
        assert!(t.flagged.is_none(), "{:?}", t.flagged);
        assert_eq!(m.shmem_pmd, 0, "{m:?}");
        assert!(!m.thp_disabled.is_empty(), "{m:?}");
    }
    for t in arm_trials(&all, &v, "mislabelled") {
        let f = t
            .flagged
            .as_deref()
            .expect("not on the pages its arm expects");
        assert!(
            f.contains("0% of the memory that matters") && f.contains("on 2M hugetlb pages"),
            "{f}"
        );
    }
    // The wall time of a timed burst is recorded, not contrasted; tps leads.
    assert_eq!(v["plan"]["metrics"][0]["context"], true);
    assert_eq!(v["plan"]["metrics"][1]["name"], "tps");
    // Its table says so, with no comparison in it.
    let shown = common::hugelab_stdout(["results", "show", "1", "--db", &db.display().to_string()]);
    assert!(
        shown.contains("wall_s (context: recorded, not compared)")
            && !shown.contains("0 complete blocks"),
        "{shown}"
    );
    assert_eq!(
        (
            common::selected("/sys/kernel/mm/transparent_hugepage/shmem_enabled"),
            pool_2m()
        ),
        (shmem_before, pool_before),
        "settings restored"
    );
    assert!(
        running_with("hugelab-trial-").is_empty(),
        "{:?}",
        running_with("hugelab-trial-")
    );
}

#[test]
#[cfg_attr(
    unprivileged,
    ignore = "needs root: hugetlb pools, shmem THP, runs PostgreSQL as postgres"
)]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn postgres_replicas_each_run_on_a_data_copy_of_their_own_and_share_a_pool_sized_for_all() {
    require_root!();
    let _lock = common::knob_lock();
    let pg = PrivatePg::new();
    let (dir, port, sock) = (&pg.dir, pg.port, pg.sock.clone());
    let server = pg.server("-c shared_buffers=64MB");
    let db = dir.path().join("r.db");
    let pool_before = pool_2m();
    let port = port.to_string();
    let v = common::hugelab_json([
        "run",
        "--preset",
        "postgres",
        "--user",
        "postgres",
        "--server",
        &server,
        "--replicas",
        "2",
        // One-second bursts: this claim is about memory, not timing, and a burst calibrated
        // against a busy machine's noise (`-T 7` in CI) only makes the test longer.
        "--burst",
        "1s",
        "--blocks",
        "2",
        "--lifetime-blocks",
        "2",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "pgbench",
        "-S",
        "-T",
        "1",
        "-c",
        "2",
        "-h",
        &sock,
        "-p",
        &port,
        "postgres",
    ]);
    let w = &v["plan"]["server"]["warm"];
    assert_eq!(w["replicas"], 2, "{w}");
    let all = trials(&db);
    // Three arms, two blocks, two replicas: every server came up on its own copy of the data
    // (PostgreSQL refuses a data directory another server holds).
    assert_eq!(all.len(), 3 * 2 * 2);
    assert!(
        all.iter().all(|t| t.ok),
        "{:?}",
        all.iter().map(|t| &t.flagged).collect::<Vec<_>>()
    );
    let pids: std::collections::BTreeSet<i32> = all.iter().filter_map(|t| served(t).pid).collect();
    assert_eq!(pids.len(), 6, "one server per arm and replica");
    // Both replicas' hugetlb servers are on the pool, which was sized for both: their pages
    // together are the kernel's pages in use, read with them.
    let huge = arm_trials(&all, &v, "hugetlb-2m");
    assert_eq!(huge.len(), 4);
    for block in [0, 2] {
        let pair: Vec<_> = huge.iter().filter(|t| t.block / 2 == block / 2).collect();
        assert_eq!(pair.len(), 2);
        let ours: u64 = pair
            .iter()
            .map(|t| {
                served(t)
                    .memory
                    .hugetlb
                    .get(&(2 << 20))
                    .copied()
                    .unwrap_or(0)
            })
            .sum();
        let kernel = pair
            .iter()
            .map(|t| served(t).memory.kernel.as_ref().unwrap().hugetlb_in_use[&(2 << 20)])
            .max()
            .unwrap();
        for t in &pair {
            assert!(t.flagged.is_none(), "{:?}", t.flagged);
            let m = served(t).memory.hugetlb.get(&(2 << 20)).copied();
            assert!(m.unwrap_or(0) >= 16 << 20, "{m:?}");
        }
        assert!(
            near(ours, kernel, 0.05),
            "ours {ours} vs the kernel's {kernel}"
        );
    }
    assert_eq!(pool_2m(), pool_before, "the pool restored");
    assert!(running_with("hugelab-trial-").is_empty());
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: runs PostgreSQL as postgres")]
#[cfg_attr(missing_postgres, ignore = "needs PostgreSQL (.ci/run installs it)")]
fn warm_a_a_on_fresh_postgres_servers_gives_no_more_false_verdicts_than_the_level() {
    require_root!();
    let bin = pg_bin().expect("PostgreSQL is needed (.ci/run installs it)");
    // Its servers' shared memory would take THP under another test's shmem_enabled=always.
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let data = pg_cluster(&bin, dir.path());
    // Each arm's own copy of the data, named by the arm: the server command reaches it and
    // its own socket directory and port through placeholders, as a user without a preset would.
    for arm in ["a", "b"] {
        common::succeed(
            Command::new("cp")
                .args(["-a", &data.display().to_string()])
                .arg(dir.path().join(arm)),
        );
    }
    let server = format!(
        "{} -D {}/{{arm}} -k {{dir}} -p {{port}} -c listen_addresses= -c shared_buffers=32MB -c huge_pages=off",
        bin.join("postgres").display(),
        dir.path().display()
    );
    // Six A/A runs, each on fresh servers (new shared memory every lifetime): at 99%, two or
    // more false verdicts in six would happen with probability 0.0015. (The level itself is
    // the simulation study's to certify; this catches a gross defect on real servers.)
    let mut false_verdicts = Vec::new();
    for run in 0..6 {
        let db = dir.path().join(format!("aa{run}.db"));
        let v = common::hugelab_json([
            "run",
            "--user",
            "postgres",
            "--server",
            &server,
            "--ready",
            "log:database system is ready to accept connections",
            "--arm",
            "a=",
            "--arm",
            "b=env.HUGELAB_AA=1",
            // Eight lifetimes, the units: one block each, and short bursts (a server's start
            // and stop is most of a lifetime's time; the claim needs fresh servers, not long
            // bursts).
            "--blocks",
            "8",
            "--lifetime-blocks",
            "1",
            "--json",
            "--db",
            &db.display().to_string(),
            "--",
            "pgbench",
            "-S",
            "-t",
            "800",
            "-c",
            "2",
            "-h",
            "{dir}",
            "-p",
            "{port}",
            "postgres",
        ]);
        assert_eq!(v["plan"]["server"]["design"], "warm");
        let tps = v["report"]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"]["name"] == "tps")
            .unwrap();
        assert_eq!(tps["lifetimes"], 8, "{}", tps);
        for (arm, c) in tps["contrasts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (&x[0], &x[1]))
        {
            if arm == "b" && (c["verdict"] == "FASTER" || c["verdict"] == "SLOWER") {
                false_verdicts.push(format!("run {run}: {c}"));
            }
        }
    }
    assert!(false_verdicts.len() <= 1, "{false_verdicts:#?}");
}

#[test]
fn a_warm_server_that_dies_fails_the_run_and_every_other_server_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Arm b's server dies 1.5 s into its lifetime; arm a's would run for ever.
    let out = common::hugelab_exits(
        [
            "run",
            "--shell",
            "--server",
            "echo up {port}; if [ {arm} = b ]; then (sleep 1.5; kill $$) & fi; exec sleep 317",
            "--ready",
            "log:^up",
            "-a",
            "a=",
            "-a",
            "b=env.X=1",
            "--blocks",
            "40",
            "--lifetime-blocks",
            "40",
            "--json",
            "--db",
            &db.display().to_string(),
            "--",
            "sleep 0.1",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plan"]["server"]["design"], "warm");
    let why = v["stop_reason"].as_str().unwrap();
    assert!(
        why.contains("trial of arm b failed") && why.contains("exited during the load"),
        "{why}"
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        running_with("sleep 317").is_empty(),
        "{:?}",
        running_with("sleep 317")
    );
    // Arm b's server never gets ready: the run fails with its last line, and arm a's server,
    // already up or not yet started, is not left running.
    let db = dir.path().join("r2.db");
    let out = common::hugelab_exits(
        [
            "run",
            "--shell",
            "--server",
            "if [ {arm} = b ]; then echo 'FATAL: no luck on port {port}'; else echo up; fi; exec sleep 318",
            "--ready",
            "log:^up",
            "--ready-timeout",
            "2s",
            "-a",
            "a=",
            "-a",
            "b=env.X=1",
            "--blocks",
            "4",
            "--json",
            "--db",
            &db.display().to_string(),
            "--",
            "sleep 0.1",
        ],
        4,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let why = v["stop_reason"].as_str().unwrap();
    assert!(
        why.contains("the server of arm b did not come up") && why.contains("FATAL: no luck"),
        "{why}"
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        running_with("sleep 318").is_empty(),
        "{:?}",
        running_with("sleep 318")
    );
}

#[test]
#[cfg_attr(unprivileged, ignore = "needs root: THP modes")]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn ctrl_c_stops_every_warm_server_and_restores_settings() {
    require_root!();
    assert!(
        have("redis-server"),
        "redis-server is not installed (.ci/run installs it)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let thp_before = thp_enabled();
    for presses in [1, 2] {
        let db = dir.path().join(format!("r{presses}.db"));
        /// Killed if the test fails before it exits (it would hold the settings journal).
        struct Running(std::process::Child);
        impl Drop for Running {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let mut child = Running(
            std::process::Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
                .args([
                    "run",
                    "--server",
                    "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no",
                    "--ready",
                    "tcp:127.0.0.1:{port}",
                    "--arm",
                    "never=thp=never",
                    "--arm",
                    "always=thp=always",
                    "--blocks",
                    "50",
                    "--db",
                    &db.display().to_string(),
                    "--",
                    "sleep",
                    "3",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        // The arms' ports, from the plan stored as the run starts; wait for both servers. The
        // run first waits for any other `hugelab run` holding the settings (another test's, for
        // minutes), so the wait is long: its end is a hang, not a slow machine.
        let ports: Vec<String> = (0..6000)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let store = hugelab::store::Store::open(&db).ok()?;
                let (run, _, _) = store.load(1).ok()?;
                let slots = run.plan.server()?.slots.clone();
                let ports: Vec<String> = slots.iter().map(|s| s.port.to_string()).collect();
                ports
                    .iter()
                    .all(|p| !redis_running(p).is_empty())
                    .then_some(ports)
            })
            .expect("both arms' servers came up");
        assert_eq!(ports.len(), 2);
        for _ in 0..presses {
            // SAFETY: signalling the hugelab this test started.
            unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let status = child.0.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{presses} Ctrl-C");
        for p in &ports {
            assert!(
                redis_running(p).is_empty(),
                "{presses} Ctrl-C: server on {p} left"
            );
        }
        // Its private directories (each arm's {dir}) are gone, also after an immediate exit.
        let prefix = format!("hugelab-trial-{}-", child.0.id());
        let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "{presses} Ctrl-C: {left:?} left");
        assert_eq!(thp_enabled(), thp_before, "{presses} Ctrl-C: THP restored");
    }
}

/// `--during`: a BGSAVE inside every burst of Redis under THP `never` and `always` (the redis
/// preset's arms): per trial the fork Redis itself timed (`latest_fork_usec`) and the memory the
/// save's child added to the server tree while it lived, contrasted with intervals; Redis's own
/// copy-on-write count (`rdb_last_cow_size`, measured by its child) is stored beside it.
#[test]
#[cfg_attr(unprivileged, ignore = "needs root: THP modes")]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
fn redis_bgsave_during_each_burst_has_its_fork_time_and_copy_on_write_per_arm() {
    require_root!();
    assert!(
        have("redis-server") && have("redis-benchmark") && have("redis-cli"),
        "redis-server, redis-benchmark and redis-cli are needed (.ci/run installs them)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port().to_string();
    let server = format!("redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no");
    let db = dir.path().join("r.db");
    let thp_before = thp_enabled();
    let out = common::hugelab_stdout([
        "run",
        "--preset",
        "redis",
        "--server",
        &server,
        // About 50 MB of 1 KiB values at every lifetime's start, for the save to copy: the
        // claim is that each trial has the event's figures, which any size gives (250 MB made
        // this the suite's longest test, at two minutes).
        "--server-warmup",
        "redis-benchmark -p {port} -q -t set -n 50000 -d 1024 -r 50000 -P 32 > /dev/null",
        "--during",
        "redis-cli -p {port} bgsave",
        // Early in the burst: a burst that ends before the moment has no event (in CI two of
        // seven 150,000-SET bursts once ended before 300 ms).
        "--during-at",
        "100ms",
        // Every block a lifetime of its own: lifetimes are the units of a warm run.
        "--blocks",
        "7",
        "--lifetime-blocks",
        "1",
        "--confidence",
        "0.9",
        "--json",
        "--db",
        &db.display().to_string(),
        "--",
        "redis-benchmark",
        "-p",
        &port,
        "-q",
        "--csv",
        "-t",
        "set",
        "-n",
        "150000",
        "-d",
        "1024",
        "-r",
        "50000",
        "-P",
        "16",
    ]);
    assert_eq!(thp_enabled(), thp_before, "THP restored");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let metric = |name: &str| {
        v["report"]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"]["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {}", v["report"]["metrics"]))
            .clone()
    };
    for name in ["event_fork_s", "event_mem_bytes"] {
        let m = metric(name);
        assert_eq!(m["metric"]["cost"], true, "{name}");
        let always = m["contrasts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c[0] == "always")
            .unwrap()[1]
            .clone();
        assert!(
            always["percent"]["lo"].is_number() && always["percent"]["hi"].is_number(),
            "{name}: always vs never has an interval: {always}"
        );
    }
    let all = trials(&db);
    for arm in ["never", "always"] {
        for t in arm_trials(&all, &v, arm) {
            let e = t.evidence.event.as_ref().unwrap();
            assert!(e.view.ran && e.view.ok, "{arm}: {e:?}");
            assert!(e.view.children >= 1, "{arm}: the save's child: {e:?}");
            assert!(e.fork_s.unwrap() > 0.0, "{arm}: {e:?}");
            assert!(e.server_cow_bytes.is_some(), "{arm}: {e:?}");
            assert!(t.metrics["event_mem_bytes"] > 0.0, "{arm}: {e:?}");
        }
    }
    assert!(running_with(&port).is_empty(), "every server stopped");
}

/// At a lifetime boundary every arm's server is started at once: each takes 2 s to be ready,
/// and every server of a lifetime has started before any of them is ready (one after another,
/// each would start only after the previous one was up).
#[test]
fn a_lifetimes_servers_start_together_and_their_ready_waits_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let server = format!(
        "echo start {{arm}} $(date +%s%N) >> {log}; sleep 2; echo ready {{arm}} $(date +%s%N) >> {log}; echo up {{port}}; exec sleep 319",
        log = log.display()
    );
    common::hugelab_stdout([
        "run",
        "--shell",
        "--server",
        &server,
        "--ready",
        "log:^up",
        "-a",
        "a=",
        "-a",
        "b=env.X=1",
        "-a",
        "c=env.X=2",
        "--blocks",
        "4",
        "--lifetime-blocks",
        "2",
        // One replica: a chosen further replica's servers start after the first's are measured.
        "--replicas",
        "1",
        "--no-save",
        "--",
        "sleep 0.05",
    ]);
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<(&str, u64)> = text
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[0], w[2].parse().unwrap())
        })
        .collect();
    // Two lifetimes of three servers: in each, the three starts come before the first ready.
    assert_eq!(events.len(), 12, "{text}");
    let mut lifetimes = 0;
    let mut i = 0;
    while i < events.len() {
        let round = &events[i..i + 6];
        let last_start = round.iter().filter(|e| e.0 == "start").map(|e| e.1).max();
        let first_ready = round.iter().filter(|e| e.0 == "ready").map(|e| e.1).min();
        assert!(last_start < first_ready, "{text}");
        lifetimes += 1;
        i += 6;
    }
    assert_eq!(lifetimes, 2);
    assert!(running_with("sleep 319").is_empty());
}

#[cfg_attr(
    unprivileged,
    ignore = "needs root: runs PostgreSQL as its own user and sizes a hugetlb pool"
)]
#[test]
fn the_postgres_preset_finds_psql_and_pgbench_beside_the_server_when_path_has_none() {
    require_root!();
    let _lock = common::knob_lock();
    let pg = PrivatePg::new();
    let (port, sock) = (pg.port, pg.sock.clone());
    let server = pg.server("-c shared_buffers=32MB");
    // A PATH with neither psql nor pgbench on it (the system's tools hugelab itself uses, cp
    // for the data copies, are there): only the server's own directory has them.
    let empty = tempfile::tempdir().unwrap();
    let cp = hugelab::probe::program::find_program("cp").unwrap();
    std::os::unix::fs::symlink(cp, empty.path().join("cp")).unwrap();
    let out = assert_cmd::Command::cargo_bin("hugelab")
        .unwrap()
        .env("PATH", empty.path())
        .args([
            "run",
            "--preset",
            "postgres",
            "--user",
            "postgres",
            "--server",
            &server,
            // One-second bursts: this claim is about memory, not timing, and a burst calibrated
            // against a busy machine's noise (`-T 7` in CI) only makes the test longer.
            "--burst",
            "1s",
            "--blocks",
            "2",
            "--warmup",
            "0",
            "--no-save",
            "--json",
            "--",
            "pgbench",
            "-S",
            "-T",
            "1",
            "-c",
            "2",
            "-h",
            &sock,
            "-p",
            &port.to_string(),
            "postgres",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warmup = v["plan"]["server"]["warmup"].as_str().unwrap();
    assert!(
        warmup.starts_with(&format!("{} ", pg.bin.join("psql").display())),
        "{warmup}"
    );
    assert_eq!(
        v["plan"]["command"][0],
        pg.bin.join("pgbench").display().to_string()
    );
    assert!(
        v["blocks_done"].as_u64().unwrap() >= 2,
        "{}",
        v["stop_reason"]
    );
}

/// `tmpfs.huge=` with a server: each arm's directory (`{dir}`) is a tmpfs mounted with the
/// arm's `huge=` policy, so what the server writes there (Redis's dump.rdb) is on 2 MiB pages
/// for `always` and not for `never`, by the kernel's own shmem counters; nothing stays mounted.
#[test]
#[cfg_attr(
    missing_redis,
    ignore = "needs redis-server, redis-benchmark and redis-cli (.ci/run installs them)"
)]
#[cfg_attr(unprivileged, ignore = "needs root: mounts a tmpfs")]
fn a_server_arms_directory_is_a_tmpfs_with_its_huge_policy() {
    require_root!();
    assert!(
        have("redis-server") && have("redis-benchmark") && have("redis-cli"),
        "redis-server, redis-benchmark or redis-cli is not installed (.ci/run installs them)"
    );
    let _lock = common::knob_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = common::hugelab_stdout([
        "run",
        "--server",
        "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no --dir {dir}",
        "--ready",
        "tcp:127.0.0.1:{port}",
        "--arm",
        "small=tmpfs.huge=never",
        "--arm",
        "huge=tmpfs.huge=always",
        "--schedule",
        "alternating",
        "--blocks",
        "2",
        "--warmup",
        "0",
        "--json",
        "--db",
        &db.display().to_string(),
        "--shell",
        "--",
        "redis-benchmark -p {port} -q --csv -t set -n 100000 -r 100000 -d 128 && redis-cli -p {port} save >/dev/null",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let all = trials(&db);
    let shmem = |arm: &str| -> u64 {
        arm_trials(&all, &v, arm)
            .iter()
            .map(|t| {
                let k = &t.evidence.gathered.kernel_counters;
                k.get("mthp.2M.shmem_alloc").copied().unwrap_or(0)
            })
            .sum()
    };
    assert!(all.iter().all(|t| t.ok), "{out}");
    // The dump (tens of MiB) on the huge arm's tmpfs takes 2 MiB pages; the never arm's none.
    assert!(shmem("huge") >= 2, "huge arm: {} {out}", shmem("huge"));
    assert_eq!(shmem("small"), 0, "{out}");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains("hugelab-trial-"), "{mounts}");
    // A server that does not name its directory would not use the tmpfs: bad input.
    let e = common::hugelab_stderr(
        [
            "run",
            "--server",
            "redis-server --port {port}",
            "--ready",
            "tcp:127.0.0.1:{port}",
            "-a",
            "a=tmpfs.huge=always",
            "-a",
            "b=",
            "--",
            "redis-cli",
            "-p",
            "{port}",
            "ping",
        ],
        2,
    );
    assert!(e.contains("name {dir} in --server"), "{e}");
}
