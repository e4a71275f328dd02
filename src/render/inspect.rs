//! `inspect`, `top` and `collapse` for people.

use super::{fit, table};
use crate::model::inspect::{CollapseResult, InspectResult, TopRow};
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |c| format!("{:.1}%", c * 100.0))
}

fn folio_line(h: &BTreeMap<u64, u64>) -> String {
    let total: u64 = h.values().sum();
    h.iter()
        .map(|(s, b)| {
            format!(
                "{} {} ({:.1}%)",
                Bytes(*s),
                Bytes(*b),
                *b as f64 * 100.0 / total.max(1) as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A mapping's file as a table cell: `…/` and its name when the path is long (the full path
/// is in `--json`).
fn short_path(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((_, file)) if path.chars().count() > 24 => format!("…/{file}"),
        _ => path.to_string(),
    }
}

/// `--tree` instances and the pools' reservations, after the processes.
fn render_instances(r: &InspectResult) -> String {
    let mut o = String::new();
    for i in &r.instances {
        let m = &i.memory;
        let _ = writeln!(
            o,
            "instance of pid {} ({}): {} processes, shared memory counted once{}",
            i.pid,
            i.name,
            m.processes,
            if m.thp_disabled.is_empty() {
                String::new()
            } else {
                format!("; THP disabled for {}", m.thp_disabled.join(", "))
            }
        );
        let hugetlb: Vec<String> = m
            .hugetlb
            .iter()
            .map(|(ps, b)| format!("{} on {} hugetlb", Bytes(*b), Bytes(*ps)))
            .collect();
        let _ = writeln!(
            o,
            "  resident {}, on huge pages {} = {} (THP {}{}{})",
            Bytes(m.rss + m.hugetlb_total()),
            Bytes(m.thp() + m.hugetlb_total()),
            pct(m.coverage()),
            Bytes(m.thp()),
            if hugetlb.is_empty() { "" } else { "; " },
            hugetlb.join(", ")
        );
        for s in &m.segments {
            let _ = writeln!(o, "  {}", s.describe());
        }
    }
    for p in &r.pools {
        let _ = writeln!(
            o,
            "hugetlb pool {}: {} pages = {} in use + {} reserved (promised to a mapping, not yet touched) + {} free{}",
            Bytes(p.page_size),
            p.total,
            p.in_use(),
            p.reserved_free(),
            p.available(),
            if p.surplus > 0 {
                format!(" ({} surplus)", p.surplus)
            } else {
                String::new()
            }
        );
    }
    o
}

pub fn render(r: &InspectResult, maps: bool, folios: bool) -> String {
    let mut o = match &r.tlb {
        Some(ctx) => super::tlb::hot_text(&r.hot, ctx),
        None => String::new(),
    };
    for p in &r.processes {
        let thp = match p.thp_enabled {
            Some(false) => " — THP disabled for this process (PR_SET_THP_DISABLE)",
            _ => "",
        };
        let _ = writeln!(o, "pid {} ({}){thp}", p.pid, p.name);
        let _ = writeln!(
            o,
            "  resident {} (hugetlb counted once), on huge pages {} = {} coverage",
            Bytes(p.resident),
            Bytes(p.huge_bytes),
            pct(p.coverage)
        );
        match &p.folios {
            Some(h) if !h.is_empty() => {
                let _ = writeln!(o, "  folio sizes: {}", folio_line(h));
            }
            _ => {}
        }
        let _ = writeln!(
            o,
            "  TLB reach: {} translations now; {} if all 4 KiB; {} if all 2 MiB",
            p.tlb.now, p.tlb.all_4k, p.tlb.all_2m
        );
        if let Some(g) = &p.guest_ram {
            guest_lines(g, &mut o);
        }
        if !p.mappings.is_empty() {
            mapping_lines(p, (maps, folios), &mut o);
        }
        for n in &p.notes {
            let _ = writeln!(o, "  note: {n}");
        }
        let _ = writeln!(o, "  ({:.0} ms)", p.elapsed_ms);
    }
    o.push_str(&render_instances(r));
    for c in &r.cgroups {
        o.push_str(&super::cgroups::instance(c));
    }
    for e in &r.errors {
        let _ = writeln!(o, "error: {e}");
    }
    o
}

/// A VM's guest RAM as the hypervisor process holds it: per backend, and why.
fn guest_lines(g: &crate::model::vm::GuestRam, o: &mut String) {
    let _ = writeln!(o, "  {} VM: {}", g.hypervisor.name(), g.summary);
    for b in g.backends.iter().filter(|_| g.backends.len() > 1) {
        let _ = writeln!(
            o,
            "    backend {} ({}, {}): {} resident",
            b.declared.id,
            Bytes(b.declared.size),
            serde_json::to_value(b.declared.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            Bytes(b.resident)
        );
    }
    for why in &g.reasons {
        let _ = writeln!(o, "    why: {why}");
    }
    if !g.declared {
        let _ = writeln!(
            o,
            "    (size not on the command line: guest RAM taken as the large anonymous, shared and hugetlb mappings)"
        );
    }
}

/// The mappings table, why each is not huge, and the mTHP folio sizes of those that have them.
fn mapping_lines(
    p: &crate::model::inspect::ProcessReport,
    (maps, folios): (bool, bool),
    o: &mut String,
) {
    let mut t = table(&[
        "start", "perm", "mapping", "size", "resident", "huge", "cov", "page",
    ]);
    let mut mixed = Vec::new();
    let mut why = Vec::new();
    for m in &p.mappings {
        let flags: Vec<&str> = m
            .vm_flags
            .iter()
            .map(String::as_str)
            .filter(|f| matches!(*f, "hg" | "nh" | "ht"))
            .collect();
        if let Some(h) = m
            .folios
            .as_ref()
            .filter(|h| h.keys().any(|s| *s > 4096 && *s < (2 << 20)))
        {
            mixed.push(format!("{:x}: {}", m.start, folio_line(h)));
        }
        t.add_row(vec![
            format!("{:x}", m.start),
            if flags.is_empty() {
                m.perms.clone()
            } else {
                format!("{} {}", m.perms, flags.join(" "))
            },
            if m.path.is_empty() {
                m.kind.name().to_string()
            } else {
                format!("{} {}", m.kind.name(), short_path(&m.path))
            },
            Bytes(m.size).to_string(),
            Bytes(m.resident).to_string(),
            Bytes(m.huge_bytes).to_string(),
            pct(m.coverage),
            Bytes(m.kernel_page_size).to_string(),
        ]);
        if !m.why_not_huge.is_empty() {
            why.push(format!("{:x}  {}", m.start, m.why_not_huge.join("; ")));
        }
    }
    let what = if maps {
        "mappings"
    } else {
        "mappings with ≥ 1 MiB resident not on huge pages (all: --maps)"
    };
    let _ = writeln!(o, "  {what}\n{}", fit(&mut t));
    if !why.is_empty() {
        let _ = writeln!(o, "  why not huge:");
        for l in &why {
            for l in super::summary::wrap_hanging(&format!("    {l}"), 18) {
                let _ = writeln!(o, "{l}");
            }
        }
    }
    if !mixed.is_empty() {
        if folios {
            let _ = writeln!(
                o,
                "  folio sizes of the mappings with mTHP (size, bytes, share):"
            );
            for l in &mixed {
                for l in super::summary::wrap_hanging(&format!("    {l}"), 6) {
                    let _ = writeln!(o, "{l}");
                }
            }
        } else {
            let _ = writeln!(
                o,
                "  {} mappings hold mTHP folios: their sizes with --folios",
                mixed.len()
            );
        }
    }
}

pub fn render_top(rows: &[TopRow], unreadable: usize, full: bool) -> String {
    let mut t = table(&[
        "pid",
        "name",
        "resident",
        "AnonHugePages",
        "hugetlb",
        "huge",
        "coverage",
        "THP",
    ]);
    for r in rows {
        t.add_row(vec![
            r.pid.to_string(),
            r.name.clone(),
            Bytes(r.resident).to_string(),
            Bytes(r.anon_huge_pages).to_string(),
            Bytes(r.hugetlb).to_string(),
            Bytes(r.huge_bytes).to_string(),
            pct(r.coverage),
            match r.thp_enabled {
                Some(false) => "disabled".into(),
                Some(true) => "on".into(),
                None => "-".into(),
            },
        ]);
    }
    let mut o = format!("{}\n", fit(&mut t));
    for r in rows {
        if let Some(g) = &r.guest_ram {
            let _ = writeln!(o, "VM pid {} ({}): {}", r.pid, r.name, g.summary);
            for why in &g.reasons {
                let _ = writeln!(o, "  why: {why}");
            }
        }
    }
    if !full {
        o.push_str("from smaps_rollup (cheap; mTHP folios not visible: use --full as root)\n");
    }
    if unreadable > 0 {
        let _ = writeln!(
            o,
            "{unreadable} process(es) could not be read (exited meanwhile, or another user's without root)"
        );
    }
    o
}

pub fn render_collapse(r: &CollapseResult) -> String {
    let mut t = table(&[
        "start",
        "kind",
        "requested",
        "resident",
        "huge before",
        "huge after",
        "time",
        "result",
    ]);
    // The result column holds the error's code; its explanation is a line of its own below,
    // wrapped at words (a table cell would break it mid-word).
    let mut reasons: Vec<&str> = Vec::new();
    for x in &r.rows {
        let result = match &x.error {
            None => "collapsed".to_string(),
            Some(e) => {
                if !reasons.contains(&e.as_str()) {
                    reasons.push(e);
                }
                format!("failed ({})", e.split(':').next().unwrap_or(e))
            }
        };
        t.add_row(vec![
            format!("{:x}", x.start),
            x.kind.name().to_string(),
            Bytes(x.requested).to_string(),
            Bytes(x.resident).to_string(),
            Bytes(x.huge_before).to_string(),
            Bytes(x.huge_after).to_string(),
            format!("{:.1} ms", x.elapsed_ms),
            result,
        ]);
    }
    let failed = r.rows.iter().filter(|x| x.error.is_some()).count();
    let outcome = match failed {
        0 => String::new(),
        n if n == r.rows.len() => format!(
            "MADV_COLLAPSE FAILED for {}: ",
            if n == 1 {
                "the requested range".to_string()
            } else {
                format!("all {n} requested ranges")
            }
        ),
        n => format!(
            "MADV_COLLAPSE failed for {n} of {} requested ranges: ",
            r.rows.len()
        ),
    };
    let head = format!(
        "pid {} ({}): {outcome}huge coverage of the requested ranges {} → {} in {:.0} ms (MADV_COLLAPSE through process_madvise)",
        r.pid,
        r.name,
        pct(r.coverage_before),
        pct(r.coverage_after),
        r.elapsed_ms,
    );
    let mut o = super::summary::wrap_hanging(&head, 2).join("\n");
    o.push('\n');
    o.push_str(&fit(&mut t).to_string());
    o.push('\n');
    for e in reasons {
        o.push_str(&super::summary::wrap_hanging(&format!("why: {e}"), 2).join("\n"));
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inspect::TlbReach;
    use crate::model::inspect::{MappingReport, ProcessReport};
    use crate::probe::process::Kind;

    fn mapping(start: u64, kind: Kind, path: &str, folios: &[(u64, u64)]) -> MappingReport {
        let size: u64 = folios.iter().map(|(_, b)| b).sum();
        MappingReport {
            start,
            end: start + size,
            perms: "rw-s".into(),
            kind,
            path: path.into(),
            size,
            resident: size,
            anon_huge_pages: 0,
            private_hugetlb: 0,
            shared_hugetlb: 0,
            kernel_page_size: 4096,
            thp_eligible: Some(true),
            vm_flags: vec!["rd".into(), "wr".into(), "hg".into()],
            folios: Some(folios.iter().copied().collect()),
            huge_bytes: folios
                .iter()
                .filter(|(s, _)| *s > 4096)
                .map(|(_, b)| b)
                .sum(),
            coverage: Some(0.5),
            tlb: TlbReach::default(),
            why_not_huge: vec![
                "THP mode is `madvise` and this range has no MADV_HUGEPAGE (VmFlags lacks hg); \
                 khugepaged skips it too"
                    .into(),
            ],
        }
    }

    /// A QEMU-like process (guest RAM in a long hugetlbfs path) and a process with mixed mTHP
    /// folios: every line of the default output fits 100 columns.
    #[test]
    fn qemu_and_mixed_folios_fit_100_columns() {
        let p = ProcessReport {
            pid: 4242,
            name: "qemu-system-x86".into(),
            thp_enabled: Some(true),
            resident: 3 << 30,
            huge_bytes: 2 << 30,
            coverage: Some(0.66),
            folios: Some([(4096, 1 << 30), (65536, 1 << 29), (2 << 20, 1 << 29)].into()),
            tlb: TlbReach::default(),
            mappings: vec![
                mapping(
                    0x7f00_0000_0000,
                    Kind::GuestRam,
                    "/dev/hugepages/libvirt/qemu/1-guest-with-a-long-name/qemu_back_mem._objects_ram-node0.AbCdEf (deleted)",
                    &[(1 << 30, 2 << 30)],
                ),
                mapping(
                    0x7f10_0000_0000,
                    Kind::Anonymous,
                    "",
                    &[
                        (4096, 1 << 20),
                        (16384, 1 << 20),
                        (65536, 3 << 20),
                        (2 << 20, 4 << 20),
                    ],
                ),
            ],
            guest_ram: None,
            notes: vec!["folio sizes read within the budget of 2 s for 100% of the ranges".into()],
            elapsed_ms: 12.0,
        };
        let r = InspectResult {
            schema: "hugelab.inspect/1",
            processes: vec![p],
            errors: vec![],
            instances: vec![],
            pools: vec![],
            hot: vec![],
            tlb: None,
            cgroups: vec![],
        };
        for folios in [false, true] {
            let text = render(&r, true, folios);
            for l in text.lines() {
                assert!(
                    l.chars().count() <= 100,
                    "{} columns:\n{l}\n{text}",
                    l.chars().count()
                );
            }
            assert_eq!(text.contains("64K 3M"), folios, "{text}");
        }
    }
}
