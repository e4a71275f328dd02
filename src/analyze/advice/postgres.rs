//! `--for postgres`: `huge_pages`, `huge_page_size` and the pool PostgreSQL's shared memory
//! needs (`postgres -C shared_memory_size_in_huge_pages`, asked by the command), from the arm
//! measured better.

use super::{Adopted, Advice, EvidenceLine, RunEvidence, ServiceLine, Setting, Target, begin};
use crate::backing::arm::Expect;
use crate::control::Knob;

/// `server.arg` words as `postgresql.conf` lines: `-c huge_pages=on` → `huge_pages = on`.
pub fn conf_lines(words: &[String]) -> Vec<String> {
    words
        .windows(2)
        .filter(|w| w[0] == "-c")
        .filter_map(|w| w[1].split_once('='))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect()
}

/// Pages PostgreSQL said it needs, plus the 2-page margin `run` gave it.
pub const MARGIN_PAGES: u64 = 2;

/// `pg_pages`: what `postgres -D DATADIR -C shared_memory_size_in_huge_pages` printed (2 MiB
/// pages), when the command could ask.
pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>, pg_pages: Option<u64>) -> Advice {
    let (mut a, chosen) = begin(
        Target::Postgres,
        runs,
        lines,
        "hugelab inspect --tree --name postgres (the main shared memory segment on the advised page size)",
    );
    let Some(Adopted { arm, why, .. }) = chosen else {
        return a;
    };
    a.notes.extend(tails(runs, &arm.name));
    let conf = conf_lines(&arm.process.server_args);
    if let Some(n) = huge_pages_note(&conf) {
        a.notes.push(n.into());
    }
    // The configuration file's lines first, then the unit's (MemoryTHP=) from `begin`.
    let unit = std::mem::take(&mut a.service);
    a.service = conf
        .into_iter()
        .map(|line| ServiceLine {
            file: "postgresql.conf".into(),
            line,
            why: why.clone(),
        })
        .chain(unit)
        .collect();
    if let Some(Expect::Hugetlb(size)) = arm.server_expectation() {
        let size = size.unwrap_or(2 << 20);
        if size == 1 << 30 {
            a.service.push(ServiceLine {
                file: "postgresql.conf".into(),
                line: "huge_page_size = 1GB".into(),
                why: "the arm measured 1 GiB pages".into(),
            });
        }
        match pg_pages {
            Some(n) if size == 2 << 20 => {
                let knob = Knob::HugetlbPages { size, node: None };
                a.settings.retain(|s| s.knob != knob);
                a.settings.push(Setting {
                    knob,
                    value: (n + MARGIN_PAGES).to_string(),
                    now: None,
                    why: format!(
                        "PostgreSQL's shared memory needs {n} pages (postgres -C shared_memory_size_in_huge_pages) + {MARGIN_PAGES}"
                    ),
                });
            }
            _ => a.not_measured.push(
                "the pool for this data directory: give --pg-datadir DIR (and --user postgres) so PostgreSQL computes it; the pool above is the measured run's"
                    .into(),
            ),
        }
        if let Some(pool) = a.settings.iter().find(|s| s.knob.is_pool()) {
            let pages: u64 = pool.value.parse().unwrap_or(0);
            a.notes.push(format!(
                "huge_pages = on takes {} = {pages} ({}) from memory at boot, and PostgreSQL reserves its whole shared memory from that pool at start, whether its buffers fill or not; the run's memory contrast set that against the 4 KiB server with its shared segment counted whole (server memory, segments whole), as it holds it once shared_buffers fills",
                pool.knob.sysctl().map_or(pool.knob.to_string(), String::from),
                crate::units::Bytes(pages * size)
            ));
        }
        a.notes.push(
            "with shared_memory_type = mmap (the default) PostgreSQL maps MAP_HUGETLB: no hugetlb_shm_group or memlock limit is needed"
                .into(),
        );
    }
    a
}

/// What `huge_pages` does when the pool is short, for the value advised.
fn huge_pages_note(conf: &[String]) -> Option<&'static str> {
    let v = conf.iter().find_map(|l| l.strip_prefix("huge_pages = "))?;
    match v {
        "on" => Some(
            "huge_pages = on: when the pool is short of the shared memory, PostgreSQL refuses to start (FATAL: could not map anonymous shared memory) — the server stays down until the pool is grown; huge_pages = try would start on 4 KiB pages instead, without a word to the operator",
        ),
        "try" => Some(
            "huge_pages = try: when the pool is short, PostgreSQL starts on 4 KiB pages without a word to the operator (hugelab FLAGs such a trial); huge_pages = on would refuse to start instead, so a short pool is seen at once",
        ),
        _ => None,
    }
}

/// The tail: every p99 contrast of the adopted arm in the runs that measured it.
fn tails(runs: &[RunEvidence], arm: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for m in r
            .report
            .metrics
            .iter()
            .filter(|m| m.metric.name.contains("p99"))
        {
            let Some((_, c)) = m.contrasts.iter().find(|(a, _)| a == arm) else {
                continue;
            };
            let words = match c {
                Some(c) => {
                    let e = &c.percent;
                    let interval = match (e.lo, e.hi) {
                        (Some(lo), Some(hi)) => {
                            format!(" {}", crate::units::fmt_interval(lo, hi, 1))
                        }
                        _ => " (no interval: too few blocks)".into(),
                    };
                    let verdict = match c.verdict {
                        crate::analyze::verdict::Verdict::Faster => "better",
                        crate::analyze::verdict::Verdict::Slower => "WORSE",
                        crate::analyze::verdict::Verdict::Equivalent => "the same",
                        crate::analyze::verdict::Verdict::Inconclusive => "not resolved",
                    };
                    format!("{:+.1}%{interval} {verdict}", e.point)
                }
                None => "too few complete blocks".into(),
            };
            out.push(format!(
                "tail (run {}): {} {arm} vs {}: {words}",
                r.run_id, m.metric.name, r.report.baseline
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::findings;
    use super::super::tests::run;
    use super::*;
    use crate::analyze::verdict::Verdict;

    #[test]
    fn the_pool_comes_from_postgres_and_the_conf_from_the_arm() {
        let r = run(
            3,
            &[
                "off=server.arg=-c,server.arg=huge_pages=off",
                "hugetlb-2m=server.arg=-c,server.arg=huge_pages=on,hugetlb.2M=300,expect=hugetlb-2m",
            ],
            &[(7.0, 2.0, 12.0, Verdict::Faster, 0)],
        );
        let mut r = r;
        // The load's p99 beside its throughput: the advice carries it.
        let mut p99 = r.report.metrics[1].clone();
        p99.metric.name = "latency_p99_ms".into();
        r.report.metrics.push(p99);
        let runs = [r];
        let a = advise(&runs, findings(&runs), Some(265));
        assert_eq!(a.service[0].line, "huge_pages = on");
        assert!(
            a.notes.iter().any(|n| n.starts_with(
                "tail (run 3): latency_p99_ms hugetlb-2m vs off: +7.0% [+2.0, +12.0]"
            )),
            "{:?}",
            a.notes
        );
        assert!(
            a.notes.iter().any(|n| n.contains("refuses to start")),
            "{:?}",
            a.notes
        );
        let pool: Vec<&Setting> = a.settings.iter().filter(|s| s.knob.is_pool()).collect();
        assert_eq!(pool.len(), 1);
        assert_eq!(pool[0].value, "267");
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("vm.nr_hugepages = 267 (534") && n.contains("segments whole")),
            "{:?}",
            a.notes
        );
        let without = advise(&runs, findings(&runs), None);
        assert_eq!(
            without
                .settings
                .iter()
                .find(|s| s.knob.is_pool())
                .unwrap()
                .value,
            "300"
        );
        assert!(
            without
                .not_measured
                .iter()
                .any(|n| n.contains("--pg-datadir"))
        );
    }
}
