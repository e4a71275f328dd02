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
    /// `--before`: the before window (unix seconds), when one was given.
    pub before: Option<(f64, f64)>,
    /// `--switchback`: the arms and the periods run on this host (`canary` is the second arm's
    /// periods, `baseline` the first's).
    pub switchback: Option<Switchback>,
}

/// What `judge --switchback` ran on its host.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Switchback {
    pub host: String,
    /// (name, spec) of the baseline arm, then of the change.
    pub arms: [(String, String); 2],
    pub period_s: f64,
    pub seed: u64,
    /// Each complete pair's two periods, in the order they ran.
    pub periods: Vec<Period>,
    /// What the guard restored at the end, in words.
    pub restored: Vec<String>,
    /// Why the schedule ended early (a signal), if it did.
    pub stopped: Option<String>,
}

pub const SCHEMA: &str = "hugelab.judge/1";

/// One period of a switchback.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Period {
    /// The pair it belongs to (0-based; both periods of a pair share it).
    pub pair: usize,
    /// 0 = the baseline arm, 1 = the change.
    pub arm: usize,
    /// Unix seconds, from the settings being in force to the period's end.
    pub start: f64,
    pub end: f64,
}
