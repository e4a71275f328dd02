//! `hugelab import FILE`: hyperfine JSON or a hugelab export into the results database, checked
//! whole first (`store::import`) and stored in one transaction — a bad file stores nothing.

use super::UsageError;
use crate::options::Database;
use crate::store::Store;
use crate::store::import::Import;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A hyperfine --export-json file, or a hugelab JSON export (`results export`; its metrics,
    /// block pairing, failures and flags are kept)
    pub file: PathBuf,
    /// A label for the imported run
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub store: Database,
}

/// Import hyperfine JSON or a hugelab export. hyperfine runs commands one after another, so
/// its trials are not paired: compare them with `hugelab compare` (unpaired), not as blocks.
/// Everything is checked first and stored in one transaction: a bad file stores nothing.
pub fn run(a: ImportArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.file.display()))?;
    let mut imp: Import =
        crate::store::import::read(&text, &a.file).map_err(|e| UsageError(e.0))?;
    // A file that kept no answer of its own (hyperfine's) is analysed once, here, at the decision
    // its plan kept or at the defaults, and stored so; every view then reads that record.
    if imp.record.is_none() && imp.bench.is_none() {
        imp.record = Some(crate::analyze::stored::imported_record(
            &imp.plan,
            &imp.arms,
            &imp.trials,
        ));
    }
    let command: Vec<String> = imp
        .source
        .command
        .clone()
        .unwrap_or_else(|| imp.arms.iter().map(|a| a.spec.clone()).collect());
    let label = a.label.as_deref().or(imp.source.label.as_deref());
    let mut store = Store::open(
        &a.store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path),
    )?;
    let id = store.import_run(label, &command, &imp)?;
    println!(
        "imported {} arms, {} trials from {} as run {id}",
        imp.arms.len(),
        imp.trials.len(),
        a.file.display()
    );
    Ok(0)
}
