//! Which mappings of a hypervisor are guest RAM, on which page sizes, and why not huge.

use super::cmdline::{BackendKind, Declared, FOUND, Hypervisor, UNDECLARED_MIN};
pub use crate::model::vm::{GuestBackend, GuestRam, PageShare, Region};
use crate::probe::process::Mapping;
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Which mapping (index into `maps`) holds each declared backend; for undeclared guest RAM, the
/// large anonymous, shared or hugetlb mappings.
pub fn locate(decl: &[Declared], maps: &[Mapping]) -> Vec<(Declared, Option<usize>)> {
    let mut used = vec![false; maps.len()];
    let fits = |d: &Declared, m: &Mapping| {
        let p = m.path.as_str();
        let kind_ok = match d.kind {
            BackendKind::Ram => p.is_empty() && m.perms.starts_with("rw"),
            BackendKind::Memfd => p.starts_with("/memfd:"),
            BackendKind::File => d.path.as_deref().is_some_and(|dir| p.starts_with(dir)),
            BackendKind::Undeclared => {
                (p.is_empty() || p.starts_with("/memfd:") || m.has_flag("ht"))
                    && m.perms.starts_with("rw")
            }
        };
        // QEMU maps a backend exactly; allow the alignment slack other VMMs add.
        kind_ok && m.size() >= d.size && m.size() <= d.size + (4 << 20)
    };
    let mut out = Vec::new();
    for d in decl {
        let i = (0..maps.len()).find(|&i| !used[i] && fits(d, &maps[i]));
        if let Some(i) = i {
            used[i] = true;
        }
        out.push((d.clone(), i));
    }
    if decl.is_empty() {
        for (i, m) in maps.iter().enumerate() {
            let p = m.path.as_str();
            if m.size() >= UNDECLARED_MIN
                && m.perms.starts_with("rw")
                && (p.is_empty() || p.starts_with("/memfd:") || m.has_flag("ht"))
            {
                out.push((
                    Declared {
                        id: format!("{FOUND}{:x}", m.start),
                        kind: BackendKind::Undeclared,
                        size: m.size(),
                        hugetlb_page: None,
                        hugetlb: m.has_flag("ht"),
                        path: (!p.is_empty()).then(|| p.to_string()),
                        prealloc: false,
                    },
                    Some(i),
                ));
            }
        }
    }
    out
}

fn merge(into: &mut Vec<PageShare>, from: &[PageShare]) {
    for p in from {
        match into
            .iter_mut()
            .find(|q| q.page_size == p.page_size && q.hugetlb == p.hugetlb)
        {
            Some(q) => q.bytes += p.bytes,
            None => into.push(*p),
        }
    }
    into.retain(|p| p.bytes > 0);
    into.sort_by(|a, b| {
        b.page_size
            .cmp(&a.page_size)
            .then(b.hugetlb.cmp(&a.hugetlb))
    });
}

/// The guest RAM of one VM. `regions[i]` describes `maps[i]`; `pool_free` is free bytes per
/// hugetlb page size (HugePages_Free).
pub fn guest_ram(
    hv: Hypervisor,
    located: Vec<(Declared, Option<usize>)>,
    regions: &[Region],
    pool_free: &BTreeMap<u64, u64>,
) -> GuestRam {
    let declared = located.iter().any(|(d, _)| !d.id.starts_with(FOUND));
    let mut reasons: Vec<String> = Vec::new();
    let mut add = |r: String| {
        if !reasons.contains(&r) {
            reasons.push(r);
        }
    };
    let mut backends = Vec::new();
    let mut pages = Vec::new();
    for (d, i) in located {
        let r = i.and_then(|i| regions.get(i));
        let (resident, p) = r.map_or((0, Vec::new()), |r| (r.resident, r.pages.clone()));
        merge(&mut pages, &p);
        match r {
            None => add(format!(
                "backend {} ({}): no mapping of that size in the process (not yet allocated?)",
                d.id,
                Bytes(d.size)
            )),
            Some(r) => {
                let untouched = d.size.saturating_sub(resident);
                if untouched > d.size / 100 {
                    add(if d.prealloc {
                        format!(
                            "{} of backend {} is not resident although prealloc was requested (still being preallocated: zeroing huge pages takes seconds per GiB, or reclaimed since)",
                            Bytes(untouched),
                            d.id
                        )
                    } else {
                        format!(
                            "{} of guest RAM not yet touched: no preallocation (prealloc=on, -mem-prealloc or libvirt <allocation mode='immediate'/> faults it in at start), and the guest has not used it",
                            Bytes(untouched)
                        )
                    });
                }
                let huge_page = p.iter().find(|s| s.hugetlb).map(|s| s.page_size);
                if let Some(ps) = huge_page.or(d.hugetlb_page.filter(|_| d.hugetlb)) {
                    let free = pool_free.get(&ps).copied().unwrap_or(0);
                    if untouched > free && !d.prealloc {
                        add(format!(
                            "hugetlb pool short: {} not yet touched and {} free in the {} pool; if the mapping is unreserved (reserve=off) the guest gets SIGBUS when it touches the rest",
                            Bytes(untouched),
                            Bytes(free),
                            Bytes(ps)
                        ));
                    }
                }
                for why in &r.reasons {
                    add(why.clone());
                }
            }
        }
        backends.push(GuestBackend {
            start: r.map(|r| r.start),
            end: r.map(|r| r.end),
            resident,
            pages: p,
            declared: d,
        });
    }
    let size: u64 = backends.iter().map(|b| b.declared.size).sum();
    let resident: u64 = backends.iter().map(|b| b.resident).sum();
    let huge: u64 = pages
        .iter()
        .filter(|p| p.page_size > 4096)
        .map(|p| p.bytes)
        .sum();
    let shares: Vec<String> = pages
        .iter()
        .map(|p| {
            format!(
                "{:.0}% on {} pages",
                100.0 * p.bytes as f64 / resident.max(1) as f64,
                p.label()
            )
        })
        .collect();
    let head = if resident + size / 100 >= size {
        format!("guest RAM {}", Bytes(size))
    } else {
        format!("guest RAM {} ({} resident)", Bytes(size), Bytes(resident))
    };
    let summary = if resident == 0 {
        format!("{head}: nothing resident yet")
    } else {
        format!("{head}: {}", shares.join(", "))
    };
    GuestRam {
        hypervisor: hv,
        size,
        declared,
        backends,
        resident,
        huge_share: huge as f64 / size.max(1) as f64,
        pages,
        summary,
        reasons,
    }
}
