//! `inspect --hot` on a terminal: each process's hot memory, the TLB entries it needs, and
//! that against the reach `bench tlb` measured.

use super::{level_of, range, reach_sureness, span, times};
use crate::model::inspect::HotSet;
use crate::render::summary::{thousands, wrap_hanging};
use crate::units::Bytes;
use std::fmt::Write;

/// A hot set's first lines: the hot bytes and the entries they need at each page size — "at
/// most" where they are on THP, whose referenced bit covers a huge page's whole 2 MiB.
fn hot_head(h: &HotSet, share: f64) -> Vec<String> {
    let e = &h.entries;
    // On THP the kernel marks a huge page's whole 2 MiB referenced when any of it is
    // touched: the hot bytes there, and the 4 KiB entries from them, are at most that.
    let on_thp: u64 = h
        .mappings
        .iter()
        .filter(|m| m.hot > 0)
        .map(|m| m.on_thp.min(m.hot))
        .sum();
    let at_most = if on_thp > 0 { "at most " } else { "" };
    let mut lines = vec![format!(
        "pid {} ({}), hot over {:.0}s: {at_most}{} of {} resident ({share:.0}%) = {at_most}{} entries at 4 KiB · {} at 2 MiB · {} at 1 GiB · {} on the pages it has now",
        h.pid,
        h.name,
        h.window_s,
        Bytes(h.hot),
        Bytes(h.resident),
        thousands(e.at_4k as usize),
        range(e.at_2m),
        range(e.at_1g),
        thousands(e.now as usize)
    )];
    if on_thp > 0 {
        lines.push(format!(
            "{} of it is on THP, where the kernel marks a huge page's whole 2 MiB referenced when any byte of it is touched: the 4 KiB count is an upper bound (a sparse heap touches far fewer pages)",
            Bytes(on_thp)
        ));
    }
    lines
}

/// `inspect --hot`: each process's hot memory, the entries it needs, and that against the
/// measured reach (and CPUID's 2 MiB entries, labelled as declared, not measured).
pub fn hot_text(sets: &[HotSet], ctx: &crate::model::inspect::HotContext) -> String {
    let mut o = String::new();
    let reach = ctx.measured.as_ref();
    let l2m = reach
        .map_or(&ctx.geometry, |m| &m.reach.geometry)
        .data_entries(2, 2 << 20)
        .or_else(|| {
            reach
                .map_or(&ctx.geometry, |m| &m.reach.geometry)
                .data_entries(1, 2 << 20)
        });
    for h in sets {
        let share = h.hot as f64 * 100.0 / h.resident.max(1) as f64;
        let e = &h.entries;
        let mut lines = hot_head(h, share);
        let placed = reach.zip(h.need.as_ref());
        match placed.and_then(|(m, n)| m.reach.entries_4k().map(|k| (m, n, k))) {
            Some((m, need, (lo, hi))) => {
                let mut l = format!(
                    "against the reach bench tlb measured here (run {}): {} entries at 4 KiB is {} ({}–{} entries{}{})",
                    m.run,
                    thousands(e.at_4k as usize),
                    times(need),
                    thousands(lo as usize),
                    thousands(hi as usize),
                    reach_sureness(m),
                    level_of(need)
                );
                if e.at_4k > hi {
                    l += ": most accesses that leave the data caches also walk the page tables";
                }
                if let Some(n) = l2m {
                    l += &format!(
                        "; on 2 MiB pages {} entries against the {} CPUID declares for them ({}; declared, not measured)",
                        range(e.at_2m),
                        thousands(n as usize),
                        if e.at_2m.1 <= n as u64 {
                            "within"
                        } else if e.at_2m.0 > n as u64 {
                            "beyond"
                        } else {
                            "perhaps beyond"
                        }
                    );
                }
                lines.push(l);
            }
            None => lines.push(no_reach_words(e.at_4k, reach, &ctx.db)),
        }
        let top: Vec<String> = h
            .mappings
            .iter()
            .filter(|m| m.hot > 0)
            .take(4)
            .map(|m| {
                let name = if m.path.is_empty() {
                    m.kind.name().to_string()
                } else {
                    m.path.rsplit('/').next().unwrap_or(&m.path).to_string()
                };
                format!(
                    "{name} {} of {}{}",
                    Bytes(m.hot),
                    Bytes(m.resident),
                    if m.on_thp > 0 {
                        format!(" ({} on THP)", Bytes(m.on_thp))
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        if !top.is_empty() {
            lines.push(format!("hottest: {}", top.join(" · ")));
        }
        if h.hugetlb_untracked > 0 {
            lines.push(format!(
                "{} on hugetlb is not tracked by referenced bits (not in the hot bytes)",
                Bytes(h.hugetlb_untracked)
            ));
        }
        for (i, l) in lines.iter().enumerate() {
            let (lead, hang) = if i == 0 { ("", 2) } else { ("  ", 4) };
            for w in wrap_hanging(&format!("{lead}{l}"), hang) {
                let _ = writeln!(o, "{w}");
            }
        }
    }
    for e in &ctx.errors {
        for w in wrap_hanging(&format!("hot: {e}"), 2) {
            let _ = writeln!(o, "{w}");
        }
    }
    for w in wrap_hanging(
        "hot = referenced in the window (/proc/PID/clear_refs, then smaps Referenced; THP counts whole 2 MiB pages); clearing the bits makes pages look idle to reclaim until touched again",
        2,
    ) {
        let _ = writeln!(o, "{w}");
    }
    o.push('\n');
    o
}

/// Without a measured upper end to hold the entries against: why, in the reach's own words,
/// or where to measure one.
fn no_reach_words(at_4k: u64, reach: Option<&crate::model::tlb::Measured>, db: &str) -> String {
    let Some(m) = reach else {
        return format!(
            "no TLB reach measured on this machine in {db}: `hugelab bench tlb` measures it (then this line compares; --db names another database)"
        );
    };
    let why = m
        .reach
        .headline()
        .map_or("no huge backing was swept".into(), |s| {
            let top = s.points.last().map_or(0, |p| p.pages);
            match &s.located {
                Some(l) if !l.resolved => format!(
                    "not resolved beyond {} pages at that run's noise",
                    thousands(l.between.0 as usize)
                ),
                _ => format!(
                    "not exceeded up to {} pages, {}",
                    thousands(top as usize),
                    span(top)
                ),
            }
        });
    format!(
        "{} entries at 4 KiB; the reach bench tlb measured here (run {}) has no upper end to hold them against ({why})",
        thousands(at_4k as usize),
        m.run
    )
}
