//! Whether a server got the pages its arm asked for, judged from the server's own memory (its
//! process tree, read after the load) and its own words: the messages with which servers
//! announce that they fell back to 4 KiB pages or turned THP off for themselves. System-wide
//! counters are never used here: other processes move them.

use super::flagged::{self, Judgment};
use crate::backing::arm::Expect;
use crate::collect::server::GroupMemory;
pub use crate::model::run::ServerSummary;
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

/// Whether the server's memory is on the pages the arm expected (`analyze::flagged`, the rule
/// every arm is judged by), with the server's own fallback message when it printed one.
pub fn judge(
    expect: Expect,
    mem: &GroupMemory,
    words: Option<&(&'static Signature, String)>,
) -> Option<Judgment> {
    let words = words.map(|(sig, line)| format!("{} said: {line:?} ({})", sig.server, sig.meaning));
    flagged::judge(expect, mem, words.as_deref())
}

/// Whether a server's own THP policy held, from its memory read after the load (the kernel's
/// words): for `off`, every process says `THP_enabled: 0`; for `advised`, none does, and no
/// private anonymous mapping outside its MADV_HUGEPAGE regions is `THPeligible`. `None`: the
/// server runs under the system's policy, or nothing was read.
pub fn policy_held(
    policy: crate::sys::ThpPolicy,
    mem: &GroupMemory,
) -> Option<Result<String, String>> {
    use crate::sys::ThpPolicy;
    // Judged over the processes whose THP_enabled was read (a short-lived backend can exit
    // between the reads of its smaps and its status).
    let read = mem.thp_read;
    if read == 0 {
        return None;
    }
    let off = mem.thp_disabled.len();
    let b = crate::units::Bytes;
    Some(match policy {
        ThpPolicy::System => return None,
        ThpPolicy::Off if off == read => Ok(format!(
            "THP off (PR_SET_THP_DISABLE): THP_enabled 0 in {}",
            if off == 1 {
                "its process".to_string()
            } else {
                format!("each of its {off} processes")
            }
        )),
        ThpPolicy::Off => Err(format!(
            "THP off was asked (PR_SET_THP_DISABLE) but {} of its {read} processes have THP_enabled 1",
            read - off
        )),
        ThpPolicy::Advised if off > 0 => Err(format!(
            "THP madvise was asked (PR_THP_DISABLE_EXCEPT_ADVISED) but {} turned THP off entirely",
            mem.thp_disabled.join(", ")
        )),
        ThpPolicy::Advised if mem.thp_eligible_unadvised > 0 => Err(format!(
            "THP madvise was asked (PR_THP_DISABLE_EXCEPT_ADVISED) but {} of anonymous memory it did not advise is THP-eligible",
            b(mem.thp_eligible_unadvised)
        )),
        ThpPolicy::Advised if mem.madvised == 0 => Ok(
            "THP madvise (PR_THP_DISABLE_EXCEPT_ADVISED): it advised no region, and none of its memory is THP-eligible".to_string(),
        ),
        ThpPolicy::Advised => Ok(format!(
            "THP madvise (PR_THP_DISABLE_EXCEPT_ADVISED): THP-eligible only in the {} it advised (MADV_HUGEPAGE)",
            b(mem.madvised)
        )),
    })
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

/// Per arm (`names`), the servers' evidence from the measured trials, each arm's instance
/// spread and its first burst's effect on `primary` at `confidence` (`data`: the trials as
/// the analysis reads them).
pub fn summaries(
    names: &[String],
    primary: &str,
    confidence: f64,
    trials: &[crate::store::TrialRow],
    data: &[crate::analyze::trial_data::TrialData],
) -> Vec<crate::model::run::ServerSummary> {
    let measured: Vec<(usize, f64, &crate::store::Evidence)> = trials
        .iter()
        .filter(|t| t.block >= 0)
        .map(|t| {
            (
                t.arm_idx as usize,
                t.metrics.get("wall_s").copied().unwrap_or(0.0),
                &t.evidence,
            )
        })
        .collect();
    let mut s = summarise(names, &measured);
    let sds = crate::analyze::lifetimes::arm_instance_sds(data, names.len(), primary);
    for (x, sd) in s.iter_mut().zip(sds) {
        x.instance_sd = sd;
    }
    let first =
        crate::analyze::lifetimes::first_burst_effects(data, names.len(), primary, confidence);
    for (x, e) in s.iter_mut().zip(first) {
        x.first_burst = e.map(|e| {
            let p = crate::analyze::verdict::to_percent(e);
            (p.point, p.lo, p.hi)
        });
    }
    s
}

/// Summaries per arm from (arm index, the trial's wall time, its evidence) of measured trials.
pub fn summarise(
    arms: &[String],
    trials: &[(usize, f64, &crate::store::Evidence)],
) -> Vec<ServerSummary> {
    arms.iter()
        .enumerate()
        .map(|(i, name)| {
            let mine: Vec<&(usize, f64, &crate::store::Evidence)> =
                trials.iter().filter(|t| t.0 == i).collect();
            // Read: the server came up and its tree was walked after the load.
            let read: Vec<&crate::model::evidence::ServerEvidence> = mine
                .iter()
                .filter_map(|t| t.2.server.as_ref())
                .filter(|s| s.pid.is_some())
                .collect();
            let covs: Vec<f64> = read.iter().filter_map(|s| s.coverage).collect();
            let cpu: Vec<f64> = read.iter().map(|s| s.cpu_ns as f64).collect();
            let resident: Vec<f64> = read
                .iter()
                .map(|s| (s.memory.rss + s.memory.hugetlb.values().sum::<u64>()) as f64)
                .collect();
            let kernel = || read.iter().filter_map(|s| s.memory.kernel.as_ref());
            ServerSummary {
                arm: name.clone(),
                trials: read.len(),
                failed: mine.len() - read.len()
                    + read.iter().filter(|s| s.end.exited_early).count(),
                ready_s: median(read.iter().filter_map(|s| s.ready_s).collect()),
                stop_s: median(read.iter().map(|s| s.end.stop_ns as f64 / 1e9).collect()),
                load_s: median(mine.iter().map(|t| t.1).filter(|w| *w > 0.0).collect()),
                cpu_s: (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64 / 1e9),
                resident_bytes: median(resident).map(|b| b as u64),
                coverage: (!covs.is_empty()).then(|| covs.iter().sum::<f64>() / covs.len() as f64),
                carried_by: read.iter().rev().find_map(|s| s.carried_by.clone()),
                policy: {
                    let checked: Vec<&crate::model::evidence::PolicyHeld> =
                        read.iter().filter_map(|s| s.thp_policy.as_ref()).collect();
                    checked.last().map(|p| {
                        let held = checked.iter().filter(|p| p.held).count();
                        (p.words.clone(), held, checked.len())
                    })
                },
                thp_disabled: read.iter().any(|s| !s.memory.thp_disabled.is_empty()),
                said: read
                    .iter()
                    .find_map(|s| s.said.as_ref().map(|w| w.line.clone())),
                counted: read.iter().rev().find_map(|s| {
                    s.memory
                        .segments
                        .iter()
                        .filter(|g| g.shared)
                        .find_map(|g| g.counted.clone())
                }),
                kernel_hugetlb: median(
                    kernel()
                        .map(|k| k.hugetlb_in_use.values().sum::<u64>() as f64)
                        .collect(),
                )
                .map(|b| b as u64),
                kernel_shmem_huge: median(kernel().map(|k| k.shmem_huge as f64).collect())
                    .map(|b| b as u64),
                lifetimes: {
                    let mut l: Vec<usize> = mine.iter().filter_map(|t| t.2.lifetime).collect();
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

    #[test]
    fn a_servers_own_thp_policy_is_confirmed_or_flagged_from_the_kernels_words() {
        use crate::sys::ThpPolicy;
        let mut m = GroupMemory {
            processes: 3,
            thp_read: 2,
            thp_disabled: vec!["10 postgres".into(), "11 postgres".into()],
            ..Default::default()
        };
        assert!(policy_held(ThpPolicy::System, &m).is_none());
        let ok = policy_held(ThpPolicy::Off, &m).unwrap().unwrap();
        assert!(ok.contains("each of its 2 processes"), "{ok}");
        // A child that got THP back (another exec path): not held.
        m.thp_disabled.pop();
        let e = policy_held(ThpPolicy::Off, &m).unwrap().unwrap_err();
        assert!(e.contains("1 of its 2 processes have THP_enabled 1"), "{e}");
        // Advised: THP off entirely is not madvise; eligible memory it did not advise is not
        // either; eligible only where advised is.
        let e = policy_held(ThpPolicy::Advised, &m).unwrap().unwrap_err();
        assert!(
            e.contains("11 postgres") || e.contains("10 postgres"),
            "{e}"
        );
        m.thp_disabled.clear();
        m.thp_eligible_unadvised = 64 << 20;
        let e = policy_held(ThpPolicy::Advised, &m).unwrap().unwrap_err();
        assert!(
            e.contains("64M of anonymous memory it did not advise"),
            "{e}"
        );
        m.thp_eligible_unadvised = 0;
        m.madvised = 8 << 20;
        let ok = policy_held(ThpPolicy::Advised, &m).unwrap().unwrap();
        assert!(ok.contains("only in the 8M it advised"), "{ok}");
        assert!(policy_held(ThpPolicy::Advised, &GroupMemory::default()).is_none());
    }

    /// A server with one 300M shared segment: on 2M hugetlb, on THP, or on 4 KiB pages.
    fn mem(on: &str, thp_disabled: bool) -> GroupMemory {
        let mb = 300u64 << 20;
        let hugetlb = on == "hugetlb";
        GroupMemory {
            processes: 3,
            rss: if hugetlb { 1 << 20 } else { mb },
            shmem_pmd: if on == "thp" { mb } else { 0 },
            hugetlb: if hugetlb {
                BTreeMap::from([(2 << 20, mb)])
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
                kind: if hugetlb { "hugetlb" } else { "shm" }.into(),
                size: 1 << 30,
                resident: mb,
                huge: if on == "4k" { 0 } else { mb },
                page_size: if hugetlb { 2 << 20 } else { 4096 },
                shared: true,
                ..Segment::default()
            }],
            ..GroupMemory::default()
        }
    }

    #[test]
    fn servers_are_judged_by_the_one_rule_and_quoted() {
        use crate::analyze::flagged::State;
        // Hugetlb asked, segment on 4 KiB, PostgreSQL's DEBUG1 line in the log.
        let words = said([CAPTURED[0].0]);
        let j = judge(
            Expect::Hugetlb(Some(2 << 20)),
            &mem("4k", false),
            words.as_ref(),
        )
        .unwrap();
        assert_eq!(j.state, State::FellBack);
        assert!(
            j.why
                .contains("/dev/zero (deleted) 1G (pid 812 postgres): on 4K pages"),
            "{}",
            j.why
        );
        assert!(
            j.why.contains("PostgreSQL said") && j.why.contains("huge_pages=try fell back"),
            "{}",
            j.why
        );
        // Got them: whatever the log says; 1G asked but 2M got: fell back.
        let got = judge(Expect::Hugetlb(Some(2 << 20)), &mem("hugetlb", false), None).unwrap();
        assert_eq!(got.state, State::Got);
        let other = judge(Expect::Hugetlb(Some(1 << 30)), &mem("hugetlb", false), None).unwrap();
        assert_eq!(other.state, State::FellBack);
        assert_eq!(
            judge(Expect::Huge, &mem("thp", false), None).unwrap().state,
            State::Got
        );
        // THP asked, the server opted out itself (Redis's disable-thp): said beside the share.
        let f = judge(Expect::Thp, &mem("4k", true), None).unwrap();
        assert_eq!(f.state, State::FellBack);
        assert!(
            f.why.contains("THP_enabled: 0 for 812 redis-server")
                && f.why.contains("disable-thp no"),
            "{}",
            f.why
        );
        // 4 KiB expected: THP on the segment is flagged with its share.
        let f = judge(Expect::FourK, &mem("thp", false), None).unwrap();
        assert_eq!(f.state, State::FellBack);
        assert!(f.why.contains("100% of 300M resident"), "{}", f.why);
    }
}
