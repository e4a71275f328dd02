//! Command planning and orchestration: each CLI command turns parsed arguments plus the
//! probed system into a plan, runs it through the stages, and renders the result.

pub mod advise;
pub mod bench;
pub mod collapse;
pub mod compare;
pub mod exporter;
pub mod hold_memory;
pub mod import;
pub mod inspect;
pub mod judge;
pub mod report;
pub mod restore;
pub mod results;
pub mod run;
pub mod shell;
pub mod status;
pub mod stored;
pub mod top;
pub mod trace;

pub use crate::error::UsageError;

/// Print a serializable record as pretty JSON on stdout, with the version that wrote it.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::model::Versioned::of(v))?
    );
    Ok(())
}
