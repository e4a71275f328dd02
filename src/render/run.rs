//! `hugelab run` for people: per arm summaries, contrasts with verdicts, evidence, warnings.

use super::Grid;
use super::summary;
use super::summary::thousands;
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
use machine::{calibration_grid, noise_grid};
use servers::render_servers;

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
            crate::render::words::design(&r.design, m.contrasts.len(), r.confidence),
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
                    "  {arm}: the interval's half-width is ±{mde:.2}%; about {more} more {unit} would resolve δ = {}% with 80% probability (at the spread seen so far{})",
                    r.effect * 100.0,
                    crate::render::words::at_pace(c)
                ));
            }
            if let Some(b) = &c.mean_ratio_percent
                && let (Some(lo), Some(hi)) = (b.lo, b.hi)
            {
                g.notes.push(format!(
                    "  {arm}: mean ratio {:+.2}% {} ({} BCa bootstrap)",
                    b.point,
                    crate::units::fmt_interval(lo, hi, 2),
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
            let walk = e.walk_share.map_or(String::new(), |w| {
                format!(", page walks {:.1}% of cycles", w * 100.0)
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

/// How much of a run's record is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    /// `run`'s default: the answer, what needs reading, and where the rest is.
    Brief,
    /// `run --verbose`: every table too.
    Verbose,
    /// `results show`: every table and line the run printed, read back from its record.
    Stored,
}

/// A run's record in the parts every view draws: the answer lines first, the lines that say how
/// the run went and why, the tables, the lines after them.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// How the record was read (when rebuilt or re-analysed), as notes.
    pub read_as: Vec<String>,
    /// The answer lines.
    pub answer: Vec<String>,
    /// The service's design and servers, the measured and the modelled why.
    pub why: Vec<String>,
    /// Every table: each metric's, the backing evidence, the machine's noise (none in the
    /// brief answer).
    pub grids: Vec<Grid>,
    /// Each server's lifecycle and memory (not in the brief answer).
    pub servers: Vec<String>,
    /// The brief answer's warnings, counted by kind; the notes the run printed; `--trace`'s
    /// stall contrasts.
    pub after: Vec<String>,
    /// `--calibrate`'s noise floor: the answer to it, so in the brief answer too.
    pub calibration: Option<Grid>,
    /// The VM host advice.
    pub vm: Vec<String>,
}

/// A run's answer from its record — the one author of what `run` prints as it ends (brief or
/// verbose), of what `results show` prints again (every table), and of what the report and the
/// Markdown export draw.
pub fn parts(
    record: &RunRecord,
    said: &crate::model::report::Said,
    read_as: &[String],
    how: Print,
) -> Parts {
    let mut p = Parts {
        read_as: read_as.iter().map(|n| format!("note: {n}")).collect(),
        ..Parts::default()
    };
    // A service's answer is read by the person who runs the service: the brief answer, the
    // rest behind --verbose and `results show`.
    if how == Print::Brief && record.service {
        p.answer.extend(super::service_answer::lines(record));
        return p;
    }
    p.answer.extend(answer_lines(record));
    p.why = design_and_servers(&record.report, said);
    // Where a PMU counted them, the measured TLB misses come before any model.
    p.why.extend(measured_why(&record.report.evidence));
    if let Some(w) = &record.tlb {
        p.why.extend(tlb_lines(w));
    }
    if how == Print::Brief {
        p.after.extend(grouped_warnings(&record.report));
    } else {
        p.grids = report_grids(&record.report);
        p.grids.extend(noise_grid(&record.noise));
        if !record.servers.is_empty() {
            p.servers = render_servers(&record.servers)
                .lines()
                .map(str::to_string)
                .collect();
        }
    }
    p.after
        .extend(said.notes.iter().map(|n| format!("note: {n}")));
    p.after.extend(record.trace_stalls.iter().map(stall_line));
    p.calibration = record.calibration.as_ref().map(calibration_grid);
    if let Some(v) = &record.vm_advice {
        p.vm = vm_lines(record, v, how != Print::Brief);
    }
    p
}

/// [`parts`] as the terminal shows them.
pub fn record_text(
    record: &RunRecord,
    said: &crate::model::report::Said,
    read_as: &[String],
    how: Print,
) -> String {
    let p = parts(record, said, read_as, how);
    let wrapped = |lines: &[String]| -> String {
        lines
            .iter()
            .flat_map(|l| summary::wrap_hanging(l, 2))
            .map(|l| l + "\n")
            .collect()
    };
    let mut o = wrapped(&p.read_as);
    o.extend(p.answer.iter().map(|l| format!("{l}\n")));
    o += &wrapped(&p.why);
    if how != Print::Brief {
        o.push('\n');
        o.extend(p.grids.iter().map(Grid::terminal));
        o.extend(p.servers.iter().map(|l| format!("{l}\n")));
    }
    o += &wrapped(&p.after);
    o.extend(p.calibration.iter().map(Grid::terminal));
    o.extend(p.vm.iter().map(|l| format!("{l}\n")));
    o
}

/// A stored run (`results show`): [`record_text`] with every table, after the notes on how it
/// was read (`read_as`: rebuilt, or at another decision than its own).
pub fn render_stored(
    record: &RunRecord,
    read_as: &[String],
    said: &crate::model::report::Said,
) -> String {
    record_text(record, said, read_as, Print::Stored)
}

/// The service's design and each arm's server, as the run said them.
fn design_and_servers(r: &ExperimentAnalysis, said: &crate::model::report::Said) -> Vec<String> {
    let mut out = said
        .server
        .as_ref()
        .map_or(Vec::new(), |sp| servers::design_lines(sp, r, &said.arms));
    out.extend(servers::server_lines(&said.servers));
    out
}

/// What a stored run said beside its tables, wrapped: its service's design (and the forecast
/// beside the precision reached), each arm's server, and the notes the run printed.
pub fn stored_details(r: &ExperimentAnalysis, said: &crate::model::report::Said) -> Vec<String> {
    let notes = said.notes.iter().map(|n| format!("note: {n}"));
    design_and_servers(r, said)
        .into_iter()
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
/// table `results show` has — all from the record the run stored.
pub fn render(r: &RunResult, verbose: bool) -> String {
    let record = RunRecord::of(r);
    let said = crate::model::report::Said {
        server: r.plan.server.clone(),
        arms: r.plan.arms.iter().map(|a| a.name.clone()).collect(),
        notes: record.notes.clone(),
        servers: record.servers.clone(),
    };
    let how = if verbose {
        Print::Verbose
    } else {
        Print::Brief
    };
    let mut o = record_text(&record, &said, &[], how);
    // A service's brief answer says where the rest is itself.
    if verbose || !record.service {
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
    }
    o
}

/// With a measured TLB reach: why the arms differ (or not), each arm's entries against the
/// reach, and for a sweep's rows which sizes fit.
fn tlb_lines(w: &crate::model::tlb::RunWhy) -> Vec<String> {
    let what = if w.hot {
        format!(
            "the memory each load touched (--hot: up to {} referenced in a load; the memory that matters is {})",
            Bytes(w.hot_bytes),
            Bytes(w.matters_bytes)
        )
    } else {
        format!(
            "each arm's memory that matters (up to {} resident — all of it, not only its hot part: --hot measures that for services)",
            Bytes(w.matters_bytes)
        )
    };
    let mut out: Vec<String> =
        super::tlb::why_line(&what, &w.needs, &w.measured, w.unresolved.as_deref())
            .into_iter()
            .collect();
    // A sweep's rows (JMH): which sizes fit the reach and which do not, row by row.
    out.extend(super::tlb::row_why_line(&w.rows, &w.measured));
    out
}

/// `--trace`: one arm's stall time per trial against the baseline's.
fn stall_line(c: &crate::model::trace::StallContrast) -> String {
    let e = &c.difference_ms;
    let interval = match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => format!(
            " {} ({} signed-rank interval, not adjusted across contrasts)",
            crate::units::fmt_interval(lo, hi, 1),
            fmt_level(e.confidence)
        ),
        _ => " (too few blocks for an interval)".into(),
    };
    format!(
        "trace: {} per trial, {} − {}: {:+.1} ms{interval}; means {:.1} vs {:.1} ms over {} paired blocks",
        c.kind, c.arm, c.baseline, e.point, c.arm_mean_ms, c.baseline_mean_ms, c.blocks
    )
}

/// A VM's host advice: the answer and where its configuration is (in full when the run was not
/// stored, and with every table).
fn vm_lines(r: &RunRecord, v: &VmAdvice, full: bool) -> Vec<String> {
    // The full host configuration (libvirt XML, QEMU options, pool, boot command line) is
    // `advise`'s; here the answer and where to get it.
    let line = match (&v.advice, r.stored) {
        (Some(a), true) => Some(format!(
            "VM host advice: back guest RAM of {} with {} ({}); the configuration: hugelab advise --for qemu {}",
            Bytes(a.size),
            a.backing.name(),
            v.because,
            r.run_id
        )),
        // Not stored: `advise` cannot read it later, so the configuration is printed here.
        (Some(_), false) => None,
        (None, _) => Some(format!("VM host advice: none — {}", v.because)),
    };
    let mut out: Vec<String> = line
        .iter()
        .flat_map(|l| summary::wrap_hanging(l, 2))
        .collect();
    if (full || !r.stored) && v.advice.is_some() {
        out.extend(render_vm_advice(v).lines().map(str::to_string));
    }
    out
}

/// The warnings of the distribution checks (drift, correlation, bimodality) and of the
/// contrasts, as the analysis counted them by kind, in one line; `--verbose` prints each.
fn grouped_warnings(r: &ExperimentAnalysis) -> Option<String> {
    if r.warning_kinds.is_empty() {
        return None;
    }
    let said: Vec<String> = r
        .warning_kinds
        .iter()
        .map(|(k, n)| format!("{k} ({n})"))
        .collect();
    Some(format!(
        "warnings: {} — each with --verbose",
        said.join(", ")
    ))
}

#[cfg(test)]
mod tests;
