//! Presets for servers (`run --server … --preset NAME`): the arms a DBA or an operator would
//! compare, written as ordinary arm specs (printed, so they can be copied and changed), the
//! readiness probe, and how to size a hugetlb pool for the server's shared memory. The user
//! gives the server command (binary, data directory, port); the load parser comes from the
//! load command.

pub use crate::model::arm::side_by_side::Slot;

use crate::units::Bytes;

mod per_arm;
pub use per_arm::{PerArm, per_arm};

pub const SERVICE_PRESETS: &str = "postgres, redis, memcached, mariadb";

/// What a service preset brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePreset {
    /// `NAME=SPEC` arms, in order (the first is the baseline).
    pub arms: Vec<String>,
    /// The readiness probe, as `--ready` takes it.
    pub ready: String,
}

pub fn is_service(name: &str) -> bool {
    matches!(name, "postgres" | "redis" | "memcached" | "mariadb")
}

/// The value of an option in a server's words: `-p 5433`, `-p5433`, `--port=5433`,
/// `--port 5433`.
pub fn option<'a>(words: &'a [String], short: Option<&str>, long: &str) -> Option<&'a str> {
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == long || short.is_some_and(|s| w == s) {
            return it.next().map(String::as_str);
        }
        if let Some(v) = w.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
        if let Some(s) = short
            && let Some(v) = w.strip_prefix(s)
            && !v.is_empty()
            && !w.starts_with("--")
        {
            return Some(v);
        }
    }
    None
}

/// The command that prints how many 2 MiB pages the server's shared memory needs, for servers
/// that can say so without starting: PostgreSQL 15+ (`postgres … -C
/// shared_memory_size_in_huge_pages`, run with the server's own options and data directory).
pub fn pool_query(name: &str, server: &[String]) -> Option<Vec<String>> {
    (name == "postgres").then(|| {
        let mut q = server.to_vec();
        q.extend(["-C".into(), "shared_memory_size_in_huge_pages".into()]);
        q
    })
}

/// 2 MiB pages for MariaDB's buffer pool with `--large-pages`: the pool size
/// (`--innodb-buffer-pool-size`, 128M by default) plus an eighth and 8 pages for the other
/// large allocations (log buffer, adaptive hash index).
pub fn mariadb_pages(server: &[String]) -> Result<u64, String> {
    let size = match option(server, None, "--innodb-buffer-pool-size")
        .or_else(|| option(server, None, "--innodb_buffer_pool_size"))
    {
        Some(v) => {
            v.parse::<Bytes>()
                .map_err(|e| format!("--innodb-buffer-pool-size {v:?}: {e}"))?
                .0
        }
        None => 128 << 20,
    };
    let pages = size.div_ceil(2 << 20);
    Ok(pages + pages / 8 + 8)
}

/// The readiness probe memcached gives: its unix socket (`-s`), else TCP on `-l` (first
/// address; 127.0.0.1 when it listens everywhere) and `-p` (11211).
fn memcached_ready(server: &[String]) -> String {
    if let Some(s) = option(server, Some("-s"), "--unix-socket") {
        return format!("unix:{s}");
    }
    let port = option(server, Some("-p"), "--port").unwrap_or("11211");
    format!("tcp:{}:{port}", listen_host(server))
}

/// The address memcached listens on for a client: the first of `-l` (127.0.0.1 when it
/// listens everywhere or `-l` is absent).
fn listen_host(server: &[String]) -> &str {
    option(server, Some("-l"), "--listen")
        .and_then(|l| l.split(',').next())
        .filter(|h| !h.is_empty() && *h != "0.0.0.0")
        .unwrap_or("127.0.0.1")
}

/// The preset's arms for `server` (the server's words); `pages`: 2 MiB pages its shared memory
/// needs, when known (the hugetlb arm's pool is then sized to hold them).
pub fn preset(name: &str, server: &[String], pages: Option<u64>) -> Result<ServicePreset, String> {
    let pool = |n: Option<u64>| n.map(|n| format!(",hugetlb.2M={n}")).unwrap_or_default();
    let (arms, ready): (Vec<String>, String) = match name {
        "postgres" => (
            vec![
                "off=server.arg=-c,server.arg=huge_pages=off".into(),
                format!(
                    "hugetlb-2m=server.arg=-c,server.arg=huge_pages=on{},expect=hugetlb-2m",
                    pool(pages)
                ),
                "thp=server.arg=-c,server.arg=huge_pages=off,shmem=always,expect=thp".into(),
            ],
            "log:database system is ready to accept connections".into(),
        ),
        "redis" => (
            vec![
                "never=thp=never,server.arg=--disable-thp,server.arg=no,expect=4k".into(),
                // THP madvise: beside `always` its server runs under the advised policy
                // (PR_THP_DISABLE_EXCEPT_ADVISED); Redis's allocator advises no region.
                "madvise=thp=madvise,server.arg=--disable-thp,server.arg=no".into(),
                "always=thp=always,server.arg=--disable-thp,server.arg=no,expect=thp".into(),
                // Redis's own default (disable-thp yes): under `always` it opts out by prctl,
                // which this arm shows (FLAGGED with the reason) rather than hides.
                "always-default=thp=always,expect=thp".into(),
            ],
            "log:Ready to accept connections".into(),
        ),
        "memcached" => (
            vec!["off=".into(), "large-pages=server.arg=-L,expect=thp".into()],
            memcached_ready(server),
        ),
        "mariadb" => (
            vec![
                "off=server.arg=--skip-large-pages".into(),
                format!(
                    "large-pages=server.arg=--large-pages{},expect=hugetlb-2m",
                    pool(Some(pages.map_or_else(|| mariadb_pages(server), Ok)?))
                ),
            ],
            "log:ready for connections".into(),
        ),
        _ => {
            return Err(format!(
                "unknown service preset {name:?}; valid: {SERVICE_PRESETS}"
            ));
        }
    };
    Ok(ServicePreset { arms, ready })
}

/// A preset's command that reports the server's own account of its last fork (Redis `INFO`:
/// `latest_fork_usec`, and its child's `rdb_last_cow_size`), placeholders to fill.
pub fn fork_report(preset: Option<&str>) -> Option<&'static str> {
    match preset {
        Some("redis") => Some("redis-cli -h {host} -p {port} INFO"),
        _ => None,
    }
}

pub const PLACEHOLDERS: [&str; 6] = ["{port}", "{host}", "{dir}", "{arm}", "{replica}", "{burst}"];

/// `s` with the slot's values in place of its placeholders (`{burst}` stays when no burst).
pub fn fill(s: &str, slot: &Slot) -> String {
    let mut out = s
        .replace("{port}", &slot.port.to_string())
        .replace("{host}", &slot.host)
        .replace("{dir}", &slot.dir)
        .replace("{arm}", &slot.arm)
        .replace("{replica}", &(slot.replica + 1).to_string());
    if let Some(b) = slot.burst {
        out = out.replace("{burst}", &b.to_string());
    }
    out
}

/// A path two replicas of one arm would share: per arm, its name and its words filled for two
/// replicas (each with a `{dir}` and `{port}` of its own). A word naming a path that differs from
/// arm to arm yet is the same for both replicas — built from `{arm}` alone, or an arm's literal
/// path — is a data directory or file the replicas' servers would both use: `(arm, word)`.
/// Paths the same for every arm (a binary, a shared configuration) are not the replicas' own.
pub fn replica_collision(
    per_arm: &[(String, Vec<String>, Vec<String>)],
) -> Option<(String, String)> {
    for (i, (arm, first, second)) in per_arm.iter().enumerate() {
        for (k, w) in first.iter().enumerate() {
            let per_arm_path = w.contains('/')
                && per_arm
                    .iter()
                    .enumerate()
                    .any(|(j, other)| j != i && other.1.get(k) != Some(w));
            if per_arm_path && second.get(k) == Some(w) {
                return Some((arm.clone(), w.clone()));
            }
        }
    }
    None
}

/// Two arms whose servers would listen on the same literal port (`--port 6391`, `-p 5433`,
/// `--port=3307`): `(first arm, second arm, port)`. `per_arm`: each arm's name and its server's
/// words, filled for it, with its `server.arg` words.
pub fn port_collision(per_arm: &[(String, Vec<String>)]) -> Option<(String, String, String)> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (arm, words) in per_arm {
        let Some(p) = option(words, Some("-p"), "--port").filter(|p| p.parse::<u16>().is_ok())
        else {
            continue;
        };
        if let Some((first, _)) = seen.iter().find(|(_, q)| *q == p) {
            return Some((first.to_string(), arm.clone(), p.to_string()));
        }
        seen.push((arm, p));
    }
    None
}

/// Whether any word holds a placeholder that gives each arm's server an address of its own.
pub fn has_address_placeholder(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| w.contains("{port}") || w.contains("{dir}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::arm::{Expect, parse_arm};
    use crate::control::Knob;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn every_preset_arm_parses_and_expects_what_it_asks_for() {
        let pg = preset("postgres", &words("postgres -D /db -p 5433"), Some(520)).unwrap();
        let arms: Vec<_> = pg.arms.iter().map(|s| parse_arm(s).unwrap()).collect();
        assert_eq!(arms[0].process.server_args, ["-c", "huge_pages=off"]);
        assert_eq!(arms[0].server_expectation(), None);
        let pool = Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        };
        assert!(arms[1].system.contains(&(pool, "520".into())));
        assert_eq!(
            arms[1].server_expectation(),
            Some(Expect::Hugetlb(Some(2 << 20)))
        );
        assert_eq!(arms[2].server_expectation(), Some(Expect::Thp));
        assert!(
            arms[2]
                .system
                .contains(&(Knob::ThpShmemEnabled, "always".into()))
        );
        let per_arm = |p: &[&str]| -> Vec<(String, Vec<String>)> {
            p.iter()
                .enumerate()
                .map(|(i, w)| (format!("a{i}"), words(w)))
                .collect()
        };
        assert_eq!(
            port_collision(&per_arm(&[
                "redis-server --port 6391 --dir /a",
                "redis-server --port 6391 --dir /b"
            ])),
            Some(("a0".into(), "a1".into(), "6391".into()))
        );
        assert_eq!(
            port_collision(&per_arm(&["postgres -p 5433", "postgres -p5434"])),
            None
        );
        assert_eq!(
            port_collision(&per_arm(&["mariadbd --port=3307", "mariadbd --port=3307"])),
            Some(("a0".into(), "a1".into(), "3307".into()))
        );
        let filled = |template: &str, arm: &str, replica: usize| {
            let slot = Slot {
                arm: arm.into(),
                port: 5000 + replica as u16,
                dir: format!("/run/d/{arm}/{replica}"),
                replica,
                ..Slot::default()
            };
            words(&fill(template, &slot))
        };
        let replicas = |template: &str| {
            let per: Vec<_> = ["a", "b"]
                .iter()
                .map(|x| {
                    (
                        x.to_string(),
                        filled(template, x, 0),
                        filled(template, x, 1),
                    )
                })
                .collect();
            replica_collision(&per)
        };
        // Built from {arm} alone: both replicas of an arm would use one data directory.
        assert_eq!(
            replicas("/usr/bin/postgres -D /tmp/pgw/{arm} -p {port}"),
            Some(("a".into(), "/tmp/pgw/a".into()))
        );
        // {replica} or {dir} gives each its own; a path every arm shares is not a replica's.
        assert_eq!(
            replicas("/usr/bin/postgres -D /tmp/pgw/{arm}-{replica} -p {port}"),
            None
        );
        assert_eq!(
            replicas("/usr/bin/redis-server --dir {dir} --port {port}"),
            None
        );
        let redis = preset("redis", &words("redis-server --port 0"), None).unwrap();
        let arms: Vec<_> = redis.arms.iter().map(|s| parse_arm(s).unwrap()).collect();
        assert_eq!(arms[1].name, "madvise");
        assert_eq!(arms[2].process.server_args, ["--disable-thp", "no"]);
        assert!(arms[3].process.server_args.is_empty());
        assert_eq!(arms[3].server_expectation(), Some(Expect::Thp));
        let mc = preset(
            "memcached",
            &words("memcached -u root -p 11311 -m 512"),
            None,
        )
        .unwrap();
        assert_eq!(mc.ready, "tcp:127.0.0.1:11311");
        let mc = preset("memcached", &words("memcached -s /tmp/mc.sock"), None).unwrap();
        assert_eq!(mc.ready, "unix:/tmp/mc.sock");
        let m = preset(
            "mariadb",
            &words("mariadbd --innodb-buffer-pool-size=256M"),
            None,
        )
        .unwrap();
        // 128 pages + 16 + 8.
        assert!(m.arms[1].contains("hugetlb.2M=152"), "{:?}", m.arms);
        assert!(
            preset("oracle", &[], None)
                .unwrap_err()
                .contains("postgres, redis")
        );
    }

    #[test]
    fn options_and_queries() {
        let w = words("postgres -D /db -p5433 --shared_buffers=1GB");
        assert_eq!(option(&w, Some("-D"), "--pgdata"), Some("/db"));
        assert_eq!(option(&w, Some("-p"), "--port"), Some("5433"));
        assert_eq!(option(&w, None, "--shared_buffers"), Some("1GB"));
        assert_eq!(
            pool_query("postgres", &w).unwrap()[5..],
            ["-C", "shared_memory_size_in_huge_pages"]
        );
        assert!(pool_query("redis", &w).is_none());
        assert_eq!(mariadb_pages(&[]).unwrap(), 64 + 8 + 8);
    }
}
