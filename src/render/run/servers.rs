//! `run --server`: how the service was measured (design, lifetimes, instance spread) and per
//! arm where its server's huge pages were, beside the kernel's own accounting.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::run::{RANGE_LEVEL, ServerPlan, ServerSummary};
use crate::model::verdict::fmt_level;
use std::fmt::Write;

/// Per arm where its server's huge pages were (and what carried them), its instance spread and
/// first-burst effect, then the kernel's machine-wide accounting read at the same moments.
pub(super) fn server_lines(servers: &[ServerSummary]) -> Vec<String> {
    let mut out = Vec::new();
    let w = servers.iter().map(|s| s.arm.len()).max().unwrap_or(0);
    for s in servers {
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
        match s.instance_sd.filter(|_| s.lifetimes >= 3) {
            // The method of moments truncates at 0: what is left after the shared part and
            // the burst noise was not positive, which is not the same as no spread.
            Some(sd) if sd <= 0.0 => line.push_str(&format!(
                "; instance SD not told apart from the burst noise over {} lifetimes",
                s.lifetimes
            )),
            Some(sd) => line.push_str(&format!(
                "; instance SD {:.1}% over {} lifetimes",
                sd * 100.0,
                s.lifetimes
            )),
            None if s.lifetimes > 0 => line.push_str(&format!(
                "; instance SD not estimated ({} lifetimes; it takes 3)",
                s.lifetimes
            )),
            None => {}
        }
        if let Some((p, Some(lo), Some(hi))) = s.first_burst {
            line.push_str(&format!(
                "; first burst of a lifetime vs the rest {p:+.1}% {}",
                crate::units::fmt_interval(lo, hi, 1)
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
    let kernel = crate::render::service_answer::kernel_counts(servers);
    if !kernel.is_empty() {
        out.push(format!(
            "kernel, machine-wide, read with the servers (medians): {}",
            kernel.join(", ")
        ));
    }
    out
}

/// How the service was measured: the design and why (warm: the schedule, the lifetimes, the
/// spread between them and the forecast beside the precision reached; restart) and the
/// lifetimes' warm-up — from the plan and the analysis alone, so a stored run says it too.
pub(super) fn design_lines(
    sp: &ServerPlan,
    report: &ExperimentAnalysis,
    arms: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    match sp.design {
        crate::model::run::ServiceDesign::Warm => {
            out.push(warm_line(report, sp));
            out.extend(precision_line(report, sp));
        }
        crate::model::run::ServiceDesign::Restart => {
            out.push(format!("design: restart — {}", sp.design_reason));
        }
    }
    out.extend(report.warmup.as_ref().map(|w| warmup_line(w, arms)));
    out
}

/// `--server`: per arm, the server's lifecycle next to its load, and its memory after the load.
pub(super) fn render_servers(servers: &[ServerSummary]) -> String {
    let mut o = String::from(
        "server per trial (medians; ready: spawn → ready, stop: SIGTERM → exit; memory of its process tree after the load):\n",
    );
    let w = servers.iter().map(|s| s.arm.len()).max().unwrap_or(0);
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{s:.2} s"));
    for s in servers {
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

/// The lifetime sizing's forecasts of the primary contrast's half-width beside the half-width
/// each arm's contrast reached, so that every run checks its own forecast (a PostgreSQL A/A on
/// the development VM): `precision (tps): reached b ±1.0%; forecast ±5.4% after the pilot (3
/// lifetimes, 6 blocks; ±3.3–16.4% as 3 degrees of freedom allow a normal spread, 90%), ±1.0%
/// at the last sizing (66 lifetimes, 132 blocks; × 0.67 for the signed-rank interval)`. The
/// half-way forecast (the out-of-sample one) carries the range its lifetimes resampled allow.
fn precision_line(report: &ExperimentAnalysis, sp: &ServerPlan) -> Option<String> {
    let f = sp.warm.as_ref()?.forecast;
    let m = report.primary()?;
    let forecasts: Vec<String> = match (f.pilot, f.half, f.last) {
        (Some(p), _, Some(l)) if p == l => {
            vec![forecast_said("after the pilot, the only sizing", p)]
        }
        (p, h, l) => [
            p.map(|p| forecast_said("after the pilot", p)),
            h.filter(|h| Some(*h) != p && Some(*h) != l).map(|h| {
                forecast_said("at half-way (out of sample: from the first half alone)", h)
            }),
            h.filter(|h| Some(*h) == l && Some(*h) != p)
                .map(|h| forecast_said("at half-way, also the last sizing", h)),
            l.filter(|l| Some(*l) != h)
                .map(|l| forecast_said("at the last sizing", l)),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    if forecasts.is_empty() {
        return None;
    }
    let reached: Vec<String> = m
        .contrasts
        .iter()
        .filter_map(|(arm, c)| Some(format!("{arm} ±{:.1}%", c.as_ref()?.half_width_percent?)))
        .collect();
    Some(format!(
        "precision ({}): reached {}; forecast {}",
        m.metric.name,
        match reached.is_empty() {
            true => "no interval".to_string(),
            false => reached.join(", "),
        },
        forecasts.join(", ")
    ))
}

/// One forecast of the precision line: its half-width, when it was made, what it rests on and
/// the ranges it carries.
fn forecast_said(what: &str, f: crate::model::run::Forecast) -> String {
    format!(
        "±{:.1}% {what} ({} lifetimes, {} blocks{})",
        f.half_width * 100.0,
        f.lifetimes,
        f.blocks,
        f.range.map_or(String::new(), |(lo, hi)| format!(
            "; ±{:.1}–{:.1}% as {} degrees of freedom allow a normal spread, {}",
            lo * 100.0,
            hi * 100.0,
            f.df,
            fmt_level(RANGE_LEVEL)
        )) + &f.resampled.map_or(String::new(), |(lo, hi)| format!(
            "; ±{:.1}–{:.1}% if the lifetimes to come are like these ({}: {} rests resampled from them)",
            lo * 100.0,
            hi * 100.0,
            fmt_level(RANGE_LEVEL),
            crate::model::run::RESAMPLES
        )) + &f.rank_ratio.map_or(String::new(), |r| format!(
            "; × {r:.2} for the signed-rank interval"
        )) + if f.sequence {
            "; of the confidence sequence, as printed"
        } else {
            ""
        }
    )
}

/// The lifetimes' warm-up as detected: what was not measured and why, or that none was found.
fn warmup_line(w: &crate::model::analysis::Warmup, arms: &[String]) -> String {
    let tests = format!(
        "each at {}, Bonferroni over {} arms × {} positions",
        crate::model::verdict::fmt_level(w.confidence),
        arms.len(),
        crate::model::analysis::POSITIONS
    );
    let counts = format!(
        "blocks: {} measured, {} kept, {} dropped as warm-up",
        w.blocks,
        w.blocks.saturating_sub(w.blocks_dropped),
        w.blocks_dropped
    );
    if w.bursts == 0 {
        return format!(
            "warm-up: none found — no leading burst of a lifetime was shifted the same way for every arm, at this run's power ({tests}); every burst measured; {counts}"
        );
    }
    let shifted: Vec<String> = w
        .shifts
        .iter()
        .take(w.bursts)
        .enumerate()
        .flat_map(|(k, per_arm)| {
            per_arm.iter().enumerate().filter_map(move |(a, s)| {
                let [p, lo, hi] = (*s)?;
                (lo > 0.0 || hi < 0.0).then(|| {
                    format!(
                        "{} burst {} {p:+.1}% {}",
                        arms[a],
                        k + 1,
                        crate::units::fmt_interval(lo, hi, 1)
                    )
                })
            })
        })
        .collect();
    let mut line = if w.blocks_dropped == 0 {
        format!(
            "warm-up detected for every arm alike: the first {} burst{} of a lifetime — {} against the lifetime's later bursts ({tests}); every block kept, since dropping them would leave a lifetime fewer than two blocks (a shift every arm shares cancels in the paired ratio)",
            w.bursts,
            if w.bursts == 1 { "" } else { "s" },
            shifted.join(", ")
        )
    } else {
        format!(
            "warm-up detected for every arm alike: the first {} burst{} of every lifetime long enough to spare {} ({} blocks) not measured — {} against the lifetime's later bursts ({tests})",
            w.bursts,
            if w.bursts == 1 { "" } else { "s" },
            if w.bursts == 1 { "it" } else { "them" },
            w.blocks_dropped,
            shifted.join(", ")
        )
    };
    if w.unsettled {
        line.push_str(&format!(
            "; still shifting at burst {}: the servers may not have settled within a lifetime (--server-warmup, or longer lifetimes with --lifetime-blocks)",
            w.bursts
        ));
    }
    line.push_str(&format!("; {counts}"));
    line
}

/// The warm design's line: the schedule that ran and why, the lifetimes, the spread of the
/// ratio between lifetimes and between bursts.
fn warm_line(report: &ExperimentAnalysis, sp: &ServerPlan) -> String {
    let primary = report.primary();
    let lifetimes = primary.map_or(0, |m| m.lifetimes);
    let comps: Vec<String> = primary
        .map(|m| {
            m.components
                .iter()
                .filter_map(|(a, c)| {
                    let c = c.as_ref()?;
                    let between = if c.between_sd > 0.0 {
                        format!("{:.1}%", c.between_sd * 100.0)
                    } else {
                        "none beyond the bursts'".into()
                    };
                    let shared = match c.shared_sd {
                        Some(s) if s > 0.0 => {
                            format!(", shared by a restart's replicas {:.1}%", s * 100.0)
                        }
                        Some(_) => ", shared by a restart's replicas none".into(),
                        None => String::new(),
                    };
                    Some(format!(
                        "{a}/{} between lifetimes {between}{shared}, between bursts {:.1}%",
                        report.baseline,
                        c.within_sd * 100.0
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let schedule = match sp.warm.as_ref() {
        Some(w) if w.schedule == crate::model::run::BurstSchedule::Duet => format!(
            "every arm's burst of a block at the same moment (duet: {})",
            w.schedule_reason
        ),
        Some(w) => format!(
            "one arm's burst after another in random order (alternating: {})",
            w.schedule_reason
        ),
        None => "one burst per arm per block".into(),
    };
    let replicas = sp.warm.as_ref().and_then(|w| w.replicas).filter(|n| *n > 1);
    let units = match (replicas, lifetimes) {
        // Replicas restarted together share what the restart did: the restart is the unit.
        (Some(_), 1) => "restart (its replicas' lifetimes together) is".into(),
        (Some(_), _) => "restarts (each its replicas' lifetimes together) are".into(),
        (None, 1) => "lifetime is".to_string(),
        (None, _) => "lifetimes are".to_string(),
    };
    let lengths = sp.warm.as_ref().map(lengths_clause).unwrap_or_default();
    format!(
        "design: warm — every arm's server up at once{}, {schedule}{lengths}; {lifetimes} {units} the units of the intervals ({}){}",
        replicas.map_or(String::new(), |n| format!(
            " in {n} replicas (each its own servers and lifetimes, restarted together)"
        )),
        sp.design_reason,
        if comps.is_empty() {
            String::new()
        } else {
            format!("; SD of the ratio: {}", comps.join("; "))
        }
    )
}

/// The burst length and the lifetime length that ran, and why: given, from the load's fixed
/// cost, or from the noise the pilot measured at two lengths; the blocks per lifetime given
/// or sized (the last sizing's).
fn lengths_clause(w: &crate::model::run::WarmPlan) -> String {
    let pct = |x: f64| x * 100.0;
    let burst = match (&w.burst, &w.burst_choice) {
        (Some(b), _) => format!("; bursts of {} s (--burst)", b.as_secs()),
        (None, Some(c)) => match &c.pilot {
            Some(p) => format!(
                "; bursts of {} s ({} from the noise the pilot measured at {} s and {} s: {:.1}% of the spread between bursts does not average within a burst, {:.1}% at 1 s does; forecast ±{:.1}% against ±{:.1}% with {} s)",
                c.secs,
                if c.secs == c.by_fixed_cost {
                    "kept"
                } else {
                    "chosen"
                },
                p.lengths[0].secs,
                p.lengths[1].secs,
                pct(p.floor_sd),
                pct(p.averaging_sd),
                pct(p.chosen.0),
                pct(p.against.1),
                p.against.0
            ),
            None => format!(
                "; bursts of {} s (the shortest whose fixed cost, {:.0} ms, is under 5% of it{})",
                c.secs,
                c.fixed_s * 1e3,
                c.one_length
                    .as_ref()
                    .map_or(String::new(), |why| format!("; one length: {why}"))
            ),
        },
        (None, None) => String::new(),
    };
    let lifetimes = match (w.lifetime_blocks, w.forecast.last) {
        (Some(n), _) => format!(", lifetimes of {n} blocks (--lifetime-blocks)"),
        (None, Some(f)) => format!(
            ", lifetimes of {} blocks (sized from the run's spread, Kalibera–Jones)",
            f.per_lifetime
        ),
        (None, None) => String::new(),
    };
    format!("{burst}{lifetimes}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::Forecast;

    #[test]
    fn a_forecast_says_each_range_it_carries_and_what_it_is_of() {
        let f = Forecast {
            lifetimes: 31,
            blocks: 64,
            per_lifetime: 2,
            half_width: 0.0123,
            range: None,
            df: 48,
            rank_ratio: Some(0.86),
            sequence: false,
            resampled: Some((0.0109, 0.0161)),
        };
        assert_eq!(
            forecast_said("at half-way", f),
            "±1.2% at half-way (31 lifetimes, 64 blocks; ±1.1–1.6% if the lifetimes to come are like these (90%: 400 rests resampled from them); × 0.86 for the signed-rank interval)"
        );
        let pilot = Forecast {
            lifetimes: 3,
            blocks: 6,
            range: Some((0.02, 0.091)),
            df: 3,
            rank_ratio: None,
            sequence: true,
            resampled: None,
            ..f
        };
        assert_eq!(
            forecast_said("after the pilot", pilot),
            "±1.2% after the pilot (3 lifetimes, 6 blocks; ±2.0–9.1% as 3 degrees of freedom allow a normal spread, 90%; of the confidence sequence, as printed)"
        );
    }
}
