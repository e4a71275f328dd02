//! Whether a server got the pages its arm asked for, judged from the server's own memory (its
//! process tree, read after the load) and its own words: the messages with which servers
//! announce that they fell back to 4 KiB pages or turned THP off for themselves. System-wide
//! counters are never used here: other processes move them.

use crate::backing::arm::Expect;
use crate::collect::server::ServerMemory;
use crate::units::Bytes;
use regex::Regex;
use std::sync::LazyLock;

/// A server's message that it runs without the huge pages it was asked to use.
pub struct Signature {
    pub server: &'static str,
    pub pattern: &'static str,
    pub meaning: &'static str,
}

/// Known fallback and opt-out messages (case-insensitive regexes).
pub const SIGNATURES: &[Signature] = &[
    Signature {
        server: "PostgreSQL",
        pattern: r"with MAP_HUGETLB failed, huge pages disabled",
        meaning: "huge_pages=try fell back to 4 KiB pages (logged at DEBUG1 only)",
    },
    Signature {
        server: "PostgreSQL",
        pattern: r"could not map anonymous shared memory",
        meaning: "huge_pages=on and the hugetlb pool could not hold shared memory",
    },
    Signature {
        server: "MariaDB/MySQL",
        pattern: r"Using conventional memory pool",
        meaning: "large-pages failed; the buffer pool is on 4 KiB pages",
    },
    Signature {
        server: "MariaDB/MySQL",
        pattern: r"Couldn't allocate \d+ bytes \(Large/HugeTLB memory page size \d+\).*continuing to smaller size",
        meaning: "large-pages fell back to a smaller page size (MariaDB 10.11 prints it with --log-warnings ≥ 3)",
    },
    Signature {
        server: "MariaDB/MySQL",
        pattern: r"Failed to allocate \d+ bytes from HugeTLB memory",
        meaning: "large-pages failed (pool, vm.hugetlb_shm_group or memlock)",
    },
    Signature {
        server: "HotSpot JVM",
        pattern: r"UseLargePages disabled|Failed to reserve (and commit )?(shared|large pages) memory",
        meaning: "the JVM runs on 4 KiB pages although large pages were asked for",
    },
    Signature {
        server: "HotSpot JVM",
        pattern: r"UseTransparentHugePages disabled",
        meaning: "the JVM could not use THP (THP is not madvise or always)",
    },
    Signature {
        server: "OpenJ9 JVM",
        pattern: r"JVMJ9GC0\d\d[IW].*(large page|using 4K)",
        meaning: "OpenJ9 did not get the large page size asked for",
    },
    Signature {
        server: "memcached",
        pattern: r"Cannot enable large pages|Transparent huge pages support (not detected|disabled)|Failed to set transparent hugepage hint",
        meaning: "memcached -L could not use huge pages (it refuses to start when THP is never)",
    },
    Signature {
        server: "Redis",
        pattern: r"WARNING you have Transparent Huge Pages \(THP\) support enabled",
        meaning: "Redis warns that THP reaches it (latency and memory of fork/COW)",
    },
];

static COMPILED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    SIGNATURES
        .iter()
        .map(|s| Regex::new(&format!("(?i){}", s.pattern)).expect("a valid signature"))
        .collect()
});

/// The first known fallback message in the server's output: (signature, the line).
pub fn said<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<(&'static Signature, String)> {
    lines.into_iter().find_map(|l| {
        COMPILED
            .iter()
            .position(|re| re.is_match(l))
            .map(|i| (&SIGNATURES[i], l.trim().to_string()))
    })
}

/// Why the server's memory does not match what the arm expected, or `None` when it does.
/// `words`: the server's own fallback message, if it printed one.
pub fn flag(
    expect: Expect,
    mem: &ServerMemory,
    words: Option<&(&'static Signature, String)>,
) -> Option<String> {
    let hugetlb = |size: Option<u64>| match size {
        Some(s) => mem.hugetlb.get(&s).copied().unwrap_or(0),
        None => mem.hugetlb_total(),
    };
    // A process that turned THP off for itself did not get THP, whatever it faulted before
    // it did (Redis's allocator starts before its prctl).
    let thp = mem.thp() >= 2 << 20 && mem.thp_disabled.is_empty();
    let got = match expect {
        Expect::Hugetlb(size) => hugetlb(size) > 0,
        Expect::Thp => thp,
        Expect::Huge => thp || mem.hugetlb_total() > 0,
        Expect::FourK => mem.coverage().is_none_or(|c| c <= 0.1),
    };
    if got {
        return None;
    }
    let mut why = if expect == Expect::FourK {
        format!(
            "expected 4 KiB pages, but {:.0}% of the server's resident memory is on huge pages",
            mem.coverage().unwrap_or(0.0) * 100.0
        )
    } else {
        let largest = mem
            .segments
            .iter()
            .max_by_key(|s| s.size.max(s.resident))
            .map(|s| format!("; its largest region: {}", s.describe()))
            .unwrap_or_default();
        let none = if mem.thp() + mem.hugetlb_total() == 0 {
            "the server has none"
        } else {
            "the server did not get them"
        };
        format!(
            "asked for {} but {none}: {} process(es), {} resident, THP {}, hugetlb {}{largest}",
            expect.describe(),
            mem.processes,
            Bytes(mem.rss + mem.hugetlb_total()),
            Bytes(mem.thp()),
            Bytes(mem.hugetlb_total()),
        )
    };
    if matches!(expect, Expect::Thp | Expect::Huge) && !mem.thp_disabled.is_empty() {
        why.push_str(&format!(
            "; THP is disabled for the server process itself (THP_enabled: 0 in /proc/PID/status of {}: prctl(PR_SET_THP_DISABLE) — Redis ≥ 6.2 does this when THP is `always` unless `disable-thp no`; systemd's MemoryTHP= does it per unit)",
            mem.thp_disabled.join(", ")
        ));
    }
    if let Some((sig, line)) = words {
        why.push_str(&format!(
            "; {} said: {line:?} ({})",
            sig.server, sig.meaning
        ));
    }
    Some(why)
}

/// Per arm, what its servers did across the trials (from each trial's `server` evidence).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerSummary {
    pub arm: String,
    /// Trials whose server came up and was read.
    pub trials: usize,
    /// Trials whose server failed (did not start, not ready, died or crashed).
    pub failed: usize,
    /// Medians over the trials, seconds: spawn → ready, SIGTERM → exit, and the load's wall time.
    pub ready_s: Option<f64>,
    pub stop_s: Option<f64>,
    pub load_s: Option<f64>,
    /// Mean CPU time of the server's tree during the load, seconds.
    pub cpu_s: Option<f64>,
    /// Median resident memory (Rss + hugetlb) of the tree after the load, bytes.
    pub resident_bytes: Option<u64>,
    /// Mean share of it on huge pages.
    pub coverage: Option<f64>,
    /// Which mapping carried the huge pages (the last trial that had any).
    pub carried_by: Option<String>,
    /// Some trial's server turned THP off for itself.
    pub thp_disabled: bool,
    /// The server's own words about huge pages, if it said any.
    pub said: Option<String>,
    /// How its shared segments were counted: `segment` (the object's own pages) or `page
    /// tables` (the largest view of one of its processes).
    #[serde(default)]
    pub counted: Option<String>,
    /// Medians of the kernel's machine-wide accounting read at the same moments: hugetlb pool
    /// bytes in use (every size) and ShmemHugePages.
    #[serde(default)]
    pub kernel_hugetlb: Option<u64>,
    #[serde(default)]
    pub kernel_shmem_huge: Option<u64>,
    /// Warm design: the lifetimes its trials ran in, and the SD of its own instance effect
    /// across them (log scale; `analyze::lifetimes::instance_sds`).
    #[serde(default)]
    pub lifetimes: usize,
    #[serde(default)]
    pub instance_sd: Option<f64>,
    /// Warm design: the first burst of a lifetime against the lifetime's later bursts, percent
    /// (point, lo, hi at the run's confidence): whether the warm-up reached the warm state.
    #[serde(default)]
    pub first_burst: Option<(f64, Option<f64>, Option<f64>)>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| {
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    })
}

/// Summaries per arm from (arm index, the trial's wall time, its evidence) of measured trials.
pub fn summarise(
    arms: &[String],
    trials: &[(usize, f64, &serde_json::Value)],
) -> Vec<ServerSummary> {
    arms.iter()
        .enumerate()
        .map(|(i, name)| {
            let mine: Vec<&(usize, f64, &serde_json::Value)> =
                trials.iter().filter(|t| t.0 == i).collect();
            let read: Vec<&serde_json::Value> = mine
                .iter()
                .map(|t| &t.2["server"])
                .filter(|s| s.get("memory").is_some())
                .collect();
            let f = |k: &str| {
                read.iter()
                    .filter_map(|s| s[k].as_f64())
                    .collect::<Vec<_>>()
            };
            let covs = f("coverage");
            let cpu = f("cpu_ns");
            let resident: Vec<f64> = read
                .iter()
                .map(|s| {
                    let m = &s["memory"];
                    let hugetlb: f64 = m["hugetlb"]
                        .as_object()
                        .map_or(0.0, |o| o.values().filter_map(|v| v.as_f64()).sum());
                    m["rss"].as_f64().unwrap_or(0.0) + hugetlb
                })
                .collect();
            ServerSummary {
                arm: name.clone(),
                trials: read.len(),
                failed: mine.len() - read.len()
                    + read
                        .iter()
                        .filter(|s| s["end"]["exited_early"] == true)
                        .count(),
                ready_s: median(f("ready_s")),
                stop_s: median(
                    read.iter()
                        .filter_map(|s| s["end"]["stop_ns"].as_f64().map(|n| n / 1e9))
                        .collect(),
                ),
                load_s: median(mine.iter().map(|t| t.1).filter(|w| *w > 0.0).collect()),
                cpu_s: (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64 / 1e9),
                resident_bytes: median(resident).map(|b| b as u64),
                coverage: (!covs.is_empty()).then(|| covs.iter().sum::<f64>() / covs.len() as f64),
                carried_by: read
                    .iter()
                    .rev()
                    .find_map(|s| s["carried_by"].as_str().map(String::from)),
                thp_disabled: read.iter().any(|s| {
                    s["memory"]["thp_disabled"]
                        .as_array()
                        .is_some_and(|a| !a.is_empty())
                }),
                said: read
                    .iter()
                    .find_map(|s| s["said"]["line"].as_str().map(String::from)),
                counted: read.iter().rev().find_map(|s| {
                    s["memory"]["segments"]
                        .as_array()?
                        .iter()
                        .filter(|g| g["shared"] == true)
                        .find_map(|g| g["counted"].as_str().map(String::from))
                }),
                kernel_hugetlb: median(
                    read.iter()
                        .filter_map(|s| {
                            s["memory"]["kernel"]["hugetlb_in_use"]
                                .as_object()
                                .map(|o| o.values().filter_map(|v| v.as_f64()).sum::<f64>())
                        })
                        .collect(),
                )
                .map(|b| b as u64),
                kernel_shmem_huge: median(
                    read.iter()
                        .filter_map(|s| s["memory"]["kernel"]["shmem_huge"].as_f64())
                        .collect(),
                )
                .map(|b| b as u64),
                lifetimes: {
                    let mut l: Vec<u64> = mine
                        .iter()
                        .filter_map(|t| t.2["lifetime"].as_u64())
                        .collect();
                    l.sort_unstable();
                    l.dedup();
                    l.len()
                },
                instance_sd: None,
                first_burst: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::server::Segment;
    use std::collections::BTreeMap;

    /// Lines as the servers print them (captured from PostgreSQL 15, MariaDB 10.11, OpenJDK
    /// 17, memcached 1.6 and Redis 7 here, and from their sources for the rest).
    const CAPTURED: &[(&str, &str)] = &[
        (
            "2026-11-23 22:10:01.123 UTC [812] DEBUG:  mmap(1084227584) with MAP_HUGETLB failed, huge pages disabled: Cannot allocate memory",
            "PostgreSQL",
        ),
        (
            "2026-11-23 22:10:01.123 UTC [812] FATAL:  could not map anonymous shared memory: Cannot allocate memory",
            "PostgreSQL",
        ),
        (
            "2026-11-23 22:10:02 0 [Warning] InnoDB: Failed to allocate 136314880 bytes from HugeTLB memory. errno 1",
            "MariaDB/MySQL",
        ),
        (
            "2026-11-23 22:10:02 0 [Note] InnoDB: Using conventional memory pool",
            "MariaDB/MySQL",
        ),
        (
            "2026-11-23 22:59:41 0 [Warning] mariadbd: Couldn't allocate 130023424 bytes (Large/HugeTLB memory page size 2097152); errno 12; continuing to smaller size",
            "MariaDB/MySQL",
        ),
        (
            "[0.004s][warning][pagesize] UseLargePages disabled, no large pages configured and available on the system.",
            "HotSpot JVM",
        ),
        (
            "JVMJ9GC088I Large page size 2M is not a supported page size; using 4K instead",
            "OpenJ9 JVM",
        ),
        ("Transparent huge pages support not detected.", "memcached"),
        ("Cannot enable large pages on this system", "memcached"),
        (
            "812:M 23 Nov 2026 22:10:03.000 # WARNING you have Transparent Huge Pages (THP) support enabled in your kernel.",
            "Redis",
        ),
    ];

    #[test]
    fn every_captured_fallback_line_is_recognised_and_ordinary_lines_are_not() {
        for (line, server) in CAPTURED {
            let (sig, l) = said([*line]).unwrap_or_else(|| panic!("not recognised: {line}"));
            assert_eq!(sig.server, *server, "{line}");
            assert_eq!(l, line.trim());
        }
        for ok in [
            "database system is ready to accept connections",
            "[Note] InnoDB: Completed initialization of buffer pool",
            "Ready to accept connections tcp",
            "huge_pages = on",
        ] {
            assert!(said([ok]).is_none(), "{ok}");
        }
    }

    fn mem(hugetlb: u64, thp: u64, rss: u64, thp_disabled: bool) -> ServerMemory {
        ServerMemory {
            processes: 3,
            rss,
            anon_huge: thp,
            hugetlb: if hugetlb > 0 {
                BTreeMap::from([(2 << 20, hugetlb)])
            } else {
                BTreeMap::new()
            },
            thp_disabled: if thp_disabled {
                vec!["812 redis-server".into()]
            } else {
                vec![]
            },
            segments: vec![Segment {
                pid: 812,
                comm: "postgres".into(),
                path: "/dev/zero (deleted)".into(),
                kind: "shm".into(),
                size: 1 << 30,
                resident: 300 << 20,
                ..Segment::default()
            }],
            ..ServerMemory::default()
        }
    }

    #[test]
    fn flags_follow_the_servers_memory_and_quote_its_words() {
        // Hugetlb asked, segment on 4 KiB, PostgreSQL's DEBUG1 line in the log.
        let words = said([CAPTURED[0].0]);
        let f = flag(
            Expect::Hugetlb(Some(2 << 20)),
            &mem(0, 0, 300 << 20, false),
            words.as_ref(),
        )
        .unwrap();
        assert!(
            f.contains("asked for 2M hugetlb pages but the server has none"),
            "{f}"
        );
        assert!(
            f.contains("/dev/zero (deleted) 1G (pid 812 postgres): on 4K pages"),
            "{f}"
        );
        assert!(
            f.contains("PostgreSQL said") && f.contains("huge_pages=try fell back"),
            "{f}"
        );
        // Got them: no flag, whatever the log says; 1G asked but 2M got: flagged.
        assert!(
            flag(
                Expect::Hugetlb(Some(2 << 20)),
                &mem(1 << 30, 0, 1 << 20, false),
                words.as_ref()
            )
            .is_none()
        );
        assert!(
            flag(
                Expect::Hugetlb(Some(1 << 30)),
                &mem(1 << 30, 0, 1 << 20, false),
                None
            )
            .is_some()
        );
        assert!(
            flag(
                Expect::Hugetlb(None),
                &mem(1 << 30, 0, 1 << 20, false),
                None
            )
            .is_none()
        );
        // THP asked, the server opted out itself (Redis's disable-thp).
        let f = flag(Expect::Thp, &mem(0, 0, 100 << 20, true), None).unwrap();
        // Some THP from before the opt-out does not count.
        let early = flag(Expect::Thp, &mem(0, 6 << 20, 100 << 20, true), None).unwrap();
        assert!(
            early.contains("did not get them") && early.contains("THP_enabled: 0"),
            "{early}"
        );
        assert!(
            f.contains("THP_enabled: 0")
                && f.contains("812 redis-server")
                && f.contains("disable-thp no"),
            "{f}"
        );
        assert!(flag(Expect::Thp, &mem(0, 64 << 20, 100 << 20, false), None).is_none());
        assert!(flag(Expect::Huge, &mem(4 << 20, 0, 100 << 20, false), None).is_none());
        // 4 KiB expected: a tenth on huge pages is tolerated, more is flagged.
        assert!(flag(Expect::FourK, &mem(0, 10 << 20, 100 << 20, false), None).is_none());
        let f = flag(Expect::FourK, &mem(0, 50 << 20, 100 << 20, false), None).unwrap();
        assert!(f.contains("50% of the server's resident memory"), "{f}");
    }
}
