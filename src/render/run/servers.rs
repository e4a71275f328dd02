//! `run --server`: how the service was measured (design, lifetimes, instance spread) and per
//! arm where its server's huge pages were, beside the kernel's own accounting.

use crate::model::run::RunResult;
use std::fmt::Write;

/// `--server`, after the answer: how the service was measured (the design and why, lifetimes,
/// the instance spread) and per arm where its server's huge pages were, beside the kernel's
/// own accounting read at the same moments.
pub(super) fn service_lines(r: &RunResult) -> Vec<String> {
    let Some(sp) = &r.plan.server else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let primary = r.report.primary();
    match sp.design {
        crate::model::run::ServiceDesign::Warm => {
            let lifetimes = primary.map_or(0, |m| m.lifetimes);
            let comps: Vec<String> = primary
                .map(|m| {
                    m.components
                        .iter()
                        .filter_map(|(a, c)| {
                            let c = c.as_ref()?;
                            Some(format!(
                                "{a}/{} between lifetimes {:.1}%, between bursts {:.1}%",
                                r.report.baseline,
                                c.between_sd * 100.0,
                                c.within_sd * 100.0
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(format!(
                "design: warm — every arm's server up at once, one burst per arm per block; {lifetimes} lifetimes are the units of the intervals ({}){}",
                sp.design_reason,
                if comps.is_empty() {
                    String::new()
                } else {
                    format!("; SD of the ratio: {}", comps.join("; "))
                }
            ));
        }
        crate::model::run::ServiceDesign::Restart => {
            out.push(format!("design: restart — {}", sp.design_reason));
        }
    }
    let w = r.servers.iter().map(|s| s.arm.len()).max().unwrap_or(0);
    for s in &r.servers {
        let mut line = format!(
            "server {:w$}  {} huge of {}",
            s.arm,
            s.coverage
                .map_or("-".into(), |c| format!("{:.0}%", c * 100.0)),
            s.resident_bytes
                .map_or("-".into(), |b| crate::units::Bytes(b).to_string()),
        );
        if let Some(c) = &s.carried_by {
            line.push_str(&format!(" — {c}"));
            if s.counted.as_deref() == Some("segment") {
                line.push_str(" (the segment's own pages)");
            }
        }
        if let Some(sd) = s.instance_sd.filter(|_| s.lifetimes >= 3) {
            line.push_str(&format!(
                "; instance SD {:.1}% over {} lifetimes",
                sd * 100.0,
                s.lifetimes
            ));
        }
        if let Some((p, Some(lo), Some(hi))) = s.first_burst {
            line.push_str(&format!(
                "; first burst of a lifetime vs the rest {p:+.1}% [{lo:+.1}, {hi:+.1}]"
            ));
        }
        match &s.policy {
            Some((w, held, n)) => line.push_str(&format!(" — {w} (held in {held} of {n} trials)")),
            None if s.thp_disabled => line.push_str(" — THP disabled by the server for itself"),
            None => {}
        }
        out.push(line);
    }
    // The kernel's machine-wide accounting at the same moments, once: every arm's server runs
    // at once under the warm design, so it is the sum of theirs (and anything else's).
    let most = |f: &dyn Fn(&crate::analyze::server::ServerSummary) -> Option<u64>| {
        r.servers.iter().filter_map(f).max().filter(|b| *b > 0)
    };
    let kernel: Vec<String> = [
        most(&|s| s.kernel_hugetlb)
            .map(|b| format!("hugetlb pool in use {}", crate::units::Bytes(b))),
        most(&|s| s.kernel_shmem_huge)
            .map(|b| format!("ShmemHugePages {}", crate::units::Bytes(b))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !kernel.is_empty() {
        out.push(format!(
            "kernel, machine-wide, read with the servers (medians): {}",
            kernel.join(", ")
        ));
    }
    out
}

/// `--server`: per arm, the server's lifecycle next to its load, and its memory after the load.
pub(super) fn render_servers(r: &RunResult) -> String {
    let mut o = String::from(
        "server per trial (medians; ready: spawn → ready, stop: SIGTERM → exit; memory of its process tree after the load):\n",
    );
    let w = r.servers.iter().map(|s| s.arm.len()).max().unwrap_or(0);
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{s:.2} s"));
    for s in &r.servers {
        let mut line = format!(
            "  {:w$}  ready {} · load {} · stop {} · server CPU {}/trial · {} resident, {} huge",
            s.arm,
            secs(s.ready_s),
            secs(s.load_s),
            secs(s.stop_s),
            secs(s.cpu_s),
            s.resident_bytes
                .map_or("-".to_string(), |b| crate::units::Bytes(b).to_string()),
            s.coverage
                .map_or("-".to_string(), |c| format!("{:.0}%", c * 100.0)),
        );
        if let Some(c) = &s.carried_by {
            line.push_str(&format!(" — {c}"));
        }
        match &s.policy {
            Some((w, held, n)) => line.push_str(&format!(" — {w} (held in {held} of {n} trials)")),
            None if s.thp_disabled => line.push_str(" — THP disabled by the server for itself"),
            None => {}
        }
        if s.failed > 0 {
            line.push_str(&format!(" — {} server failures", s.failed));
        }
        let _ = writeln!(o, "{line}");
        if let Some(said) = &s.said {
            let short: String = said.chars().take(160).collect();
            let more = if short.len() < said.len() { "…" } else { "" };
            let _ = writeln!(o, "  {:w$}  it said: {short}{more}", "");
        }
    }
    o
}
