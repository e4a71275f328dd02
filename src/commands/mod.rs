//! The commands: each parses its arguments, calls its engine (`experiment`, `bench`, `fleet`,
//! `exporter`, `stored_runs`, `trace`, the advice wing `advice`) or the stages directly when it
//! has no plan of its own, renders the record it gets, and maps the outcome to an exit code. No
//! command imports another.

pub mod advise;
pub mod apply;
pub mod bench;
pub mod collapse;
pub mod compare;
pub mod completions;
pub mod exporter;
pub mod hold_memory;
pub mod import;
pub mod inspect;
pub mod judge;
pub mod report;
pub mod restore;
pub mod results;
pub mod run;
pub mod status;
pub mod top;
pub mod trace;

pub use crate::error::UsageError;

/// A file an option asked for (`flag PATH`) written, or a usage error naming the path.
pub fn write_file(path: &std::path::Path, flag: &str, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| {
        UsageError(format!(
            "{flag} {}: {e}; give a path you can write",
            path.display()
        ))
        .into()
    })
}

/// Print a serializable record as pretty JSON on stdout, with the version that wrote it.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::model::Versioned::of(v))?
    );
    Ok(())
}
