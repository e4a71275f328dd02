//! A preset's server and load rewritten so every arm's server runs side by side: an address,
//! a directory and (PostgreSQL) a data copy of its own, the load pointed at it.

use super::{has_address_placeholder, listen_host, memcached_ready, option};

/// Set an option's value in `words` (`-p 5433`, `-p5433`, `--port=5433`, `--port 5433`),
/// appending `short value` (or `long value`) when it is absent. Returns the old value.
fn set_option(
    words: &mut Vec<String>,
    short: Option<&str>,
    long: &str,
    value: &str,
) -> Option<String> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].clone();
        if (w == long || short.is_some_and(|s| w == s)) && i + 1 < words.len() {
            return Some(std::mem::replace(&mut words[i + 1], value.to_string()));
        }
        if let Some(v) = w.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            words[i] = format!("{long}={value}");
            return Some(v.to_string());
        }
        if let Some(s) = short
            && let Some(v) = w.strip_prefix(s)
            && !v.is_empty()
            && !w.starts_with("--")
        {
            words[i] = format!("{s}{value}");
            return Some(v.to_string());
        }
        i += 1;
    }
    words.push(short.unwrap_or(long).to_string());
    words.push(value.to_string());
    None
}

/// A preset's server and load made ready to run once per arm side by side.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PerArm {
    pub server: Vec<String>,
    pub load: Vec<String>,
    /// The warm-up to run after each start (the preset's own when none was given).
    pub warmup: Option<String>,
    /// A directory copied once into each arm's `{dir}/data` (the user's is only read).
    pub copy_data: Option<std::path::PathBuf>,
    /// The preset's readiness probe at each arm's own address (a `tcp:`/`unix:` probe).
    pub ready: Option<String>,
}

/// pgbench's options that take a value (so its database name is the first other word).
const PGBENCH_VALUED: &[&str] = &[
    "-c", "-j", "-T", "-t", "-h", "-p", "-U", "-s", "-f", "-b", "-D", "-M", "-R", "-L", "-P", "-d",
    "-F", "-i", "-I",
];

/// The database a pgbench command connects to (its first non-option word; `postgres` when none).
fn pgbench_db(load: &[String]) -> String {
    let mut it = load.iter().skip(1);
    while let Some(w) = it.next() {
        if PGBENCH_VALUED.contains(&w.as_str()) {
            it.next();
        } else if !w.starts_with('-') {
            return w.clone();
        }
    }
    "postgres".into()
}

fn program(words: &[String]) -> &str {
    words
        .first()
        .map_or("", |w| w.rsplit('/').next().unwrap_or(w))
}

/// pgbench pointed at one arm's server: its socket directory and port; `-T` is the burst.
fn pgbench_per_arm(load: &[String], burst: bool) -> Vec<String> {
    let mut l = load.to_vec();
    set_option(&mut l, Some("-h"), "--host", "{dir}");
    set_option(&mut l, Some("-p"), "--port", "{port}");
    if burst {
        set_option(&mut l, Some("-T"), "--time", "{burst}");
    }
    l
}

/// The commands a preset runs once per arm side by side, or why it cannot: PostgreSQL (a copy
/// of the data directory per arm, its socket and port; pgbench pointed at it; pg_prewarm of
/// every relation as the warm-up), Redis (its port and directory; redis-benchmark pointed
/// at it) and memcached (its port or socket; memcslap or memtier_benchmark pointed at it).
/// `burst`: the load's duration option becomes `{burst}`.
pub fn per_arm(
    preset: &str,
    server: &[String],
    load: &[String],
    warmup: Option<&str>,
    burst: bool,
) -> Result<PerArm, String> {
    match preset {
        "postgres" => {
            let mut s = server.to_vec();
            let data = set_option(&mut s, Some("-D"), "--pgdata", "{dir}/data").ok_or(
                "the postgres preset copies the data directory once per arm: give it in --server as -D DATADIR",
            )?;
            set_option(&mut s, Some("-k"), "--unix_socket_directories", "{dir}");
            set_option(&mut s, Some("-p"), "--port", "{port}");
            if program(load) != "pgbench" {
                return Err(format!(
                    "the postgres preset points pgbench at each arm's server; the load is {:?}: write {{dir}} and {{port}} in it yourself",
                    program(load)
                ));
            }
            let db = pgbench_db(load);
            let warmup = match warmup {
                Some(w) => {
                    let words: Vec<String> = w.split_whitespace().map(String::from).collect();
                    if program(&words) == "pgbench" {
                        Some(pgbench_per_arm(&words, false).join(" "))
                    } else {
                        Some(w.to_string())
                    }
                }
                None => Some(format!(
                    "psql -X -q -At -h {{dir}} -p {{port}} -d {db} -c 'CREATE EXTENSION IF NOT EXISTS pg_prewarm' -c \"SELECT count(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'i', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')\""
                )),
            };
            Ok(PerArm {
                server: s,
                load: pgbench_per_arm(load, burst),
                warmup,
                copy_data: Some(data.into()),
                ready: None,
            })
        }
        "redis" => {
            let mut s = server.to_vec();
            set_option(&mut s, None, "--port", "{port}");
            set_option(&mut s, None, "--dir", "{dir}");
            if option(server, None, "--unixsocket").is_some() {
                set_option(&mut s, None, "--unixsocket", "{dir}/redis.sock");
            }
            let mut l = load.to_vec();
            if program(load) == "redis-benchmark" {
                set_option(&mut l, Some("-p"), "--port", "{port}");
                if option(load, Some("-s"), "--socket").is_some() {
                    set_option(&mut l, Some("-s"), "--socket", "{dir}/redis.sock");
                }
            } else if !has_address_placeholder(load) {
                return Err(format!(
                    "the redis preset points redis-benchmark at each arm's server; the load is {:?}: write {{port}} in it yourself",
                    program(load)
                ));
            }
            Ok(PerArm {
                server: s,
                load: l,
                warmup: warmup.map(String::from),
                copy_data: None,
                ready: None,
            })
        }
        "memcached" => memcached_per_arm(server, load, warmup),
        other => Err(format!(
            "the {other} preset cannot yet give each arm's server an address of its own: write {{port}} (and {{dir}}) in --server and in the load"
        )),
    }
}

/// memcached side by side: each arm's server on its own port (`-p {port}`), or its own socket
/// (`-s {dir}/memcached.sock`) when it listens on one; memcslap's `--servers` and
/// memtier_benchmark's `-p`/`-S` follow; the readiness probe is the arm's own address.
fn memcached_per_arm(
    server: &[String],
    load: &[String],
    warmup: Option<&str>,
) -> Result<PerArm, String> {
    const SOCKET: &str = "{dir}/memcached.sock";
    let unix = option(server, Some("-s"), "--unix-socket").is_some();
    let mut s = server.to_vec();
    if unix {
        set_option(&mut s, Some("-s"), "--unix-socket", SOCKET);
    } else {
        set_option(&mut s, Some("-p"), "--port", "{port}");
    }
    let mut l = load.to_vec();
    match program(load) {
        "memcslap" | "memslap" => {
            let at = if unix {
                SOCKET.to_string()
            } else {
                format!("{}:{{port}}", listen_host(server))
            };
            set_option(&mut l, Some("-s"), "--servers", &at);
        }
        "memtier_benchmark" if unix => {
            set_option(&mut l, Some("-S"), "--unix-socket", SOCKET);
        }
        "memtier_benchmark" => {
            set_option(&mut l, Some("-p"), "--port", "{port}");
        }
        _ if has_address_placeholder(load) => {}
        other => {
            return Err(format!(
                "the memcached preset points memcslap or memtier_benchmark at each arm's server; the load is {other:?}: write {{port}} in it yourself"
            ));
        }
    }
    let ready = memcached_ready(&s);
    Ok(PerArm {
        server: s,
        load: l,
        warmup: warmup.map(String::from),
        copy_data: None,
        ready: Some(ready),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Slot, fill};
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn postgres_gets_a_data_copy_socket_and_port_per_arm_and_pgbench_follows() {
        let p = per_arm(
            "postgres",
            &words("/usr/lib/postgresql/15/bin/postgres -D /tmp/pg/data -k /tmp/pg -p 5433 -c shared_buffers=512MB"),
            &words("pgbench -S -T 5 -c 2 -j 2 -h /tmp/pg -p5433 bench"),
            None,
            true,
        )
        .unwrap();
        assert_eq!(
            p.server.join(" "),
            "/usr/lib/postgresql/15/bin/postgres -D {dir}/data -k {dir} -p {port} -c shared_buffers=512MB"
        );
        assert_eq!(
            p.load.join(" "),
            "pgbench -S -T {burst} -c 2 -j 2 -h {dir} -p{port} bench"
        );
        assert_eq!(
            p.copy_data.as_deref(),
            Some(std::path::Path::new("/tmp/pg/data"))
        );
        let w = p.warmup.unwrap();
        assert!(
            w.contains("pg_prewarm") && w.contains("-d bench") && w.contains("-h {dir} -p {port}"),
            "{w}"
        );
        let slot = Slot {
            arm: "thp".into(),
            port: 41000,
            host: "127.0.0.1".into(),
            dir: "/tmp/x/thp".into(),
            burst: Some(2),
            replica: 1,
        };
        assert_eq!(
            fill("-T {burst} -h {dir} -p {port} {arm}-{replica}", &slot),
            "-T 2 -h /tmp/x/thp -p 41000 thp-2"
        );
        // No -k or -p given: added. No -D: refused with the fix.
        let p = per_arm(
            "postgres",
            &words("postgres -D /d"),
            &words("pgbench -S"),
            Some("pgbench -S -T 3"),
            false,
        )
        .unwrap();
        assert_eq!(
            p.server.join(" "),
            "postgres -D {dir}/data -k {dir} -p {port}"
        );
        assert_eq!(p.load.join(" "), "pgbench -S -h {dir} -p {port}");
        assert_eq!(
            p.warmup.as_deref(),
            Some("pgbench -S -T 3 -h {dir} -p {port}")
        );
        assert!(
            per_arm(
                "postgres",
                &words("postgres -p 1"),
                &words("pgbench"),
                None,
                false
            )
            .unwrap_err()
            .contains("-D DATADIR")
        );
        assert_eq!(
            pgbench_db(&words("pgbench -S -c 2 -h /x postgres")),
            "postgres"
        );
        assert_eq!(pgbench_db(&words("pgbench -S")), "postgres");
    }

    #[test]
    fn redis_gets_its_port_and_directory_and_others_need_placeholders() {
        let p = per_arm(
            "redis",
            &words("redis-server --port 6390 --save \"\""),
            &words("redis-benchmark -p 6390 -q --csv -t get -n 1000"),
            None,
            false,
        )
        .unwrap();
        assert_eq!(
            p.server.join(" "),
            "redis-server --port {port} --save \"\" --dir {dir}"
        );
        assert_eq!(
            p.load.join(" "),
            "redis-benchmark -p {port} -q --csv -t get -n 1000"
        );
        let e = per_arm(
            "mariadb",
            &words("mariadbd --port 1"),
            &words("sysbench"),
            None,
            false,
        )
        .unwrap_err();
        assert!(e.contains("{port}"), "{e}");
        assert!(has_address_placeholder(&words("x --port {port}")));
        assert!(!has_address_placeholder(&words("x --port 1")));
    }

    #[test]
    fn memcached_gets_its_port_or_socket_and_its_loads_and_probe_follow() {
        let tcp = |load: &str| {
            per_arm(
                "memcached",
                &words("memcached -u root -l 127.0.0.1 -p 11311 -m 256"),
                &words(load),
                None,
                false,
            )
        };
        let p = tcp("memcslap --servers=127.0.0.1:11311 --concurrency=2").unwrap();
        assert_eq!(
            p.server.join(" "),
            "memcached -u root -l 127.0.0.1 -p {port} -m 256"
        );
        assert_eq!(
            p.load.join(" "),
            "memcslap --servers=127.0.0.1:{port} --concurrency=2"
        );
        assert_eq!(p.ready.as_deref(), Some("tcp:127.0.0.1:{port}"));
        let p = tcp("memtier_benchmark -P memcache_text -s 127.0.0.1 -p 11311").unwrap();
        assert_eq!(
            p.load.join(" "),
            "memtier_benchmark -P memcache_text -s 127.0.0.1 -p {port}"
        );
        let e = tcp("nc 127.0.0.1 11311").unwrap_err();
        assert!(e.contains("\"nc\"") && e.contains("{port}"), "{e}");
        // A socket of its own, and memcslap connects to it.
        let p = per_arm(
            "memcached",
            &words("memcached -s /tmp/mc.sock -m 64"),
            &words("memcslap -s /tmp/mc.sock"),
            None,
            false,
        )
        .unwrap();
        assert_eq!(
            p.server.join(" "),
            "memcached -s {dir}/memcached.sock -m 64"
        );
        assert_eq!(p.load.join(" "), "memcslap -s {dir}/memcached.sock");
        assert_eq!(p.ready.as_deref(), Some("unix:{dir}/memcached.sock"));
    }
}
