//! The cgroup series: each exported group's memory and huge pages as the kernel accounts them,
//! labelled with its path and what the path says (pod, QoS class, container, systemd unit).

use super::{Out, set, size};
use crate::model::exporter::Scrape;
use prometheus_client::registry::Unit;

pub(super) fn cgroups(o: &mut Out, s: &Scrape) {
    let Some(c) = &s.cgroups else {
        return;
    };
    let groups = o.gauge(
        "cgroups",
        "cgroups below the root read down to --cgroup-depth (state=\"read\") and exported, the largest by memory (state=\"exported\", at most --cgroups)",
        None,
    );
    set(&groups, vec![("state", "read".into())], c.read as u64);
    set(
        &groups,
        vec![("state", "exported".into())],
        c.rows.len() as u64,
    );
    o.value(
        "cgroup_age",
        "Age of the cgroup series (a walk that cost more than --budget is repeated less often)",
        Unit::Seconds,
        c.age_s,
    );
    if c.rows.is_empty() {
        return;
    }
    let memory = o.gauge(
        "cgroup_memory",
        "cgroup: memory charged to it and its descendants (v2 memory.current, v1 memory.usage_in_bytes); hugetlb pages are not in it",
        Some(Unit::Bytes),
    );
    let thp = o.gauge(
        "cgroup_thp",
        "cgroup: transparent huge pages by kind, from memory.stat (anon: v2 anon_thp, v1 total_rss_huge; file and shmem: v2 file_thp and shmem_thp, absent on v1)",
        Some(Unit::Bytes),
    );
    let hugetlb = o.gauge(
        "cgroup_hugetlb",
        "cgroup: hugetlb pages in use by page size, from the hugetlb controller (v2 hugetlb.<size>.current, v1 hugetlb.<size>.usage_in_bytes)",
        Some(Unit::Bytes),
    );
    let huge_bytes = o.gauge(
        "cgroup_huge",
        "cgroup: bytes on huge pages (THP of every kind and hugetlb); leaf=\"true\" where no exported group lies below it, so a sum over leaves counts each byte once",
        Some(Unit::Bytes),
    );
    let total_bytes = o.gauge(
        "cgroup_total",
        "cgroup: its memory with its hugetlb pages, each byte once (hugetlb not added again under memory_hugetlb_accounting); leaf as for cgroup_huge_bytes",
        Some(Unit::Bytes),
    );
    let share = o.ratio(
        "cgroup_huge",
        "cgroup: bytes on huge pages (THP of every kind and hugetlb) over its memory plus its hugetlb pages",
        Some(Unit::Other("ratio".into())),
    );
    for r in &c.rows {
        let g = &r.group;
        let id = || {
            let mut l = vec![("cgroup", g.path.clone())];
            l.extend(
                r.labels
                    .pairs()
                    .into_iter()
                    .map(|(k, v)| (k, v.to_string())),
            );
            l
        };
        if let Some(m) = g.memory {
            set(&memory, id(), m);
        }
        for (kind, v) in [
            ("anon", g.anon_thp),
            ("file", g.file_thp),
            ("shmem", g.shmem_thp),
        ] {
            if let Some(v) = v {
                let mut l = id();
                l.push(("kind", kind.into()));
                set(&thp, l, v);
            }
        }
        for (ps, b) in &g.hugetlb {
            let mut l = id();
            l.push(("size", size(*ps)));
            set(&hugetlb, l, *b);
        }
        if let Some(x) = r.share {
            share.get_or_create(&id()).set(x);
        }
        let mut l = id();
        l.push(("leaf", r.leaf.to_string()));
        set(&huge_bytes, l.clone(), r.huge_bytes);
        set(&total_bytes, l, r.total_bytes);
    }
}
