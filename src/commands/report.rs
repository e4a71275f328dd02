//! `hugelab report`: one self-contained HTML file (inline SVG charts, no JavaScript) or a
//! Markdown document for stored runs, benches and a comparison of two runs. The report is drawn
//! from the same records, and the same table cells, as the terminal output.

use super::UsageError;
use crate::model::report::CompareResult;
use crate::options::{Database, MetricChoice, Redecide, ReportFormat};
use crate::stored_runs::{compare_runs, open};
use crate::units::Bytes;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Stored run or bench ids (`hugelab results list`)
    #[arg(required_unless_present = "compare")]
    pub runs: Vec<i64>,
    /// Report a comparison of two runs (ids or exported JSON files) instead
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "runs")]
    pub compare: Option<Vec<String>>,
    /// With --compare: the metric compared, and its direction
    #[command(flatten)]
    pub metric: MetricChoice,
    /// Output file (default: report.html or report.md)
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// The document to write
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    #[command(flatten)]
    pub decision: Redecide,
    #[command(flatten)]
    pub store: Database,
}

use crate::stored_runs::view;

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let md = a.format == ReportFormat::Md;
    let text = if let Some(ab) = &a.compare {
        let c: CompareResult = compare_runs(
            &ab[0],
            &ab[1],
            &a.metric.metric,
            a.metric.higher,
            a.decision
                .effect
                .unwrap_or(crate::model::decision::DEFAULT_EFFECT),
            a.decision
                .confidence
                .unwrap_or(crate::model::decision::DEFAULT_CONFIDENCE),
            &a.store.db,
        )?;
        if md {
            crate::render::markdown::compare(&c)
        } else {
            crate::render::html::compare(&c)
        }
    } else {
        let store = open(&a.store.db)?;
        let mut views = Vec::new();
        for id in &a.runs {
            let (meta, arms, trials) = store.load(*id)?;
            if trials.is_empty() {
                return Err(UsageError(format!(
                    "run {id} has no trials to report (`hugelab results list` shows what each run holds)"
                ))
                .into());
            }
            views.push(view(&store, meta, &arms, &trials, &a.decision)?);
        }
        if md {
            crate::render::markdown::runs(&views)
        } else {
            crate::render::html::runs(&views)
        }
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(if md { "report.md" } else { "report.html" }));
    std::fs::write(&out, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e} (use -o PATH)", out.display()))?;
    crate::eprintln_safe!("wrote {} ({})", out.display(), Bytes(text.len() as u64));
    Ok(0)
}
