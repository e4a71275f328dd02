//! `hugelab run` for people: per arm summaries, contrasts with verdicts, evidence, warnings.

use super::table;
use crate::analyze::experiment::ExperimentReport;
use crate::analyze::verdict::Verdict;
use crate::commands::run::RunResult;
use std::fmt::Write;

fn unit(metric: &str) -> &str {
    if metric == "wall_s" { "s" } else { "" }
}

pub fn render_report(r: &ExperimentReport) -> String {
    let mut o = String::new();
    let level = format!("{}%", r.confidence * 100.0);
    for m in &r.metrics {
        let mut t = table(&[
            "arm",
            "n",
            "median",
            "mean ± sd",
            "p95",
            "outliers",
            "vs baseline",
            "verdict",
        ]);
        for a in &m.arms {
            let Some(s) = &a.summary else {
                t.add_row(vec![
                    a.arm.clone(),
                    "0".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            };
            let (vs, verdict) = match m.contrasts.iter().find(|(n, _)| *n == a.arm) {
                None => ("baseline".to_string(), String::new()),
                Some((_, None)) => (
                    "too few complete blocks".to_string(),
                    "INCONCLUSIVE".to_string(),
                ),
                Some((_, Some(c))) => {
                    let p = &c.percent;
                    let iv = match (p.lo, p.hi) {
                        (Some(lo), Some(hi)) => format!("{:+.2}% [{lo:+.2}, {hi:+.2}]", p.point),
                        _ => format!("{:+.2}%", p.point),
                    };
                    let v = match c.verdict {
                        Verdict::Faster => {
                            format!("FASTER{}", if c.clears_effect { "" } else { " (< δ)" })
                        }
                        Verdict::Slower => {
                            format!("SLOWER{}", if c.clears_effect { "" } else { " (< δ)" })
                        }
                        Verdict::Equivalent => "EQUIVALENT".into(),
                        Verdict::Inconclusive => "INCONCLUSIVE".into(),
                    };
                    (iv, v)
                }
            };
            let u = unit(&m.metric.name);
            t.add_row(vec![
                a.arm.clone(),
                s.n.to_string(),
                format!("{:.4}{u}", s.median),
                format!("{:.4} ± {:.4}", s.mean, s.sd),
                format!("{:.4}", s.p95),
                s.outliers.to_string(),
                vs,
                verdict,
            ]);
        }
        let better = match m.metric.better {
            crate::analyze::verdict::Better::Lower => "lower is better",
            crate::analyze::verdict::Better::Higher => "higher is better",
        };
        let _ = writeln!(
            o,
            "{} ({better}; {} complete blocks; Hodges–Lehmann, {level} signed-rank interval, δ = {}%)\n{t}",
            m.metric.name,
            m.complete_blocks,
            r.effect * 100.0
        );
        for (arm, c) in &m.contrasts {
            if let Some(c) = c {
                if let (Some(mde), Some(more)) = (c.min_detectable_percent, c.more_blocks) {
                    let _ = writeln!(
                        o,
                        "  {arm}: the smallest effect this run could detect is ±{mde:.2}%; about {more} more blocks would resolve δ = {}%",
                        r.effect * 100.0
                    );
                }
                if let Some(b) = &c.mean_ratio_percent
                    && let (Some(lo), Some(hi)) = (b.lo, b.hi)
                {
                    let _ = writeln!(
                        o,
                        "  {arm}: mean ratio {:+.2}% [{lo:+.2}, {hi:+.2}] (BCa bootstrap)",
                        b.point
                    );
                }
                for w in &c.warnings {
                    let _ = writeln!(o, "  {arm}: warning: {w}");
                }
            }
        }
        for a in &m.arms {
            for w in &a.diagnostics.warnings {
                let _ = writeln!(o, "  {}: {w}", a.arm);
            }
        }
    }
    let mut t = table(&[
        "arm",
        "trials",
        "failed",
        "flagged",
        "huge coverage at peak RSS",
        "page faults",
        "dTLB misses",
    ]);
    for e in &r.evidence {
        let count = |k: &str| {
            e.mean_counters
                .get(k)
                .map_or("-".into(), |v| format!("{v:.0}"))
        };
        t.add_row(vec![
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
    let _ = writeln!(
        o,
        "backing evidence (run: the child's process group sampled every 25 ms; bench: the verified region)\n{t}"
    );
    for e in &r.evidence {
        if let Some(f) = &e.first_flag {
            let _ = writeln!(o, "  FLAGGED {}: {f}", e.arm);
        }
    }
    o
}

pub fn render(r: &RunResult) -> String {
    let mut o = render_report(&r.report);
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(
        o,
        "{} blocks, stopped: {}; run {} in {} ({:.0} s)",
        r.blocks_done, r.stop_reason, r.run_id, r.db, r.elapsed_s
    );
    o
}
