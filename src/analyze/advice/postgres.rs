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
    a.service = conf_lines(&arm.process.server_args)
        .into_iter()
        .map(|line| ServiceLine {
            file: "postgresql.conf".into(),
            line,
            why: why.clone(),
        })
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
        a.notes.push(
            "with shared_memory_type = mmap (the default) PostgreSQL maps MAP_HUGETLB: no hugetlb_shm_group or memlock limit is needed"
                .into(),
        );
    }
    a
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
        let runs = [r];
        let a = advise(&runs, findings(&runs), Some(265));
        assert_eq!(a.service[0].line, "huge_pages = on");
        let pool: Vec<&Setting> = a.settings.iter().filter(|s| s.knob.is_pool()).collect();
        assert_eq!(pool.len(), 1);
        assert_eq!(pool[0].value, "267");
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
