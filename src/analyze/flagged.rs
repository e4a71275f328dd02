//! The FLAGGED rule: whether the memory that matters is on the pages an arm asked for — one rule
//! for a command's process group, a server's tree and a watched process.
//!
//! *The memory that matters* is the largest regions of the processes (shared segments, hugetlb
//! mappings, heaps and anonymous regions of at least 1 MiB resident, each counted once), taken
//! largest first until they hold [`MATTERS_SHARE`] of the resident bytes of all such regions.
//! Their share on the page size asked for decides:
//!
//! * **fell back** (FLAGGED) below [`FELL_BACK_BELOW`]: what the workload uses is on 4 KiB pages,
//!   whatever a few other regions or another process got;
//! * **partial** below [`PARTIAL_BELOW`], or when a process holding at least [`PROCESS_SHARE`] of
//!   that memory is itself below [`FELL_BACK_BELOW`] (a forked JVM that fell back beside a
//!   launcher that got pages);
//! * **on huge pages** otherwise.
//!
//! Only the processes' own page tables and segments count: machine-wide counters (vmstat's
//! `thp_fault_alloc`, the pool's pages in use) move with every other process and never clear
//! an arm. A hugetlb mapping larger than what its process touched is named (its reservation
//! holds pool pages another process may have needed).

use crate::backing::arm::Expect;
use crate::collect::server::{GroupMemory, Segment};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Below this share of the memory that matters on the pages asked for, the arm fell back.
pub const FELL_BACK_BELOW: f64 = 0.1;
/// Below this share (and at least [`FELL_BACK_BELOW`]), the arm got its pages in part.
pub const PARTIAL_BELOW: f64 = 0.5;
/// The regions that matter hold this share of the resident bytes of all candidate regions.
pub const MATTERS_SHARE: f64 = 0.8;
/// A process with at least this share of the memory that matters is judged on its own too.
pub const PROCESS_SHARE: f64 = 0.25;
/// Groups (and regions that matter) with less resident memory than this are not judged: too
/// small for pages to matter, or the walk saw only a program's start.
pub const MIN_RESIDENT: u64 = 8 << 20;

pub use crate::model::evidence::{Judgment, State};

/// The state a share of the memory that matters on the pages asked for stands for.
pub fn classify(share: f64) -> State {
    if share < FELL_BACK_BELOW {
        State::FellBack
    } else if share < PARTIAL_BELOW {
        State::Partial
    } else {
        State::Got
    }
}

/// Whether a region's huge bytes are the kind `expect` asked for.
fn counts(expect: Expect, s: &Segment) -> u64 {
    let hugetlb = s.kind == "hugetlb";
    let ok = match expect {
        Expect::Hugetlb(Some(size)) => hugetlb && s.page_size == size,
        Expect::Hugetlb(None) => hugetlb,
        Expect::Thp => !hugetlb,
        Expect::Huge | Expect::FourK => true,
        Expect::NoThp => !hugetlb,
    };
    if ok { s.huge.min(s.resident) } else { 0 }
}

/// The regions that matter: largest resident first until [`MATTERS_SHARE`] of all is held.
pub fn regions_that_matter(mem: &GroupMemory) -> Vec<&Segment> {
    let mut all: Vec<&Segment> = mem.segments.iter().filter(|s| s.resident > 0).collect();
    all.sort_by_key(|s| std::cmp::Reverse(s.resident));
    let total: u64 = all.iter().map(|s| s.resident).sum();
    let mut held = 0u64;
    let mut out = Vec::new();
    for s in all {
        if held as f64 >= MATTERS_SHARE * total as f64 {
            break;
        }
        held += s.resident;
        out.push(s);
    }
    out
}

fn who(pid: i32, comm: &str) -> String {
    format!("{comm} (pid {pid})")
}

/// Judge `mem` against what the arm asked for; `None` when there is too little memory to judge.
/// `words`: what the program said about its pages (`PostgreSQL said: …`), appended when given.
pub fn judge(expect: Expect, mem: &GroupMemory, words: Option<&str>) -> Option<Judgment> {
    let resident = mem.rss + mem.hugetlb_total();
    if resident < MIN_RESIDENT {
        return None;
    }
    let said = words.map(|w| format!("; {w}")).unwrap_or_default();
    if matches!(expect, Expect::NoThp | Expect::FourK) {
        return Some(judge_small_pages(expect, mem, resident, &said));
    }
    let regions = regions_that_matter(mem);
    let matters: u64 = regions.iter().map(|s| s.resident).sum();
    let on_asked: u64 = regions.iter().map(|s| counts(expect, s)).sum();
    if matters < MIN_RESIDENT {
        return None; // the regions that can hold huge pages are too small to judge
    }
    let share = on_asked as f64 / matters as f64;
    // Per process among the regions that matter.
    let mut per: BTreeMap<i32, (String, u64, u64)> = BTreeMap::new();
    for s in &regions {
        let e = per.entry(s.pid).or_insert((s.comm.clone(), 0, 0));
        e.1 += s.resident;
        e.2 += counts(expect, s);
    }
    let short: Vec<(i32, &(String, u64, u64))> = per
        .iter()
        .filter(|(_, (_, r, h))| {
            *r as f64 >= PROCESS_SHARE * matters as f64 && (*h as f64) < FELL_BACK_BELOW * *r as f64
        })
        .map(|(p, v)| (*p, v))
        .collect();
    let state = match classify(share) {
        State::Got if !short.is_empty() => State::Partial,
        s => s,
    };
    let mut why = format!(
        "{:.0}% of the memory that matters ({} in {} region{} of {} process{}) is on {}",
        share * 100.0,
        Bytes(matters),
        regions.len(),
        if regions.len() == 1 { "" } else { "s" },
        per.len(),
        if per.len() == 1 { "" } else { "es" },
        expect.describe()
    );
    if state != State::Got {
        for (pid, (comm, r, h)) in &short {
            let largest = regions
                .iter()
                .filter(|s| s.pid == *pid)
                .max_by_key(|s| s.resident)
                .map(|s| s.describe())
                .unwrap_or_default();
            why.push_str(&format!(
                "; {} holds {} of it with {} on the pages asked for (largest: {largest})",
                who(*pid, comm),
                Bytes(*r),
                Bytes(*h)
            ));
        }
        if short.is_empty()
            && let Some(s) = regions
                .iter()
                .filter(|s| counts(expect, s) < s.resident / 2)
                .max_by_key(|s| s.resident)
        {
            why.push_str(&format!("; the largest that fell short: {}", s.describe()));
        }
    }
    if matches!(expect, Expect::Hugetlb(_) | Expect::Huge) {
        why.push_str(&hugetlb_words(mem, state));
    }
    // Said whatever the state: a share on THP from before the opt-out is not what the arm set.
    if matches!(expect, Expect::Thp | Expect::Huge) && !mem.thp_disabled.is_empty() {
        why.push_str(&format!(
            "; THP disabled by the process after startup (THP_enabled: 0 for {}: prctl(PR_SET_THP_DISABLE) — Redis ≥ 6.2 does this when THP is `always` unless `disable-thp no`; systemd's MemoryTHP= per unit): {} of {} resident was on THP before it",
            mem.thp_disabled.join(", "),
            Bytes(mem.thp()),
            Bytes(resident)
        ));
    }
    why.push_str(&said);
    Some(Judgment {
        state,
        share,
        matters,
        on_asked,
        why,
        page_size: match expect {
            Expect::Hugetlb(Some(ps)) => ps,
            _ => 2 << 20,
        },
    })
}

/// An arm that asked for no THP (`NoThp`) or for 4 KiB pages: its share off huge pages.
fn judge_small_pages(expect: Expect, mem: &GroupMemory, resident: u64, said: &str) -> Judgment {
    if expect == Expect::NoThp {
        let thp = crate::collect::sampler::anon_thp(mem);
        let share = thp as f64 / resident as f64;
        // What was asked for is memory off THP: its share is the rest.
        return Judgment {
            state: if thp >= 2 << 20 {
                State::FellBack
            } else {
                State::Got
            },
            share: 1.0 - share,
            matters: resident,
            on_asked: resident - thp.min(resident),
            page_size: 4096,
            why: format!(
                "THP is never or off for this arm, yet {} of {} resident ({:.0}%) was on transparent huge pages{}{said}",
                Bytes(thp),
                Bytes(resident),
                share * 100.0,
                if mem.thp_disabled.is_empty() {
                    ": MADV_COLLAPSE (by the workload or a library) collapses memory whatever THP `enabled` says"
                } else {
                    ""
                }
            ),
        };
    }
    let huge = mem.thp() + mem.hugetlb_total();
    let share = huge as f64 / resident as f64;
    let state = if share > FELL_BACK_BELOW {
        State::FellBack
    } else {
        State::Got
    };
    Judgment {
        state,
        share: 1.0 - share,
        matters: resident,
        on_asked: resident - huge.min(resident),
        page_size: 4096,
        why: format!(
            "expected 4 KiB pages; {:.0}% of {} resident is on huge pages{said}",
            share * 100.0,
            Bytes(resident)
        ),
    }
}

/// Hugetlb beyond what was touched: per process, mappings far larger than their pages in use,
/// and the pool's reserved pages when the arm fell short.
fn hugetlb_words(mem: &GroupMemory, state: State) -> String {
    let mut why = String::new();
    // Per process: hugetlb mapped far beyond what it touched.
    let mut mapped: BTreeMap<i32, (&str, u64, u64, usize)> = BTreeMap::new();
    for s in mem.segments.iter().filter(|s| s.kind == "hugetlb") {
        let e = mapped.entry(s.pid).or_insert((&s.comm, 0, 0, 0));
        e.1 += s.size;
        e.2 += s.resident;
        e.3 += 1;
    }
    for (pid, (comm, size, touched, n)) in mapped {
        if size >= 2 * touched.max(2 << 20) {
            why.push_str(&format!(
                    "; {} maps {} of hugetlb in {n} mapping{} and touched {} (the rest is reserved from the pool unless mapped MAP_NORESERVE)",
                    who(pid, comm),
                    Bytes(size),
                    if n == 1 { "" } else { "s" },
                    Bytes(touched)
                ));
        }
    }
    if let Some(k) = &mem.kernel {
        let rsvd: u64 = k.hugetlb_reserved.values().sum();
        if rsvd > 0 && state != State::Got {
            why.push_str(&format!(
                "; the pool had {} reserved and not faulted (HugePages_Rsvd)",
                Bytes(rsvd)
            ));
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::server::add_process;
    use crate::probe::process::parse_smaps;

    fn group(procs: &[(i32, &str, &str)]) -> GroupMemory {
        let mut mem = GroupMemory::default();
        let mut seen = Default::default();
        for (pid, comm, smaps) in procs {
            add_process(
                &mut mem,
                *pid,
                comm,
                &parse_smaps(smaps).unwrap(),
                &mut seen,
            );
        }
        crate::collect::server::keep_largest(&mut mem);
        mem
    }

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/matters/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn a_forked_jvm_on_4k_beside_a_launcher_holding_the_pool_is_flagged() {
        // Captured from `java -Xmx512m -jar benchmarks.jar ByteArrayTouch -f 1` with
        // JAVA_TOOL_OPTIONS=-XX:+UseLargePages and a pool sized for one heap: the launcher
        // reserved its heap on the pool and touched 14M; the fork found the pool taken
        // ("Failed to reserve and commit memory … errno = 12") and runs on 4 KiB pages.
        let mem = group(&[
            (3642, "java", &fixture("jvm-launcher.smaps")),
            (3705, "java", &fixture("jvm-fork.smaps")),
        ]);
        // The rule it replaces cleared it: some hugetlb in the group.
        assert!(mem.hugetlb_total() > 0);
        let j = judge(Expect::Hugetlb(Some(2 << 20)), &mem, None).unwrap();
        assert_eq!(j.state, State::FellBack, "{j:?}");
        assert!(j.share < 0.05, "{j:?}");
        assert!(j.why.contains("java (pid 3705) holds"), "{}", j.why);
        assert!(
            j.why
                .contains("java (pid 3642) maps 752M of hugetlb in 2 mappings and touched 20M"),
            "{}",
            j.why
        );
        // The same fork asked for THP: not on THP either.
        let t = judge(Expect::Thp, &mem, None).unwrap();
        assert_eq!(t.state, State::FellBack, "{t:?}");
    }

    #[test]
    fn postgres_postmaster_and_backends_share_one_segment_counted_once() {
        // Captured: huge_pages=on, shared_buffers=256MB, pgbench -S with two clients.
        let backend = fixture("postgres-backend.smaps");
        let mem = group(&[
            (3818, "postgres", &fixture("postgres-postmaster.smaps")),
            (3837, "postgres", &backend),
            (3838, "postgres", &backend),
        ]);
        let j = judge(Expect::Hugetlb(Some(2 << 20)), &mem, None).unwrap();
        assert_eq!(j.state, State::Got, "{j:?}");
        assert!(j.share > 0.9, "{j:?}");
        // Counted once: the segment's largest view (170M), not the sum of three.
        assert_eq!(mem.hugetlb_total(), 174080 << 10);
        // The same memory where THP was asked for: the segment is hugetlb, not THP.
        let t = judge(Expect::Thp, &mem, None).unwrap();
        assert_eq!(t.state, State::FellBack, "{t:?}");
        // 1G hugetlb asked, 2M got: fell back too.
        let g = judge(Expect::Hugetlb(Some(1 << 30)), &mem, None).unwrap();
        assert_eq!(g.state, State::FellBack, "{g:?}");
    }

    /// The captured process: 512M touched without MADV_HUGEPAGE (4 KiB under THP madvise)
    /// beside 20M madvised and on THP; `collapsed` moves that many kB of the large region to THP.
    fn small_thp_large_4k(collapsed: u64) -> GroupMemory {
        let text = fixture("small-thp-large-4k.smaps");
        let at = text.find("Size:             524288 kB").unwrap();
        let rel = text[at..].find("AnonHugePages:         0 kB").unwrap() + at;
        let text = format!(
            "{}AnonHugePages: {collapsed} kB{}",
            &text[..rel],
            &text[rel + "AnonHugePages:         0 kB".len()..]
        );
        group(&[(900, "app", &text)])
    }

    #[test]
    fn a_small_thp_region_beside_a_large_4k_one_is_not_success() {
        let mem = small_thp_large_4k(0);
        assert!(mem.anon_huge >= 20 << 20, "{mem:?}");
        let j = judge(Expect::Thp, &mem, None).unwrap();
        assert_eq!(j.state, State::FellBack, "{j:?}");
        assert!(
            j.why.contains("app (pid 900) holds 512M of it with 0B"),
            "{}",
            j.why
        );
        // A quarter of the large region on THP: partial, with its share.
        let p = judge(Expect::Thp, &small_thp_large_4k(131072), None).unwrap();
        assert_eq!(p.state, State::Partial, "{p:?}");
        assert!((0.2..0.3).contains(&p.share), "{p:?}");
        // Most of it: on huge pages.
        let g = judge(Expect::Thp, &small_thp_large_4k(458752), None).unwrap();
        assert_eq!(g.state, State::Got, "{g:?}");
    }

    #[test]
    fn a_process_that_turned_thp_off_is_said_so_with_what_it_had() {
        let mut mem = small_thp_large_4k(0);
        mem.thp_disabled.push("900 redis-server".into());
        let j = judge(Expect::Thp, &mem, Some("Redis said: …")).unwrap();
        assert!(
            j.why.contains("THP disabled by the process after startup"),
            "{}",
            j.why
        );
        assert!(j.why.contains("resident was on THP before it"), "{}", j.why);
        assert!(j.why.ends_with("; Redis said: …"), "{}", j.why);
    }

    #[test]
    fn four_k_arms_small_groups_and_the_thresholds() {
        let mem = small_thp_large_4k(0);
        assert_eq!(judge(Expect::FourK, &mem, None).unwrap().state, State::Got);
        assert_eq!(
            judge(Expect::FourK, &small_thp_large_4k(458752), None)
                .unwrap()
                .state,
            State::FellBack
        );
        assert!(judge(Expect::Thp, &GroupMemory::default(), None).is_none());
        assert_eq!(classify(0.05), State::FellBack);
        assert_eq!(classify(0.3), State::Partial);
        assert_eq!(classify(0.6), State::Got);
    }
}
