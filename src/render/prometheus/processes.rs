//! Watched processes as Prometheus series: resident and huge bytes, coverage, the memory that
//! matters, and the folio sizes of the last complete pass (or how far the pass underway is).

use super::{Out, set, size};
use crate::model::exporter::Scrape;
use prometheus_client::registry::Unit;

pub(super) fn processes(o: &mut Out, s: &Scrape) {
    if !s.watched_up.is_empty() {
        let up = o.gauge(
            "watched_up",
            "Each --pid asked for: 1 when the process was there to read this scrape, 0 when it is not (gone, or never existed)",
            None,
        );
        for (pid, there) in &s.watched_up {
            set(&up, vec![("pid", pid.to_string())], u64::from(*there));
        }
    }
    if s.processes.is_empty() {
        return;
    }
    let resident = o.gauge(
        "process_resident",
        "Watched process: resident memory (Rss plus hugetlb) from smaps_rollup",
        Some(Unit::Bytes),
    );
    let huge = o.gauge(
        "process_huge",
        "Watched process: huge-page-backed bytes by kind (anon_thp, shmem_pmd, file_pmd, hugetlb)",
        Some(Unit::Bytes),
    );
    let coverage = o.ratio(
        "process_huge_coverage",
        "Watched process: huge bytes over resident bytes (PMD-mapped THP and hugetlb)",
        Some(Unit::Other("ratio".into())),
    );
    let matters = o.ratio(
        "process_huge_matters",
        "Watched process: share of the memory that matters (its largest regions, holding 80% of what can be huge) on huge pages, the rule hugelab run judges arms by",
        Some(Unit::Other("ratio".into())),
    );
    let rollup_age = o.ratio(
        "process_rollup_age",
        "Watched process: age of the smaps_rollup numbers (read less often when its walk costs more than --budget)",
        Some(Unit::Seconds),
    );
    let folios = o.gauge(
        "process_folio",
        "Watched process: resident bytes by folio size, from the last complete pagemap + kpageflags pass (root only; mTHP shows here)",
        Some(Unit::Bytes),
    );
    let folio_age = o.ratio(
        "process_folio_age",
        "Watched process: age of the folio sizes (one pass spreads over scrapes within --budget)",
        Some(Unit::Seconds),
    );
    let progress = o.ratio(
        "process_folio_pass_progress",
        "Watched process: share of its address space the folio-size pass underway has walked (before the first pass completes, its folio sizes are not served)",
        Some(Unit::Other("ratio".into())),
    );
    for p in &s.processes {
        let id = || vec![("pid", p.pid.to_string()), ("comm", p.comm.clone())];
        set(&resident, id(), p.resident);
        if let Some(f) = p.folio_pass_progress {
            progress.get_or_create(&id()).set(f);
        }
        for (k, v) in &p.huge {
            let mut l = id();
            l.push(("kind", k.clone()));
            set(&huge, l, *v);
        }
        if let Some(c) = p.coverage {
            coverage.get_or_create(&id()).set(c);
        }
        if let Some(m) = p.matters {
            matters.get_or_create(&id()).set(m);
        }
        rollup_age.get_or_create(&id()).set(p.rollup_age_s);
        if let (Some(f), Some(age)) = (&p.folios, p.folios_age_s) {
            for (sz, b) in f {
                let mut l = id();
                l.push(("folio_size", size(*sz)));
                set(&folios, l, *b);
            }
            folio_age.get_or_create(&id()).set(age);
        }
    }
}
