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
    let Import { arms, trials, plan } =
        crate::store::import::read(&text, &a.file).map_err(|e| UsageError(e.0))?;
    let command: Vec<String> = arms.iter().map(|a| a.spec.clone()).collect();
    let mut store = Store::open(
        &a.store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path),
    )?;
    let id = store.import_run(a.label.as_deref(), &command, &plan, &arms, &trials)?;
    println!(
        "imported {} arms, {} trials from {} as run {id}",
        arms.len(),
        trials.len(),
        a.file.display()
    );
    Ok(0)
}
