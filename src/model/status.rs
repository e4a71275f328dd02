//! What `status` finds about the machine's huge-page state (`analyze::findings` finds it).

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// Stable identifier for scripts, e.g. `thp-always-defrag-always`.
    pub code: &'static str,
    pub severity: Severity,
    pub title: String,
    /// What was measured or read that triggers the finding.
    pub evidence: String,
    /// Why it matters.
    pub reason: String,
    /// What to do about it, where something can be done.
    pub fix: Option<String>,
}

/// Unusable-free-space index above which 2 MiB capacity counts as low.
pub const FRAGMENTED_INDEX: f64 = 0.5;

/// Share of THP faults falling back to small pages above which we warn.
pub const FALLBACK_SHARE: f64 = 0.1;
