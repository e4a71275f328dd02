//! `hugelab results list|show|export`: the stored runs, one re-analysed, one exported (JSON
//! hyperfine can read, CSV of every trial, Markdown).

use super::print_json;
use crate::options::{ExportFormat, Json, Redecide};
use crate::store::Store;
use crate::stored_runs::Answer;
use crate::stored_runs::open;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// The schema of `results show --json`.
pub const SHOW_SCHEMA: &str = "hugelab.results-show/3";

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
        ResultsAction::List { out } => list(&store, out.json)?,
        ResultsAction::Show { run, decision, out } => show(&store, run, &decision, out.json)?,
        ResultsAction::Export { run, format, out } => {
            let text = export(&store, run, format)?;
            match out {
                Some(p) => std::fs::write(&p, text)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
                None => println!("{text}"),
            }
        }
    }
    Ok(0)
}

/// `results list`: every stored run, one line each (a run whose process was killed outright
/// reads as interrupted, not running).
fn list(store: &Store, json: bool) -> anyhow::Result<()> {
    let runs: Vec<_> = store
        .runs()?
        .into_iter()
        .map(|(mut m, n)| {
            m.status = crate::stored_runs::status_now(&m);
            (m, n)
        })
        .collect();
    if json {
        // A list, not a record: each run carries the version that wrote it.
        let list: Vec<serde_json::Value> = runs
            .iter()
            .map(|(m, n)| {
                serde_json::json!({"run": m, "trials": n, "hugelab_version": m.written_by()})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let mut t = crate::render::table(&["run", "created", "status", "trials", "label", "command"]);
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
    Ok(())
}

/// `results show`: the stored answer as it was printed; the trials are read only where the
/// answer is not stored whole or is decided again.
fn show(store: &Store, run: i64, decision: &Redecide, json: bool) -> anyhow::Result<()> {
    let (mut meta, arms) = store.head(run)?;
    let trials = crate::stored_runs::Trials::stored(store, run);
    meta.status = crate::stored_runs::status_now(&meta);
    let recalled = crate::stored_runs::recall(store, &meta, &arms, &trials, decision)?;
    if json {
        let said = (recalled.record())
            .map(|r| crate::stored_runs::said(&meta, &arms, &trials, r))
            .transpose()?;
        return print_json(&serde_json::json!({
            "schema": SHOW_SCHEMA,
            "run": meta,
            "decided": recalled.decision,
            "rebuilt": recalled.rebuilt,
            "unread": recalled.unread,
            "report": recalled.record().map(|r| &r.report),
            "record": recalled.record(),
            "said": said,
            "bench": recalled.bench(),
        }));
    }
    print_heading(&meta);
    let notes = recalled.notes();
    let text = match &recalled.answer {
        Answer::Run(record) => {
            let said = crate::stored_runs::said(&meta, &arms, &trials, record)?;
            crate::render::run::render_stored(record, &notes, &said)
        }
        Answer::Bench(b) => crate::render::bench::render_stored(b, &notes),
    };
    print!("{text}");
    Ok(())
}

/// `results export`: a run at its own decision as JSON, its trials as CSV, or Markdown.
fn export(store: &Store, run: i64, format: ExportFormat) -> anyhow::Result<String> {
    let (meta, arms, trials) = store.load(run)?;
    let own = Redecide::default();
    Ok(match format {
        ExportFormat::Json => {
            let given = crate::stored_runs::Trials::Given(&trials);
            let kept = crate::stored_runs::recall(store, &meta, &arms, &given, &own)?;
            serde_json::to_string_pretty(&crate::model::Versioned::of(
                &crate::stored_runs::export::export(&meta, &arms, &trials, &kept),
            ))?
        }
        ExportFormat::Csv => crate::render::csv::trials(run, &arms, &trials),
        ExportFormat::Md => crate::render::markdown::runs(&[crate::stored_runs::view(
            store, meta, &arms, &trials, &own,
        )?]),
    })
}

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
