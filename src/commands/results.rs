//! `hugelab results list|show|export`: the stored runs, one re-analysed, one exported (JSON
//! hyperfine can read, CSV of every trial, Markdown).

use super::print_json;
use crate::model::bench::BenchResult;
use crate::options::{ExportFormat, Json, Redecide};
use crate::stored_runs::open;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub action: ResultsAction,
    #[command(flatten)]
    pub store: crate::options::Database,
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// Every stored run
    List {
        #[command(flatten)]
        out: Json,
    },
    /// A stored run as it answered: its answer lines, the design, the notes, every table
    /// (re-analysed only at a --confidence or --effect given here)
    Show {
        /// The run's id (`hugelab results list`)
        run: i64,
        #[command(flatten)]
        decision: Redecide,
        #[command(flatten)]
        out: Json,
    },
    /// Export a run: json (a superset of hyperfine's --export-json), csv (one row per trial) or md
    Export {
        /// The run's id (`hugelab results list`)
        run: i64,
        /// The format to write
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

pub fn run(a: ResultsArgs) -> anyhow::Result<i32> {
    let store = open(&a.store.db)?;
    match a.action {
        ResultsAction::List { out } => {
            // A run whose process was killed outright reads as interrupted, not running.
            let runs: Vec<_> = store
                .runs()?
                .into_iter()
                .map(|(mut m, n)| {
                    m.status = crate::stored_runs::status_now(&m);
                    (m, n)
                })
                .collect();
            if out.json {
                // A list, not a record: each run carries the version that wrote it.
                let list: Vec<serde_json::Value> = runs
                    .iter()
                    .map(|(m, n)| {
                        serde_json::json!({"run": m, "trials": n, "hugelab_version": m.written_by()})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                let mut t = crate::render::table(&[
                    "run", "created", "status", "trials", "label", "command",
                ]);
                for (m, n) in &runs {
                    t.add_row(vec![
                        m.id.to_string(),
                        m.created.clone(),
                        m.status.clone(),
                        n.to_string(),
                        m.label.clone().unwrap_or_default(),
                        m.command.join(" "),
                    ]);
                }
                println!("{}\n{}", crate::render::fit(&mut t), store.path.display());
            }
        }
        ResultsAction::Show { run, decision, out } => {
            let (mut meta, arms, trials) = store.load(run)?;
            meta.status = crate::stored_runs::status_now(&meta);
            if let Some(bench) = stored_bench(&store, &meta, &decision)? {
                show_bench(&meta, &bench, out.json)?;
                return Ok(0);
            }
            let (record, decided) =
                crate::stored_runs::recall(&store, &meta, &arms, &trials, &decision)?;
            if out.json {
                print_json(&serde_json::json!({
                    "schema": "hugelab.results-show/2",
                    "run": meta,
                    "decided": decided,
                    "report": record.report,
                    "record": record,
                }))?;
            } else {
                print_heading(&meta);
                let said = crate::stored_runs::said(&meta, &arms, &trials, &record);
                print!(
                    "{}",
                    crate::render::run::render_stored(
                        &record,
                        decided.reanalysed.as_deref(),
                        &said
                    )
                );
            }
        }
        ResultsAction::Export { run, format, out } => {
            let (meta, arms, trials) = store.load(run)?;
            let text = match format {
                ExportFormat::Json => serde_json::to_string_pretty(&crate::model::Versioned::of(
                    &crate::stored_runs::export::export(&meta, &arms, &trials),
                ))?,
                ExportFormat::Csv => crate::render::csv::trials(run, &arms, &trials),
                ExportFormat::Md => crate::render::markdown::runs(&[crate::stored_runs::view(
                    &store,
                    meta,
                    &arms,
                    &trials,
                    &Redecide::default(),
                )?]),
            };
            match out {
                Some(p) => std::fs::write(&p, text)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
                None => println!("{text}"),
            }
        }
    }
    Ok(0)
}

/// A bench's whole result as it printed it, unless another decision is asked for (then its
/// rounds are re-analysed as any run's, and say so). None for a run, an import, or a bench an
/// earlier version stored without its result.
fn stored_bench(
    store: &crate::store::Store,
    meta: &crate::store::RunMeta,
    asked: &Redecide,
) -> anyhow::Result<Option<BenchResult>> {
    if !meta.plan.is_bench() || asked.effect.is_some() || asked.confidence.is_some() {
        return Ok(None);
    }
    Ok(store
        .summary::<BenchResult>(meta.id)?
        .filter(|b| b.schema == crate::model::bench::SCHEMA))
}

fn show_bench(meta: &crate::store::RunMeta, bench: &BenchResult, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::json!({
            "schema": "hugelab.results-show/2",
            "run": meta,
            "bench": bench,
        }));
    }
    print_heading(meta);
    print!("{}", crate::render::bench::render(bench));
    Ok(())
}

/// `results show`'s first line: the run, when, how it ended and what it ran; and the version
/// that wrote it where another did.
fn print_heading(meta: &crate::store::RunMeta) {
    println!(
        "run {} ({}, {}): {}",
        meta.id,
        meta.created,
        meta.status,
        meta.command.join(" ")
    );
    if let Some(note) = meta.other_version() {
        println!("note: {note}");
    }
}
