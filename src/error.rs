//! Low-layer error types: typed, carrying the path, line or value that failed.
//! Commands wrap these in `anyhow` with context; `main` prints the chain once.

use std::path::PathBuf;

/// A parse failure inside one file's text, before the path is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number within the parsed text.
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

/// Reading or parsing a kernel file failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} needs root to read (run hugelab as root to see it)")]
    Permission { path: PathBuf },
    #[error("malformed {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: ParseError,
    },
}

/// Writing a system setting failed, or a setting could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot write {value:?} to {path}: {source}{hint}")]
    Write {
        path: PathBuf,
        value: String,
        #[source]
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds {content:?}, which has no selected value in [brackets]")]
    NoSelection { path: PathBuf, content: String },
    #[error("restore journal {path}: {message}")]
    Journal { path: PathBuf, message: String },
    #[error(
        "another hugelab ({holder}) is changing system settings (it holds the lock on {path}); wait for it to finish (or pass --wait-for-settings), or stop it: `kill {pid}` makes it restore what it changed",
        pid = pid.map_or_else(|| "PID".to_string(), |p| p.to_string())
    )]
    Busy {
        /// The holder's pid, where its lock file (or its journal) names it.
        pid: Option<u32>,
        /// `pid N: `command``, or what is known of it.
        holder: String,
        path: PathBuf,
    },
    #[error("invalid value {value:?} for {knob}: {expected}")]
    InvalidValue {
        knob: String,
        value: String,
        expected: String,
    },
}

/// Bad arguments discovered after parsing, before anything ran or was stored (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
