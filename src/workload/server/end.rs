//! How a server's trial went wrong (a failed trial, with the server's last lines), and how the
//! server ended when it was stopped — in words when that end is itself a failure.

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

/// How the server ended when it was stopped.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// It had exited before it was asked to stop.
    pub exited_early: bool,
    /// It outlived the grace period after SIGTERM and was killed.
    pub killed: bool,
    /// From SIGTERM to its exit, ns (the stop cost of a restart per trial).
    pub stop_ns: u64,
    /// Descendants still alive after the server exited, killed then.
    pub orphans_killed: usize,
}

impl ServerEnd {
    /// The end in words when it is a failure: the server had died, or died from a signal.
    pub fn failure(&self) -> Option<String> {
        let how = match (self.exit_code, self.signal) {
            (_, Some(s)) => format!("killed by {}", crate::workload::child::signal_name(s)),
            (Some(c), _) => format!("exit {c}"),
            (None, None) => "status unknown".to_string(),
        };
        let bus = if self.signal == Some(libc::SIGBUS) {
            " — SIGBUS with huge pages means a hugetlb page was not there at first touch (a pool or a hugetlb cgroup limit ran out): a crash, not a fallback"
        } else {
            ""
        };
        if self.exited_early {
            Some(format!("the server exited during the load ({how}){bus}"))
        } else if self
            .signal
            .is_some_and(|s| s != libc::SIGTERM && s != libc::SIGKILL)
        {
            Some(format!("the server ended {how} when stopped{bus}"))
        } else {
            None
        }
    }
}
