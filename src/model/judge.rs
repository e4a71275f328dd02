//! The record of `hugelab judge`: what was asked of Prometheus, and the judgement.
use crate::model::verdict::Better;
use crate::model::verdict::Contrast;
use crate::stats::Estimate;

use crate::model::verdict::Design;

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

/// Which group is meant to run on huge pages after the change.
/// Each value's meaning is its `--help` text, in `src/options.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HugeOn {
    Canary,
    Baseline,
    Both,
}

/// What the exporter says about the backing of each group.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// Mean huge-page coverage of the watched processes over the window, per group.
    pub canary_coverage: Option<f64>,
    pub baseline_coverage: Option<f64>,
    /// Hosts of the group meant to be on huge pages whose coverage stayed below 10%.
    pub hosts_without: Vec<String>,
    pub flagged: Option<String>,
    /// Kernel activity per group over the window.
    pub kernel: Vec<KernelRow>,
    /// Coverage per group over the before window, when one was given.
    #[serde(default)]
    pub before: Option<WindowCoverage>,
    /// `--cgroup`: the label matchers of the cgroups whose share on huge pages is the
    /// coverage; `None`: the watched processes'.
    #[serde(default)]
    pub cgroups: Option<String>,
}

impl Evidence {
    /// Whose coverage it is, in words.
    pub fn whose(&self) -> String {
        whose(self.cgroups.as_deref())
    }
}

/// Whose coverage the evidence is: the cgroups `--cgroup` selects, else the watched processes.
pub fn whose(cgroups: Option<&str>) -> String {
    match cgroups {
        Some(m) => format!("cgroups {{{m}}}"),
        None => "watched processes".into(),
    }
}

/// Each group's mean coverage over a window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowCoverage {
    pub canary: Option<f64>,
    pub baseline: Option<f64>,
}

/// One kind of kernel activity, as a window mean per group (`None`: no series).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KernelRow {
    pub name: String,
    pub canary: Option<f64>,
    pub baseline: Option<f64>,
    /// `ratio`, `/s` or `s/s`.
    pub unit: String,
    /// The same over the before window, when one was given.
    #[serde(default)]
    pub canary_before: Option<f64>,
    #[serde(default)]
    pub baseline_before: Option<f64>,
}

/// The judged window: blocks start at `start` (the change plus the burn-in) and are `interval`
/// seconds long; a partial last interval is left out.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    pub start: f64,
    pub end: f64,
    pub interval: f64,
}

/// How much the blocks were autocorrelated, and what was done about it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Autocorrelation {
    /// Lag-1 autocorrelation of the per-step log-ratio (why samples are not blocks).
    pub per_step: Option<f64>,
    /// Lag-1 autocorrelation of the blocks.
    pub blocks: Option<f64>,
    /// The same, corrected for its small-sample bias and capped at 0.95: what the interval
    /// pays for (0 when negative).
    pub corrected: f64,
    /// The factor the interval was widened by, √((1+ρ)/(1−ρ)) (1 = not widened).
    pub widened: f64,
}

/// One host's series of one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostRow {
    pub host: String,
    pub canary: bool,
    /// Mean of the host's samples over the judged window.
    pub mean: f64,
    pub samples: usize,
    /// Mean over the before window, when one was given and the host has samples in it.
    #[serde(default)]
    pub before_mean: Option<f64>,
}

/// What the before window says about one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BeforeWindow {
    pub blocks: usize,
    /// Intervals of the before window where one group had no sample.
    pub missing: usize,
    pub canary_typical: Option<f64>,
    pub baseline_typical: Option<f64>,
    /// The canary/baseline ratio over the before window, percent (Hodges–Lehmann of its blocks,
    /// widened for their autocorrelation), at the level of the metric's verdict.
    pub ratio: Option<Estimate>,
    pub autocorrelation: Autocorrelation,
}

/// One metric's judgement.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricJudgement {
    pub name: String,
    pub better: Better,
    pub critical: bool,
    pub canary_hosts: usize,
    pub baseline_hosts: usize,
    pub samples: u64,
    /// Median over blocks of each group's value.
    pub canary_typical: Option<f64>,
    pub baseline_typical: Option<f64>,
    /// Intervals of the window where one group had no sample.
    pub missing: usize,
    pub autocorrelation: Autocorrelation,
    /// The change on the canary against the baseline, percent, with its verdict; `None` with
    /// `why_not`. With a before window: the after ratio over the before ratio.
    pub contrast: Option<Contrast>,
    /// The canary/baseline ratio over the judged window, time-paired, percent: what these hosts
    /// did (with a before window, shown beside the before ratio).
    pub after_ratio: Option<Estimate>,
    pub before: Option<BeforeWindow>,
    /// How host-to-host variation entered the interval.
    pub composition: Option<Composition>,
    pub hosts: Vec<HostRow>,
    pub why_not: Option<String>,
}

/// The verdict over every metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Overall {
    Better,
    Worse,
    Equivalent,
    Inconclusive,
    Flagged,
}

/// Whether the groups are different hosts, or one host in alternating periods (switchback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Groups {
    Hosts,
    OneHost,
}

/// What the verdict's interval rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Paired by time: the hosts spread no more than time explains.
    TimePaired,
    /// Hosts as units: they spread more than time explains.
    HostsAsUnits,
    /// One host in both groups (switchback): paired by time, nothing to compose.
    OneHost,
    /// Fewer than two hosts in a group and no before window: no interval.
    TooFewHosts,
}

/// How hosts entered the interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Composition {
    pub basis: Basis,
    /// Hosts that are units of the hosts' view, per group (with a before window: hosts with
    /// samples in both windows).
    pub canary_units: usize,
    pub baseline_units: usize,
    /// Standard errors of the two views on the log scale (the time-paired one widened for
    /// autocorrelation).
    pub se_time: Option<f64>,
    pub se_hosts: Option<f64>,
    /// SD of the host values within their groups, percent (pooled).
    pub host_sd_percent: Option<f64>,
    /// The hosts' view in percent at the verdict's level, with its Welch degrees of freedom.
    pub hosts: Option<Estimate>,
    pub df: Option<f64>,
}

impl Window {
    pub fn intervals(&self) -> usize {
        ((self.end - self.start) / self.interval).floor().max(0.0) as usize
    }
}
