//! `hugelab run` for people: per arm summaries, contrasts with verdicts, evidence, warnings.

use super::summary;
use super::summary::thousands;
use super::{Grid, table};
use crate::model::analysis::ExperimentAnalysis;
use crate::model::analysis::MetricAnalysis;
use crate::model::record::RunRecord;
use crate::model::run::RunResult;
use crate::model::verdict::Contrast;
use crate::model::verdict::Design;
use crate::model::verdict::Verdict;
use crate::model::verdict::fmt_level;
use crate::model::vm::VmAdvice;
use crate::units::{Bytes, Unit};
use std::fmt::Write;

mod machine;
mod servers;
use machine::{render_calibration, render_noise};
use servers::{render_servers, service_lines};

/// The tables of an analysed experiment: one per metric (summaries, contrasts, verdicts) and
/// the backing evidence per arm.
pub fn report_grids(r: &ExperimentAnalysis) -> Vec<Grid> {
    let mut grids: Vec<Grid> = r.metrics.iter().map(|m| metric_grid(r, m)).collect();
    grids.push(evidence_grid(r));
    grids
}

/// One metric: per arm n, median, mean ± sd, p95, outliers, the contrast and its verdict.
pub fn metric_grid(r: &ExperimentAnalysis, m: &MetricAnalysis) -> Grid {
    let better = match m.metric.better {
        crate::model::verdict::Better::Lower => "lower is better",
        crate::model::verdict::Better::Higher => "higher is better",
    };
    let unit = match r.design == Design::Unpaired {
        true => "runs per arm",
        false => "complete blocks",
    };
    // A context metric (a timed load's wall time) is recorded beside the others, never compared.
    let title = match m.metric.context {
        true => format!("{} (context: recorded, not compared)", m.metric.name),
        false => format!(
            "{} ({better}; {} {unit}; {}; δ = {}%)",
            m.metric.name,
            m.complete_blocks,
            r.design.describe(m.contrasts.len(), r.confidence),
            r.effect * 100.0
        ),
    };
    let mut g = Grid::new(
        title,
        &[
            "arm",
            "n",
            "median",
            "mean ± sd",
            "p95",
            "vs baseline",
            "verdict",
        ],
    );
    // One scale and precision for the whole column: the baseline's median and spread.
    let baseline = m.arms.iter().find_map(|a| a.summary.as_ref());
    let reference = baseline.map_or(0.0, |s| s.median);
    let spread = baseline.map_or(0.0, |s| s.sd);
    let shown = Unit::of_metric(&m.metric.name).fmt_for(reference, spread);
    for a in &m.arms {
        let Some(s) = &a.summary else {
            g.rows.push(vec![
                a.arm.clone(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                String::new(),
                String::new(),
            ]);
            continue;
        };
        let (vs, verdict) = match m.contrasts.iter().find(|(n, _)| *n == a.arm) {
            None if m.metric.context => ("-".to_string(), String::new()),
            None => ("baseline".to_string(), String::new()),
            Some((_, None)) => (
                "too few complete blocks".to_string(),
                "INCONCLUSIVE".to_string(),
            ),
            Some((_, Some(c))) => (contrast_cell(r, c), verdict_cell(c)),
        };
        g.rows.push(vec![
            a.arm.clone(),
            s.n.to_string(),
            shown.show(s.median),
            shown.plus_minus(s.mean, s.sd),
            shown.show(s.p95),
            vs,
            verdict,
        ]);
    }
    for (arm, c) in &m.contrasts {
        if let Some(c) = c {
            if let (Some(mde), Some(more)) = (c.min_detectable_percent, c.more_blocks) {
                let unit = if r.design == Design::Unpaired {
                    "runs per arm"
                } else {
                    "blocks"
                };
                g.notes.push(format!(
                    "  {arm}: the interval's half-width is ±{mde:.2}%; about {more} more {unit} would resolve δ = {}% with 80% probability (at the spread seen so far)",
                    r.effect * 100.0
                ));
            }
            if let Some(b) = &c.mean_ratio_percent
                && let (Some(lo), Some(hi)) = (b.lo, b.hi)
            {
                g.notes.push(format!(
                    "  {arm}: mean ratio {:+.2}% [{lo:+.2}, {hi:+.2}] ({} BCa bootstrap)",
                    b.point,
                    fmt_level(c.level)
                ));
            } else if c.percent.lo.is_some() && c.blocks < crate::model::verdict::BOOTSTRAP_MIN_N {
                g.notes.push(format!(
                    "  {arm}: mean ratio - (a BCa bootstrap interval needs {} units; {} here)",
                    crate::model::verdict::BOOTSTRAP_MIN_N,
                    c.blocks
                ));
            }
            for w in &c.warnings {
                g.notes.push(format!("  {arm}: warning: {w}"));
            }
        }
    }
    for a in &m.arms {
        if let Some(s) = a.summary.as_ref().filter(|s| s.outliers > 0) {
            g.notes.push(format!(
                "  {}: {} outliers (robust z above 5; kept in every estimate)",
                a.arm, s.outliers
            ));
        }
        for w in &a.diagnostics.warnings {
            g.notes.push(format!("  {}: {w}", a.arm));
        }
    }
    g
}

/// "+1.23% [+0.50, +2.00]", with "@99.61%" when the interval's level is not the family's.
pub fn contrast_cell(r: &ExperimentAnalysis, c: &Contrast) -> String {
    let at = if c.percent.lo.is_some() {
        summary::level_mark(r, c)
    } else {
        String::new()
    };
    summary::percent_interval(&c.percent) + &at
}

pub fn verdict_cell(c: &Contrast) -> String {
    match c.verdict {
        Verdict::Faster => format!("FASTER{}", if c.clears_effect { "" } else { " (< δ)" }),
        Verdict::Slower => format!("SLOWER{}", if c.clears_effect { "" } else { " (< δ)" }),
        Verdict::Equivalent => "EQUIVALENT".into(),
        Verdict::Inconclusive => "INCONCLUSIVE".into(),
    }
}

/// Per arm: trials, failures, flags, huge coverage at peak, faults and dTLB misses.
pub fn evidence_grid(r: &ExperimentAnalysis) -> Grid {
    let mut g = Grid::new(
        "backing evidence (run: the child's process group sampled on the same schedule for every arm, or with --server the server's process tree after each load; bench: the verified region)",
        &[
            "arm",
            "trials",
            "failed",
            "flagged",
            "huge coverage at peak RSS",
            "page faults",
            "dTLB misses",
        ],
    );
    for e in &r.evidence {
        let count = |k: &str| {
            e.mean_counters
                .get(k)
                .map_or("-".into(), |v| format!("{v:.0}"))
        };
        g.rows.push(vec![
            e.arm.clone(),
            e.trials.to_string(),
            e.failed.to_string(),
            e.flagged.to_string(),
            e.mean_coverage_at_peak
                .map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
            count("page_faults"),
            count("dtlb_load_misses"),
        ]);
    }
    for e in &r.evidence {
        if let Some(f) = &e.first_flag {
            g.notes.push(format!("  FLAGGED {}: {f}", e.arm));
        }
    }
    g
}

/// "why (measured): dTLB load misses per trial: …" from the arms' perf counts, where a PMU
/// counted them (with the page walks' share of cycles where the CPU has that event).
fn measured_why(evidence: &[crate::model::analysis::ArmEvidence]) -> Option<String> {
    let misses: Vec<String> = evidence
        .iter()
        .filter_map(|e| {
            let m = e.mean_counters.get("dtlb_load_misses")?;
            let walk = e
                .mean_counters
                .get("dtlb_walk_cycles")
                .zip(e.mean_counters.get("cycles"))
                .filter(|(_, c)| **c > 0.0)
                .map_or(String::new(), |(w, c)| {
                    format!(", page walks {:.1}% of cycles", w / c * 100.0)
                });
            Some(format!("{} {}{walk}", e.arm, thousands(*m as usize)))
        })
        .collect();
    (!misses.is_empty()).then(|| {
        format!(
            "why (measured): dTLB load misses per trial: {}",
            misses.join(" · ")
        )
    })
}

/// The answer a run printed first, from its record: a service's brief answer; a command's
/// answer lines, the run line and the pools it set.
pub fn answer_lines(record: &RunRecord) -> Vec<String> {
    if record.service {
        return super::service_answer::lines(record);
    }
    summary::answer(&record.report)
        .into_iter()
        .chain(summary::run_line(&record.report, &record.facts))
        .chain(
            super::costs::pool_lines(&record.pools)
                .iter()
                .flat_map(|l| summary::wrap_hanging(l, 2)),
        )
        .collect()
}

/// A stored run (`results show`): how it was decided when a reader asked for another
/// decision, the answer lines as the run printed them, the service's design, the notes the
/// run printed, then every table.
pub fn render_stored(
    record: &RunRecord,
    reanalysed: Option<&str>,
    said: &crate::model::report::Said,
) -> String {
    let mut o: String = reanalysed
        .map(|n| format!("note: {n}"))
        .into_iter()
        .flat_map(|l| summary::wrap_hanging(&l, 2))
        .chain(answer_lines(record))
        .map(|l| l + "\n")
        .collect();
    o.extend(
        stored_details(&record.report, said)
            .into_iter()
            .map(|l| l + "\n"),
    );
    o.push('\n');
    o + &render_report(&record.report)
}

/// What a stored run said beside its tables, wrapped: its service's design (and the forecast
/// beside the precision reached), each arm's server, and the notes the run printed.
pub fn stored_details(r: &ExperimentAnalysis, said: &crate::model::report::Said) -> Vec<String> {
    let design = said
        .server
        .as_ref()
        .map_or(Vec::new(), |sp| servers::design_lines(sp, r, &said.arms));
    let notes = said.notes.iter().map(|n| format!("note: {n}"));
    let servers = servers::server_lines(&said.servers);
    design
        .into_iter()
        .chain(servers)
        .chain(notes)
        .flat_map(|l| summary::wrap_hanging(&l, 2))
        .collect()
}

pub fn render_report(r: &ExperimentAnalysis) -> String {
    report_grids(r).iter().map(Grid::terminal).collect()
}

/// The host configuration for the backing a run measured best.
pub fn render_vm_advice(v: &VmAdvice) -> String {
    let Some(a) = &v.advice else {
        return format!("VM host advice: none — {}\n", v.because);
    };
    let mut o = format!(
        "VM host advice: back guest RAM of {} with {} ({})\n",
        Bytes(a.size),
        a.backing.name(),
        v.because
    );
    let indent = |s: &str| s.lines().map(|l| format!("    {l}\n")).collect::<String>();
    let _ = write!(o, "  libvirt domain XML:\n{}", indent(&a.libvirt));
    let _ = writeln!(o, "  QEMU: {}", a.qemu);
    if let Some(c) = &a.kernel_cmdline {
        let _ = writeln!(o, "  host kernel command line: {c}");
    }
    for r in &a.runtime {
        let _ = writeln!(o, "  at run time: {r}");
    }
    for n in &a.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// What `run` prints: the answer lines and the run line first; then, by default, only what
/// needs reading (notes, stall contrasts, calibration, VM advice), or with `verbose` every
/// table `results show` has.
pub fn render(r: &RunResult, verbose: bool) -> String {
    let record = RunRecord::of(r);
    let mut o = String::new();
    // A service's answer is read by the person who runs the service: the brief answer, the
    // rest behind --verbose and `results show`.
    if !verbose && record.service {
        for l in super::service_answer::lines(&record) {
            let _ = writeln!(o, "{l}");
        }
        return o;
    }
    for l in answer_lines(&record) {
        let _ = writeln!(o, "{l}");
    }
    for l in service_lines(r) {
        o.extend(summary::wrap_hanging(&l, 2).into_iter().map(|l| l + "\n"));
    }
    // Where a PMU counted them, the measured TLB misses come before any model.
    if let Some(l) = measured_why(&r.report.evidence) {
        o.extend(summary::wrap_hanging(&l, 2).into_iter().map(|l| l + "\n"));
    }
    if let Some(m) = &r.tlb {
        for l in tlb_lines(r, m) {
            o.extend(summary::wrap_hanging(&l, 2).into_iter().map(|l| l + "\n"));
        }
    }
    if verbose {
        o.push('\n');
        o.push_str(&render_report(&r.report));
        o.push_str(&render_noise(r));
        if !r.servers.is_empty() {
            o.push_str(&render_servers(r));
        }
    } else if let Some(w) = grouped_warnings(&r.report) {
        o.extend(summary::wrap_hanging(&w, 2).into_iter().map(|l| l + "\n"));
    }
    for n in &r.notes {
        o.extend(
            summary::wrap_hanging(&format!("note: {n}"), 2)
                .into_iter()
                .map(|l| l + "\n"),
        );
    }
    for line in r.trace_stalls.iter().map(stall_line) {
        o.extend(
            summary::wrap_hanging(&line, 2)
                .into_iter()
                .map(|l| l + "\n"),
        );
    }
    if let Some(c) = &r.calibration {
        o.push_str(&render_calibration(c, r));
    }
    if let Some(v) = &r.vm_advice {
        vm_lines(r, v, verbose, &mut o);
    }
    let stored = match (r.db.is_empty(), verbose) {
        (true, true) => "not stored (--no-save)".to_string(),
        (true, false) => "not stored (--no-save) · every table: run --verbose".to_string(),
        (false, true) => format!("stored as run {} in {}", r.run_id, r.db),
        (false, false) => format!(
            "stored as run {} · every table: hugelab results show {}",
            r.run_id, r.run_id
        ),
    };
    let _ = writeln!(o, "{stored}");
    o
}

/// With a measured TLB reach: why the arms differ (or not), each arm's entries against the
/// reach, and for a sweep's rows which sizes fit.
fn tlb_lines(r: &RunResult, m: &crate::model::tlb::Measured) -> Vec<String> {
    let size = r
        .report
        .evidence
        .iter()
        .filter_map(|e| e.mean_matters)
        .fold(0.0f64, f64::max);
    // With --hot, the bytes each arm's load touched; else all the memory that matters.
    let hot = r.report.evidence.iter().any(|e| e.mean_hot.is_some());
    // Entries per arm: its own memory that matters on its pages (scaled to the hot bytes,
    // in the same mix of page sizes); an arm whose backing was not judged (4 KiB-indifferent)
    // and had no huge coverage, one per 4 KiB of its own peak memory.
    let arms: Vec<(String, u64)> = r
        .report
        .evidence
        .iter()
        .filter_map(|e| {
            let own = e.mean_matters.or_else(|| peak_memory(&r.report, &e.arm));
            let bytes = if hot { e.mean_hot? } else { own? };
            match (e.mean_entries, e.mean_matters, e.mean_coverage_at_peak) {
                (Some(n), Some(m), _) if m > 0.0 => {
                    Some((e.arm.clone(), (n * bytes / m).ceil() as u64))
                }
                (None, _, Some(c)) if c < 0.1 && bytes > 0.0 => {
                    Some((e.arm.clone(), bytes as u64 / 4096))
                }
                _ => None,
            }
        })
        .collect();
    let what = if hot {
        let most = r
            .report
            .evidence
            .iter()
            .filter_map(|e| e.mean_hot)
            .fold(0.0f64, f64::max);
        format!(
            "the memory each load touched (--hot: up to {} referenced in a load; the memory that matters is {})",
            Bytes(most as u64),
            Bytes(size as u64)
        )
    } else {
        format!(
            "each arm's memory that matters (up to {} resident — all of it, not only its hot part: --hot measures that for services)",
            Bytes(size as u64)
        )
    };
    let primary = r.report.primary();
    let resolved = primary.is_some_and(|p| {
        p.contrasts.iter().any(|(_, c)| {
            c.as_ref()
                .is_some_and(|c| matches!(c.verdict, Verdict::Faster | Verdict::Slower))
        })
    });
    let unresolved = (!resolved).then(|| primary.map_or("", |p| p.metric.name.as_str()));
    let mut out: Vec<String> = super::tlb::why_line(&what, &arms, m, unresolved)
        .into_iter()
        .collect();
    // A sweep's rows (JMH): which sizes fit the reach and which do not, row by row.
    let rows: Vec<&str> = r
        .report
        .metrics
        .iter()
        .filter(|x| x.metric.row)
        .map(|x| x.metric.name.as_str())
        .collect();
    out.extend(super::tlb::row_why_line(&rows, m));
    out
}

/// `--trace`: one arm's stall time per trial against the baseline's.
fn stall_line(c: &crate::model::trace::StallContrast) -> String {
    let e = &c.difference_ms;
    let interval = match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => format!(
            " [{lo:+.1}, {hi:+.1}] ({} signed-rank interval, not adjusted across contrasts)",
            fmt_level(e.confidence)
        ),
        _ => " (too few blocks for an interval)".into(),
    };
    format!(
        "trace: {} per trial, {} − {}: {:+.1} ms{interval}; means {:.1} vs {:.1} ms over {} paired blocks",
        c.kind, c.arm, c.baseline, e.point, c.arm_mean_ms, c.baseline_mean_ms, c.blocks
    )
}

/// A VM's host advice: the answer and where its configuration is (printed here when the run
/// was not stored).
fn vm_lines(r: &RunResult, v: &VmAdvice, verbose: bool, o: &mut String) {
    // The full host configuration (libvirt XML, QEMU options, pool, boot command line) is
    // `advise`'s; here the answer and where to get it.
    let line = match (&v.advice, r.db.is_empty()) {
        (Some(a), false) => format!(
            "VM host advice: back guest RAM of {} with {} ({}); the configuration: hugelab advise --for qemu {}",
            Bytes(a.size),
            a.backing.name(),
            v.because,
            r.run_id
        ),
        // Not stored: `advise` cannot read it later, so the configuration is printed here.
        (Some(_), true) => String::new(),
        (None, _) => format!("VM host advice: none — {}", v.because),
    };
    o.extend(
        summary::wrap_hanging(&line, 2)
            .into_iter()
            .map(|l| l + "\n"),
    );
    if (verbose || r.db.is_empty()) && v.advice.is_some() {
        o.push_str(&render_vm_advice(v));
    }
}

/// An arm's median peak memory (the cost metric), where the run recorded it.
fn peak_memory(r: &ExperimentAnalysis, arm: &str) -> Option<f64> {
    let m = r.metrics.iter().find(|m| {
        m.metric.cost && crate::units::Unit::of_metric(&m.metric.name) == crate::units::Unit::Bytes
    })?;
    crate::model::costs::arm_median(m, arm)
}

/// The per-arm warnings of the distribution checks (drift, correlation, bimodality) and of
/// the contrasts, counted by kind in one line; `--verbose` prints each.
fn grouped_warnings(r: &ExperimentAnalysis) -> Option<String> {
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut count = |w: &str| {
        let kind = if w.contains("drift") {
            "values drift over the run"
        } else if w.contains("correlated") {
            "consecutive blocks correlated"
        } else if w.contains("bimodal") {
            "bimodal values"
        } else {
            "about the intervals"
        };
        *kinds.entry(kind).or_default() += 1;
    };
    for m in &r.metrics {
        for a in &m.arms {
            a.diagnostics.warnings.iter().for_each(|w| count(w));
        }
        for (_, c) in &m.contrasts {
            if let Some(c) = c {
                c.warnings.iter().for_each(|w| count(w));
            }
        }
    }
    if kinds.is_empty() {
        return None;
    }
    let said: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    Some(format!(
        "warnings: {} — each with --verbose",
        said.join(", ")
    ))
}

#[cfg(test)]
mod tests;
