//! `hugelab trace` on a terminal: per kind a log2 histogram like SystemTap's `@hist_log`, then
//! the breakdowns by order, outcome and process; counted events by key.

use crate::model::trace::{Count, HistSummary, Latency, ProcessRow, TraceResult, TraceWindow};
use std::fmt::Write;

/// A duration in ns, short: `840 ns`, `12.3 µs`, `4.56 ms`, `1.20 s`.
pub fn ns(v: u64) -> String {
    let f = v as f64;
    if v < 1_000 {
        format!("{v} ns")
    } else if v < 1_000_000 {
        format!("{:.3} µs", f / 1e3)
    } else if v < 1_000_000_000 {
        format!("{:.3} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

fn short(v: u64) -> String {
    ns(v).replace(".000", "")
}

fn histogram(o: &mut String, h: &HistSummary) {
    let peak = h.log2.iter().map(|r| r.1).max().unwrap_or(1).max(1);
    let _ = writeln!(o, "  {:>10} |{:-<50} count", "value", "");
    for (lo, n) in &h.log2 {
        let bar = ((*n as f64 / peak as f64) * 50.0).ceil() as usize;
        let _ = writeln!(o, "  {:>10} |{:<50} {n}", short(*lo), "@".repeat(bar));
    }
}

fn processes(rows: &[ProcessRow], timed: bool) -> String {
    rows.iter()
        .map(|p| {
            if timed {
                format!("{}[{}] {} · {}", p.comm, p.pid, p.count, ns(p.total_ns))
            } else {
                format!("{}[{}] {}", p.comm, p.pid, p.count)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn latency(o: &mut String, l: &Latency) {
    let h = &l.hist;
    if h.count == 0 {
        let _ = writeln!(o, "{}: none", l.kind);
        return;
    }
    let _ = writeln!(
        o,
        "{}: {} in {} {} · p50 ≤ {} · p99 ≤ {} · max {}",
        l.kind,
        ns(h.total_ns),
        h.count,
        // One direct compaction stall can compact several zones: each is timed on its own.
        if l.kind.ends_with("compaction") {
            "zone compactions"
        } else {
            "stalls"
        },
        ns(h.p50_ns),
        ns(h.p99_ns),
        ns(h.max_ns)
    );
    let _ = writeln!(o, "  ({})", l.how);
    histogram(o, h);
    if !l.by_order.is_empty() {
        let parts: Vec<String> = l
            .by_order
            .iter()
            .map(|(k, (n, t))| format!("{k}: {n} · {}", ns(*t)))
            .collect();
        let _ = writeln!(o, "  by order: {}", parts.join(", "));
    }
    if !l.outcomes.is_empty() {
        let parts: Vec<String> = l.outcomes.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "  outcomes: {}", parts.join(", "));
    }
    let _ = writeln!(o, "  by process: {}", processes(&l.by_process, true));
}

fn count(o: &mut String, c: &Count) {
    if c.total == 0 {
        let _ = writeln!(o, "{}: none", c.kind);
        return;
    }
    let _ = writeln!(o, "{}: {} ({})", c.kind, c.total, c.event);
    if c.by_key.len() > 1 || c.key != "all" {
        let parts: Vec<String> = c.by_key.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let _ = writeln!(o, "  by {}: {}", c.key, parts.join(", "));
    }
    let _ = writeln!(o, "  by process: {}", processes(&c.by_process, false));
}

pub fn window(w: &TraceWindow) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "── {:.1}–{:.1} s ──", w.start_s, w.start_s + w.seconds);
    for l in &w.latencies {
        latency(&mut o, l);
    }
    for c in &w.counts {
        count(&mut o, c);
    }
    if w.unpaired > 0 || w.open_at_end > 0 {
        let _ = writeln!(
            o,
            "unpaired: {} ends whose begin came before the window, {} begins still open",
            w.unpaired, w.open_at_end
        );
    }
    if w.latencies.iter().any(|l| l.kind == "direct compaction") {
        let _ = writeln!(
            o,
            "direct compaction stalls (try_to_compact_pages calls that compacted a zone or found one deferred): {}",
            w.direct_compaction_stalls
        );
    }
    if !w.kernel.is_empty() {
        let rows: Vec<String> = w
            .kernel
            .iter()
            .map(|k| {
                format!(
                    "{} +{} vs {} traced {}",
                    k.counter,
                    k.vmstat_delta,
                    k.traced,
                    if k.equal { "(equal)" } else { "(DIFFERENT)" }
                )
            })
            .collect();
        let _ = writeln!(o, "/proc/vmstat over the same window: {}", rows.join(" · "));
    }
    super::summary::wrap_lines(&o)
}

/// The header: scope, events, what is missing.
pub fn header(r: &TraceResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "hugelab trace · {} · kernel {}",
        r.scope,
        r.kernel.as_deref().unwrap_or("?")
    );
    for m in &r.missing {
        let _ = writeln!(o, "missing: {} — {}", m.event, m.reason);
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    super::summary::wrap_lines(&o)
}

/// The closing lines: lost events and hugelab's own cost.
pub fn footer(r: &TraceResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "ended: {}", r.ended);
    let _ = writeln!(
        o,
        "{} events from {} tracepoints · lost {} · hugelab CPU {:.3} s",
        r.windows
            .iter()
            .flat_map(|w| w.events_seen.values())
            .sum::<u64>(),
        r.events.len(),
        r.lost,
        r.self_cpu_s
    );
    if r.lost > 0 {
        let _ = writeln!(
            o,
            "warning: the kernel dropped {} records (ring buffers full): counts are lower bounds",
            r.lost
        );
    }
    super::summary::wrap_lines(&o)
}

pub fn render(r: &TraceResult) -> String {
    let mut o = header(r);
    for w in &r.windows {
        o.push_str(&window(w));
    }
    o.push_str(&footer(r));
    o
}
