//! How arms run side by side, and the per-arm values of a service's template.

use crate::model::arm::knob::Knob;

/// How the arms run side by side.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SideBySide {
    /// System-wide settings for the whole run.
    pub system: Vec<(Knob, String)>,
    /// Arms whose server gets PR_SET_THP_DISABLE in place of a `never` setting.
    pub thp_off: Vec<usize>,
    /// Arms whose server gets PR_THP_DISABLE_EXCEPT_ADVISED in place of a `madvise` setting.
    #[serde(default)]
    pub thp_advised: Vec<usize>,
    /// What was done instead of the literal settings, in words.
    pub instead: Vec<String>,
}

/// What fills a server's and its load's placeholders for one arm: `{port}` (a free port on
/// loopback), `{host}` (127.0.0.1), `{dir}` (a private directory: socket, data copy),
/// `{arm}` (its name, the same for every replica of the arm), `{replica}` (1, 2, …: which of the
/// arm's servers running at once) and `{burst}` (the burst length in whole seconds).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slot {
    pub arm: String,
    pub port: u16,
    pub host: String,
    pub dir: String,
    pub burst: Option<u64>,
    /// Which of the arm's servers at once, from 0 (`{replica}` is this plus 1).
    #[serde(default)]
    pub replica: usize,
}
