//! A bench's plan: arguments checked against the probed machine.

use super::{BenchArgs, Plan};
use crate::backing::Backing;
use crate::error::UsageError;
use crate::probe::status::Status;
use crate::units::Bytes;
use crate::workload::Workload;

const DEFAULT_SIZES: [u64; 6] = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30];

/// `bench tlb`'s default spans: 16 to 65,536 pages of 4 KiB (64 KiB to 256 MiB), in steps of
/// about √2, so a knee is placed within a factor of 1.5.
pub fn tlb_sizes() -> Vec<u64> {
    let mut v = Vec::new();
    let mut pages = 16u64;
    while pages <= 65_536 {
        v.push(pages * 4096);
        v.push(pages * 3 / 2 * 4096);
        pages *= 2;
    }
    v.pop();
    v
}
/// Memory left to everything else when sizing regions.
const MARGIN_MIN: u64 = 1 << 30;

fn parse_list<T: std::str::FromStr<Err = String>>(items: &[String]) -> Result<Vec<T>, UsageError> {
    let mut out = Vec::new();
    for s in items
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
    {
        out.push(s.parse().map_err(UsageError)?);
    }
    Ok(out)
}

/// Turn arguments plus the probed machine into a plan, or a usage error naming the fix.
pub fn plan(a: &BenchArgs, st: &Status) -> Result<(Plan, Vec<String>), UsageError> {
    let mut notes = Vec::new();
    let workloads = plan_workloads(a)?;
    let backings = plan_backings(a, st, &mut notes)?;
    let sizes = plan_sizes(a, st, (&workloads, &backings), &mut notes)?;
    if a.rounds < 2 {
        return Err(UsageError(format!(
            "--rounds {} is too few: at least 2 (11 or more for a 99.9% interval)",
            a.rounds
        )));
    }
    crate::options::check_confidence(a.confidence)?;
    if a.threads == 0 || a.threads > 1024 {
        return Err(UsageError(format!(
            "--threads {} must be between 1 and 1024",
            a.threads
        )));
    }
    if st
        .thp
        .enabled
        .as_ref()
        .is_some_and(|e| e.selected == "never")
        && backings
            .iter()
            .any(|b| matches!(b, Backing::Thp | Backing::ThpCollapse))
    {
        notes.push("THP is `never` system-wide: thp backings will get 4 KiB pages (their coverage shows it)".into());
    }
    let seed = a.order.or_clock();
    Ok((
        Plan {
            workloads,
            sizes,
            backings,
            rounds: a.rounds,
            threads: a.threads,
            confidence: a.confidence,
            seed,
            iteration_ns: a.iteration_time.as_nanos().max(1_000_000) as u64,
        },
        notes,
    ))
}

/// The workloads asked for (touch, chase and pretouch by default); `tlb` runs alone.
fn plan_workloads(a: &BenchArgs) -> Result<Vec<Workload>, UsageError> {
    let mut workloads: Vec<Workload> = parse_list(&a.workloads)?;
    if workloads.is_empty() && !a.workloads.is_empty() {
        return Err(UsageError(
            "no workload given; name one or more of touch, chase, pretouch, stream, fault".into(),
        ));
    }
    if workloads.is_empty() {
        workloads = vec![Workload::Touch, Workload::Chase, Workload::Pretouch];
    }
    workloads.dedup();
    if workloads.contains(&Workload::Tlb) && workloads.len() > 1 {
        return Err(UsageError(
            "tlb sweeps spans of its own and lays its region out one line a page; run `hugelab bench tlb` on its own".into(),
        ));
    }
    Ok(workloads)
}

/// The backings asked for (4k, thp, hugetlb-2m, and hugetlb-1g where the CPU and kernel have
/// it, by default), the 4k baseline first, each one this kernel offers.
fn plan_backings(
    a: &BenchArgs,
    st: &Status,
    notes: &mut Vec<String>,
) -> Result<Vec<Backing>, UsageError> {
    let explicit_backings = !a.backings.is_empty();
    let mut backings: Vec<Backing> = parse_list(&a.backings)?;
    if explicit_backings && backings.is_empty() {
        return Err(UsageError(format!(
            "--backings is empty; give one or more of {}",
            crate::backing::BACKING_NAMES
        )));
    }
    if backings.is_empty() {
        backings = vec![
            Backing::Base,
            Backing::Thp,
            Backing::Hugetlb { page_size: 2 << 20 },
        ];
        if st.cpu.pdpe1gb && st.hugetlb.iter().any(|p| p.page_size == 1 << 30) {
            backings.push(Backing::Hugetlb { page_size: 1 << 30 });
        }
    }
    if !backings.contains(&Backing::Base) {
        backings.insert(0, Backing::Base);
        notes.push("added the 4k baseline: every ratio is against it".into());
    }
    let mut seen = Vec::new();
    backings.retain(|b| {
        let new = !seen.contains(b);
        seen.push(*b);
        new
    });
    for b in &backings {
        match *b {
            Backing::Mthp { size } if !st.thp.mthp.iter().any(|m| m.size_bytes == size) => {
                let have: Vec<String> = st
                    .thp
                    .mthp
                    .iter()
                    .map(|m| Bytes(m.size_bytes).to_string())
                    .collect();
                return Err(UsageError(format!(
                    "this kernel has no mTHP size {} (available: {})",
                    Bytes(size),
                    if have.is_empty() {
                        "none; mTHP needs Linux 6.8+".into()
                    } else {
                        have.join(", ")
                    }
                )));
            }
            Backing::Tmpfs { .. } if !st.is_root => {
                return Err(UsageError(format!(
                    "{b}: hugelab mounts a tmpfs for it, which needs root (sudo)"
                )));
            }
            Backing::Tmpfs { .. } if st.thp.shmem_enabled.is_none() => {
                return Err(UsageError(format!(
                    "{b}: this kernel's tmpfs has no huge pages (no transparent_hugepage/shmem_enabled: CONFIG_TRANSPARENT_HUGEPAGE)"
                )));
            }
            Backing::Hugetlb { page_size }
                if !st.hugetlb.iter().any(|p| p.page_size == page_size) =>
            {
                return Err(UsageError(format!(
                    "this kernel offers no {} hugetlb pages",
                    Bytes(page_size)
                )));
            }
            Backing::Hugetlb { page_size }
                if page_size == 1 << 30 && !st.cpu.pdpe1gb && explicit_backings =>
            {
                return Err(UsageError(
                    "hugetlb-1g: this CPU has no 1 GiB pages (no pdpe1gb flag)".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(backings)
}

/// The region sizes: the defaults that fit in MemAvailable (less a margin) across the
/// backings, or the sizes asked for, each checked against it.
fn plan_sizes(
    a: &BenchArgs,
    st: &Status,
    (workloads, backings): (&[Workload], &[Backing]),
    notes: &mut Vec<String>,
) -> Result<Vec<u64>, UsageError> {
    let tlb = workloads.contains(&Workload::Tlb);
    let available = st.memory.mem_available.unwrap_or(0);
    let margin = MARGIN_MIN.max(available / 10);
    let budget = available.saturating_sub(margin);
    let resident = workloads.iter().any(|w| w.uses_resident_region());
    let mapped = |size: u64| -> u64 {
        let per: Vec<u64> = backings
            .iter()
            .map(|b| size.next_multiple_of(b.page_size()))
            .collect();
        if resident {
            per.iter().sum()
        } else {
            per.into_iter().max().unwrap_or(0)
        }
    };
    let mut sizes: Vec<u64> = Vec::new();
    if a.sizes.is_empty() {
        let defaults = if tlb {
            tlb_sizes()
        } else {
            DEFAULT_SIZES.to_vec()
        };
        for s in defaults {
            if mapped(s) <= budget {
                sizes.push(s);
            } else {
                notes.push(format!(
                    "default size {} skipped: needs {} with {} backings, MemAvailable {} leaves {}",
                    Bytes(s),
                    Bytes(mapped(s)),
                    backings.len(),
                    Bytes(available),
                    Bytes(budget)
                ));
            }
        }
    } else {
        for s in a.sizes.iter().flat_map(|s| s.split(',')) {
            let b: Bytes = s
                .parse()
                .map_err(|e: crate::units::SizeError| UsageError(e.to_string()))?;
            if b.0 < 4096 {
                return Err(UsageError(format!("size {s:?} is below one 4 KiB page")));
            }
            // Checked before any rounding to page multiples, which would wrap near u64::MAX.
            if b.0 > available {
                return Err(UsageError(format!(
                    "size {s} is more than MemAvailable {}; use a smaller size",
                    Bytes(available)
                )));
            }
            if mapped(b.0) > budget {
                return Err(UsageError(format!(
                    "size {s} needs {} of memory across {} backings, but MemAvailable is {} and hugelab leaves {} to the rest of the system; use a smaller size or fewer backings",
                    Bytes(mapped(b.0)),
                    backings.len(),
                    Bytes(available),
                    Bytes(margin)
                )));
            }
            sizes.push(b.0);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return Err(UsageError(format!(
            "no size fits in MemAvailable {} minus a {} margin",
            Bytes(available),
            Bytes(margin)
        )));
    }
    Ok(sizes)
}
