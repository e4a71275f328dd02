//! How a trial's workload ended, as stored.

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TrialOutcome {
    /// CLOCK_MONOTONIC just before the spawn and just after the exit was reported, ns.
    #[serde(default)]
    pub start_mono_ns: u64,
    #[serde(default)]
    pub end_mono_ns: u64,
    pub wall_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub max_rss_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by `--timeout` (its process group first): a failed trial.
    pub timed_out: bool,
    /// What the delayed MADV_COLLAPSE did, if the arm asked for it.
    pub collapse: Option<String>,
    #[serde(skip)]
    pub stdout: String,
    #[serde(skip)]
    pub stderr: String,
}

impl TrialOutcome {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// A signal's name (`SIGKILL`), or its number when it has none.
pub fn signal_name(sig: i32) -> String {
    // The signals a trial meets; others print as numbers.
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}
