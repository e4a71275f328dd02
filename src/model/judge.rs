//! The record of `hugelab judge`: what was asked of Prometheus, and the judgement.

use crate::analyze::judge::{Evidence, HugeOn, MetricJudgement, Overall};
use crate::analyze::verdict::Design;

#[derive(Debug, Clone, serde::Serialize)]
pub struct JudgeResult {
    pub schema: &'static str,
    pub prometheus: String,
    pub canary: String,
    pub baseline: String,
    /// The window asked for (unix seconds) and the part judged after the burn-in.
    pub from: f64,
    pub to: f64,
    pub judged_from: f64,
    pub burn_in_s: f64,
    pub step_s: f64,
    pub interval_s: f64,
    pub effect: f64,
    pub confidence: f64,
    pub design: Design,
    pub huge_on: HugeOn,
    /// Each metric's name and query template (`$sel` where the group's selector goes).
    pub queries: Vec<(String, String)>,
    pub metrics: Vec<MetricJudgement>,
    pub evidence: Evidence,
    pub overall: Overall,
    /// Requests made, samples fetched and how long the fetching and judging took.
    pub requests: u64,
    pub samples: u64,
    pub elapsed_s: f64,
    /// `--follow`: the look this record is (1 = first).
    pub look: usize,
}

pub const SCHEMA: &str = "hugelab.judge/1";
