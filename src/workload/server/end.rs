//! How a server's trial went wrong (a failed trial, with the server's last lines), and how the
//! server ended when it was stopped — in words when that end is itself a failure.

pub use crate::model::trial::server::ServerEnd;

/// How a server's trial went wrong: a failed trial, with the server's last lines.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerFailure {
    pub what: String,
    pub log_tail: Vec<String>,
}

impl std::fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.what)?;
        if let Some(l) = self.log_tail.iter().rev().find(|l| !l.trim().is_empty()) {
            write!(f, "; its last line: {}", l.trim())?;
        }
        Ok(())
    }
}
