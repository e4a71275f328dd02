//! Analysis of an A/B/n experiment (`run`, `results show`): per arm and metric a summary and
//! diagnostics; per non-baseline arm the contrast and verdict (paired over complete blocks, or
//! unpaired for imported runs); per arm the backing evidence, the flag for a configuration
//! that did not take effect, and how much of the spread the machine's noise explains.

use super::diagnostics::{Diagnostics, diagnose};
use super::lifetimes::{Components, Placed, components, lifetime_means};
use super::matters::{self, Judgment};
use super::stats::{Summary, summarize};
use super::verdict::{Better, Contrast, Design, contrasts, unpaired_contrasts};
use crate::backing::arm::Expect;
use crate::collect::sampler::MemorySamples;
use crate::units::Bytes;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialData {
    pub block: usize,
    pub arm: usize,
    pub ok: bool,
    pub flagged: Option<String>,
    pub metrics: BTreeMap<String, f64>,
    /// Huge coverage of the child's memory at its peak resident size.
    pub coverage_at_peak: Option<f64>,
    /// The largest huge coverage any walk of the trial saw (commands).
    #[serde(default)]
    pub max_coverage: Option<f64>,
    /// perf counts of the trial (page_faults, dtlb_load_misses, …).
    #[serde(default)]
    pub counters: BTreeMap<String, f64>,
    /// What else the machine did during the trial, seconds: `steal_s`, `other_cpu_s`,
    /// `psi_cpu_some_s`.
    #[serde(default)]
    pub noise: BTreeMap<String, f64>,
    /// The server lifetime the trial ran in (`run --server`, warm design): blocks are nested
    /// in lifetimes and the lifetime is the unit of replication.
    #[serde(default)]
    pub lifetime: Option<usize>,
    /// The trial's backing judgment (`analyze::matters`): the share of the memory that matters
    /// on the pages asked for, and why when it was PARTIAL.
    #[serde(default)]
    pub share: Option<f64>,
    #[serde(default)]
    pub partial: Option<String>,
    /// Resident bytes of the memory that matters, and the TLB entries it needed on its pages.
    #[serde(default)]
    pub matters: Option<u64>,
    #[serde(default)]
    pub entries: Option<u64>,
    /// `run --hot`: bytes the server's load referenced.
    #[serde(default)]
    pub hot: Option<u64>,
    /// `run --condition`: the machine state the trial ran in, and the kernel's work during it.
    #[serde(default)]
    pub condition: Option<super::conditions::TrialCondition>,
    /// The kernel's huge-page counter deltas during the trial, machine-wide (a counter absent
    /// did not move); `None`: not read.
    #[serde(default)]
    pub kernel: Option<BTreeMap<String, f64>>,
    /// The mTHP gauges (`mthp.<size>.nr_anon_partially_mapped`, …) at the trial's peak
    /// (commands) or after its load (servers).
    #[serde(default)]
    pub gauges: BTreeMap<String, f64>,
}

/// Per key, the mean over maps, a key a map lacks counting 0 there (a counter that did not move).
fn means_by_key<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, f64>>,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut n = 0usize;
    for m in maps {
        n += 1;
        for (k, v) in m {
            *sums.entry(k.clone()).or_default() += v;
        }
    }
    sums.into_iter().map(|(k, s)| (k, s / n as f64)).collect()
}

/// The mean of some values, `None` without any.
fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// A stored trial's evidence (the JSON `run` writes) as the analysis sees it.
pub fn trial_data(
    block: i64,
    arm: i64,
    ok: bool,
    flagged: Option<String>,
    metrics: BTreeMap<String, f64>,
    evidence: &serde_json::Value,
) -> TrialData {
    let nums = |v: &serde_json::Value, scale: f64, rename: &dyn Fn(&str) -> String| {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((rename(k), v.as_f64()? * scale)))
                    .collect()
            })
            .unwrap_or_default()
    };
    TrialData {
        block: block.max(0) as usize,
        arm: arm as usize,
        ok,
        flagged,
        metrics,
        // A service's evidence is its server's tree after the load, not the load's client.
        coverage_at_peak: match evidence.get("server") {
            Some(s) => s["coverage"].as_f64(),
            None => evidence["memory"]["coverage_at_peak"].as_f64(),
        },
        max_coverage: match evidence.get("server") {
            Some(_) => None,
            None => evidence["memory"]["max_coverage"].as_f64(),
        },
        share: evidence["backing"]["share"].as_f64(),
        matters: evidence["backing"]["matters"].as_u64(),
        hot: evidence["server"]["hot_bytes"].as_u64(),
        entries: serde_json::from_value::<crate::analyze::matters::Judgment>(
            evidence["backing"].clone(),
        )
        .ok()
        .filter(|j| j.page_size > 0)
        .map(|j| j.entries()),
        partial: (evidence["backing"]["state"] == "partial")
            .then(|| evidence["backing"]["why"].as_str().map(String::from))
            .flatten(),
        counters: nums(&evidence["perf"], 1.0, &|k| k.to_string()),
        noise: nums(&evidence["noise"], 1e-9, &|k| {
            k.strip_suffix("_ns").unwrap_or(k).to_string() + "_s"
        }),
        lifetime: evidence["lifetime"].as_u64().map(|l| l as usize),
        condition: trial_condition(evidence),
        kernel: evidence["kernel_counters"].as_object().map(numbers),
        gauges: match evidence.get("server") {
            Some(s) => s["memory"]["kernel"]["thp_gauges"].as_object(),
            None => evidence["memory"]["gauges_at_peak"].as_object(),
        }
        .map(numbers)
        .unwrap_or_default(),
    }
}

/// The numbers of a JSON object, by key.
fn numbers(m: &serde_json::Map<String, serde_json::Value>) -> BTreeMap<String, f64> {
    m.iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect()
}

/// A trial's condition, when it ran under one: its name, the state at its start, the kernel's
/// compaction and reclaim counters and, when traced, its tree's stall times.
fn trial_condition(evidence: &serde_json::Value) -> Option<super::conditions::TrialCondition> {
    let name = evidence["condition"]["name"].as_str()?;
    let at = &evidence["machine_at_start"];
    let stalls_ms = serde_json::from_value::<super::trace::TraceWindow>(evidence["trace"].clone())
        .map(|w| {
            w.latencies
                .iter()
                .map(|l| (l.kind.clone(), l.hist.total_ns as f64 / 1e6))
                .collect()
        })
        .unwrap_or_default();
    Some(super::conditions::TrialCondition {
        name: name.to_string(),
        free_2m_blocks: at["free_2m_blocks"].as_u64(),
        unusable_2m: at["unusable_2m"].as_f64(),
        mem_available: at["mem_available"].as_u64(),
        kernel: evidence["kernel_counters"]
            .as_object()
            .map(numbers)
            .unwrap_or_default(),
        stalls_ms,
    })
}

/// Whether a command's arm got the pages it asked for, from the walk of its process group at the
/// largest resident memory (`analyze::matters`), with the program's own words about its pages
/// (warnings first: the JVM's "UseLargePages disabled", "Failed to reserve … memory").
/// A peak the walks missed (a short burst seen only by status reads) is judged from the group's
/// share at it. `None`: nothing to judge (4 KiB-indifferent arm, not sampled, too small).
pub fn judge_trial(
    expect: Option<Expect>,
    memory: &MemorySamples,
    stdout: &str,
    stderr: &str,
) -> Option<Judgment> {
    let expect = expect?;
    if memory.walks == 0 || memory.peak_rss < matters::MIN_RESIDENT {
        return None;
    }
    let lines: Vec<&str> = stderr
        .lines()
        .chain(stdout.lines())
        .filter(|l| !l.starts_with("Picked up JAVA_TOOL_OPTIONS"))
        .collect();
    let about = |l: &&&str| {
        let l = l.to_ascii_lowercase();
        l.contains("large page")
            || l.contains("hugetlb")
            || l.contains("huge page")
            || l.contains("uselargepages")
            || (l.contains("failed to reserve") && l.contains("page size"))
    };
    let said = lines
        .iter()
        .filter(about)
        .find(|l| l.to_ascii_lowercase().contains("warn"))
        .or_else(|| lines.iter().find(about))
        .map(|l| format!("the program said: {}", l.trim()));
    if expect == Expect::NoThp {
        // Any walk: THP that came after the peak (a collapse) or went before it still counts.
        let (view, at) = match &memory.most_thp {
            Some(w) => (&w.memory, Some(w.at_s)),
            None => (memory.at_peak.as_ref()?, None),
        };
        let mut j = matters::judge(expect, view, said.as_deref())?;
        if let Some(t) = at.filter(|_| j.state != matters::State::Got) {
            j.why = format!("at a walk {t:.1} s in: {}", j.why);
        }
        return Some(j);
    }
    let view = memory.at_peak.as_ref()?;
    let walked = view.rss + view.hugetlb_total();
    if (walked as f64) >= 0.95 * memory.peak_rss as f64 {
        return matters::judge(expect, view, said.as_deref());
    }
    if !matches!(expect, Expect::Hugetlb(_)) {
        // Status reads cannot see THP: judged at the largest walk only when that walk saw most
        // of the peak; a short peak that fell between walks is not judged at all.
        return ((walked as f64) >= 0.5 * memory.peak_rss as f64)
            .then(|| matters::judge(expect, view, said.as_deref()))
            .flatten();
    }
    // A hugetlb arm whose peak the walks missed: the hugetlb share status reads saw there.
    let share = memory.coverage_at_peak.unwrap_or(0.0);
    let state = matters::classify(share);
    Some(Judgment {
        state,
        share,
        matters: memory.peak_rss,
        on_asked: (share * memory.peak_rss as f64) as u64,
        page_size: match expect {
            Expect::Hugetlb(Some(ps)) => ps,
            _ => 2 << 20,
        },
        why: format!(
            "{:.0}% of {} resident at the peak was on hugetlb pages (status reads: the page-table walks missed the peak){}",
            share * 100.0,
            Bytes(memory.peak_rss),
            said.map(|w| format!("; {w}")).unwrap_or_default()
        ),
    })
}

/// Steal above this share of the trial's CPU capacity marks a trial as taken during heavy steal.
pub const HEAVY_STEAL: f64 = 0.05;

/// How much of one arm's spread the machine's noise sources explain.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoiseAttribution {
    pub arm: String,
    /// Trials with noise readings.
    pub trials: usize,
    /// Share of the variance of log(primary metric) explained by each source alone (R² of a
    /// one-variable least-squares fit), for sources that varied.
    pub r2: BTreeMap<String, f64>,
    /// Mean seconds per trial of each source.
    pub mean_s: BTreeMap<String, f64>,
    /// Trials during which more than [`HEAVY_STEAL`] of the CPU time was stolen.
    pub heavy_steal_trials: usize,
}

fn r_squared(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    if x.len() < 3 {
        return None;
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    (sxx > 0.0 && syy > 0.0).then(|| sxy * sxy / (sxx * syy))
}

/// Per arm: how much of the spread of `metric` steal, other processes' CPU and CPU pressure
/// explain; `cpus` is the machine's CPU count (for the steal share).
pub fn noise_attribution(
    arms: &[String],
    trials: &[TrialData],
    metric: &str,
    cpus: usize,
) -> Vec<NoiseAttribution> {
    (0..arms.len())
        .map(|a| {
            let ts: Vec<&TrialData> = trials
                .iter()
                .filter(|t| t.arm == a && t.ok && !t.noise.is_empty())
                .collect();
            let y: Vec<f64> = ts
                .iter()
                .filter_map(|t| t.metrics.get(metric).filter(|v| **v > 0.0).map(|v| v.ln()))
                .collect();
            let mut out = NoiseAttribution {
                arm: arms[a].clone(),
                trials: ts.len(),
                ..Default::default()
            };
            for src in ["steal_s", "other_cpu_s", "psi_cpu_some_s"] {
                let x: Vec<f64> = ts
                    .iter()
                    .filter_map(|t| t.noise.get(src).copied())
                    .collect();
                if x.is_empty() {
                    continue;
                }
                out.mean_s
                    .insert(src.into(), x.iter().sum::<f64>() / x.len() as f64);
                if x.len() == y.len()
                    && let Some(r2) = r_squared(&x, &y)
                {
                    out.r2.insert(src.into(), r2);
                }
            }
            out.heavy_steal_trials = ts
                .iter()
                .filter(|t| {
                    let wall = t.metrics.get("wall_s").copied().unwrap_or(0.0);
                    let steal = t.noise.get("steal_s").copied().unwrap_or(0.0);
                    wall > 0.0 && steal / (wall * cpus.max(1) as f64) > HEAVY_STEAL
                })
                .count();
            out
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricDef {
    pub name: String,
    pub better: Better,
    /// Recorded and summarised but not a contrast: a quantity the load itself fixes (the wall
    /// time of `pgbench -T`, of a service's timed burst).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context: bool,
    /// What the arm costs, not what it gains (`analyze::costs`: peak memory, CPU time): contrasted
    /// with the same statistics, shown on the answer's cost line and weighed by `advise`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost: bool,
    /// A row of the load's own result table (a JMH benchmark × parameters): one of a family of
    /// rows that is the question, each shown in the answer whatever its verdict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub row: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmMetric {
    pub arm: String,
    pub summary: Option<Summary>,
    pub diagnostics: Diagnostics,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricAnalysis {
    pub metric: MetricDef,
    pub arms: Vec<ArmMetric>,
    /// Non-baseline arm name → contrast vs the baseline (None: too few complete blocks).
    pub contrasts: Vec<(String, Option<Contrast>)>,
    pub complete_blocks: usize,
    /// Warm services: the server lifetimes the contrasts' units came from (0: blocks are the
    /// units), and per contrast the variance components of its per-block log-ratios.
    #[serde(default)]
    pub lifetimes: usize,
    #[serde(default)]
    pub components: Vec<(String, Option<Components>)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmEvidence {
    pub arm: String,
    pub trials: usize,
    pub failed: usize,
    pub flagged: usize,
    pub first_flag: Option<String>,
    /// Trials whose memory that matters was only partly on the pages asked for.
    #[serde(default)]
    pub partial: usize,
    #[serde(default)]
    pub first_partial: Option<String>,
    /// Mean share of the memory that matters on the pages asked for, over judged trials.
    #[serde(default)]
    pub mean_share: Option<f64>,
    pub mean_coverage_at_peak: Option<f64>,
    /// Mean over trials of the largest huge coverage any walk saw.
    #[serde(default)]
    pub mean_max_coverage: Option<f64>,
    /// Mean resident bytes of the memory that matters, and the TLB entries it needs on the
    /// pages it was on (trials whose backing was judged).
    #[serde(default)]
    pub mean_matters: Option<f64>,
    #[serde(default)]
    pub mean_entries: Option<f64>,
    /// `run --hot`: mean bytes the server's load referenced.
    #[serde(default)]
    pub mean_hot: Option<f64>,
    /// Mean perf counts per trial, over trials where they were counted.
    pub mean_counters: BTreeMap<String, f64>,
    /// Mean per trial of the kernel's huge-page counter deltas (machine-wide), over the trials
    /// that read them; the mean of the mTHP gauges at the trials' peaks.
    #[serde(default)]
    pub mean_kernel: BTreeMap<String, f64>,
    #[serde(default)]
    pub mean_gauges: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExperimentAnalysis {
    pub baseline: String,
    pub effect: f64,
    pub confidence: f64,
    /// How the contrasts were computed (fixed, sequential, group-sequential, unpaired).
    #[serde(default)]
    pub design: Design,
    pub metrics: Vec<MetricAnalysis>,
    pub evidence: Vec<ArmEvidence>,
    /// `run --condition`: every condition's own contrasts, the interaction and the state per
    /// arm (the first condition's contrasts are the report's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<super::conditions::ConditionAnalysis>,
}

/// Which of a run's metrics is the primary one — the metric `--fail-on`, `--sequential` and
/// `--looks` decide on, listed first in the answer: wall time is always stored first, so the
/// primary metric is the second (the first `--metric`, or a load parser's first) when there is
/// one, else wall time. Cost metrics (`analyze::costs`) come last and are never primary. The
/// one definition of the rule.
pub fn primary_index<'a>(metrics: impl IntoIterator<Item = &'a MetricDef>) -> usize {
    let gains = metrics.into_iter().filter(|m| !m.cost).count();
    gains.clamp(1, 2) - 1
}

impl ExperimentAnalysis {
    /// The primary metric's report (see [`primary_index`]).
    pub fn primary(&self) -> Option<&MetricAnalysis> {
        self.metrics
            .get(primary_index(self.metrics.iter().map(|m| &m.metric)))
    }
}

/// The units a contrast is analysed over: per-block log-ratios of `arm` vs `baseline` for
/// `metric` over blocks where both succeeded — or, when the blocks ran in server lifetimes
/// (warm services), per lifetime the mean of its blocks' log-ratios (`analyze::lifetimes`).
pub fn log_ratios(trials: &[TrialData], arm: usize, baseline: usize, metric: &str) -> Vec<f64> {
    let placed = placed_log_ratios(trials, arm, baseline, metric);
    if placed.iter().any(|p| p.lifetime != usize::MAX) {
        lifetime_means(&placed)
    } else {
        placed.into_iter().map(|p| p.value).collect()
    }
}

/// Per-block log-ratios with their block and lifetime (`usize::MAX` when not nested).
pub fn placed_log_ratios(
    trials: &[TrialData],
    arm: usize,
    baseline: usize,
    metric: &str,
) -> Vec<Placed> {
    let lifetime = |b: usize| {
        trials
            .iter()
            .find(|t| t.block == b && t.arm == arm)
            .and_then(|t| t.lifetime)
            .unwrap_or(usize::MAX)
    };
    block_log_ratios(trials, arm, baseline, metric)
        .into_iter()
        .map(|(block, value)| Placed {
            lifetime: lifetime(block),
            block,
            value,
        })
        .collect()
}

/// Per-block log-ratios of `arm` vs `baseline`, with the block they came from.
fn block_log_ratios(
    trials: &[TrialData],
    arm: usize,
    baseline: usize,
    metric: &str,
) -> Vec<(usize, f64)> {
    // The trial of arm `a` in block `b` that measured this metric (a bench stores one trial
    // per metric and size, so a block can hold several trials of one arm).
    let value = |b: usize, a: usize| {
        trials
            .iter()
            .filter(|t| t.block == b && t.arm == a && t.ok)
            .find_map(|t| t.metrics.get(metric).copied())
            .filter(|v| *v > 0.0)
    };
    let mut blocks: Vec<usize> = trials.iter().map(|t| t.block).collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks
        .into_iter()
        .filter_map(|b| Some((b, (value(b, arm)? / value(b, baseline)?).ln())))
        .collect()
}

/// A load's result rows (`MetricDef::row`: JMH's benchmark × parameters) are the question
/// together: their contrasts are one family, Holm across rows × arms (computed on the log-ratios
/// as lower-is-better and turned round for the rows better higher: the interval and p-value do
/// not depend on the direction, only the verdict's word does).
fn rows_as_one_family(
    reports: &mut [MetricAnalysis],
    trials: &[TrialData],
    baseline: usize,
    others: &[usize],
    effect: f64,
    confidence: f64,
    design: &Design,
) {
    let rows: Vec<usize> = (0..reports.len())
        .filter(|&i| reports[i].metric.row)
        .collect();
    if rows.len() < 2 {
        return;
    }
    let mut d = Vec::new();
    for &r in &rows {
        for &a in others {
            d.push(log_ratios(trials, a, baseline, &reports[r].metric.name));
        }
    }
    let mut joint = contrasts(&d, effect, confidence, Better::Lower, design).into_iter();
    for &r in &rows {
        let higher = reports[r].metric.better == Better::Higher;
        for (_, c) in reports[r].contrasts.iter_mut() {
            *c = joint.next().flatten().map(|mut c| {
                if higher {
                    c.verdict = match c.verdict {
                        super::verdict::Verdict::Faster => super::verdict::Verdict::Slower,
                        super::verdict::Verdict::Slower => super::verdict::Verdict::Faster,
                        v => v,
                    };
                }
                c
            });
        }
    }
}

/// Every arm's successful values of `metric`, in block order.
fn values(trials: &[TrialData], arm: usize, metric: &str) -> Vec<f64> {
    let mut ts: Vec<&TrialData> = trials.iter().filter(|t| t.arm == arm && t.ok).collect();
    ts.sort_by_key(|t| t.block);
    ts.iter()
        .filter_map(|t| t.metrics.get(metric).copied())
        .collect()
}

pub fn analyse(
    arms: &[String],
    baseline: usize,
    trials: &[TrialData],
    metrics: &[MetricDef],
    effect: f64,
    confidence: f64,
    design: &Design,
) -> ExperimentAnalysis {
    let others: Vec<usize> = (0..arms.len()).filter(|a| *a != baseline).collect();
    let mut metric_reports: Vec<MetricAnalysis> = metrics
        .iter()
        .map(|m| {
            let arm_metrics = (0..arms.len())
                .map(|a| {
                    let v = values(trials, a, &m.name);
                    let covs = trials
                        .iter()
                        .filter(|t| t.arm == a && t.ok)
                        .filter_map(|t| t.coverage_at_peak);
                    let spread = covs.fold(None, |r: Option<(f64, f64)>, c| {
                        Some(r.map_or((c, c), |(lo, hi)| (lo.min(c), hi.max(c))))
                    });
                    ArmMetric {
                        arm: arms[a].clone(),
                        summary: summarize(&v),
                        diagnostics: diagnose(&v, spread),
                    }
                })
                .collect();
            let (cs, complete) = if m.context {
                (Vec::new(), 0)
            } else if *design == Design::Unpaired {
                let logs = |a: usize| -> Vec<f64> {
                    values(trials, a, &m.name)
                        .into_iter()
                        .filter(|v| *v > 0.0)
                        .map(f64::ln)
                        .collect()
                };
                let x: Vec<Vec<f64>> = others.iter().map(|&a| logs(a)).collect();
                let base = logs(baseline);
                let n = x
                    .iter()
                    .map(Vec::len)
                    .chain([base.len()])
                    .min()
                    .unwrap_or(0);
                (
                    unpaired_contrasts(&x, &base, effect, confidence, m.better),
                    n,
                )
            } else {
                let d: Vec<Vec<f64>> = others
                    .iter()
                    .map(|&a| log_ratios(trials, a, baseline, &m.name))
                    .collect();
                let complete = others
                    .iter()
                    .map(|&a| block_log_ratios(trials, a, baseline, &m.name).len())
                    .min()
                    .unwrap_or(0);
                (
                    contrasts(&d, effect, confidence, m.better, design),
                    complete,
                )
            };
            let nested = trials.iter().any(|t| t.lifetime.is_some());
            let comps: Vec<(String, Option<Components>)> = if nested {
                others
                    .iter()
                    .map(|&a| {
                        let p = placed_log_ratios(trials, a, baseline, &m.name);
                        (arms[a].clone(), components(&p))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let lifetimes = if nested {
                others
                    .iter()
                    .map(|&a| log_ratios(trials, a, baseline, &m.name).len())
                    .min()
                    .unwrap_or(0)
            } else {
                0
            };
            MetricAnalysis {
                metric: m.clone(),
                arms: arm_metrics,
                contrasts: others
                    .iter()
                    .zip(cs)
                    .map(|(&a, c)| (arms[a].clone(), c))
                    .collect(),
                complete_blocks: complete,
                lifetimes,
                components: comps,
            }
        })
        .collect();
    if *design != Design::Unpaired {
        rows_as_one_family(
            &mut metric_reports,
            trials,
            baseline,
            &others,
            effect,
            confidence,
            design,
        );
    }
    let evidence = (0..arms.len())
        .map(|a| {
            let ts: Vec<&TrialData> = trials.iter().filter(|t| t.arm == a).collect();
            let covs: Vec<f64> = ts.iter().filter_map(|t| t.coverage_at_peak).collect();
            let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
            for t in &ts {
                for (k, v) in &t.counters {
                    let e = sums.entry(k.clone()).or_insert((0.0, 0));
                    e.0 += v;
                    e.1 += 1;
                }
            }
            ArmEvidence {
                mean_counters: sums
                    .into_iter()
                    .map(|(k, (s, n))| (k, s / n as f64))
                    .collect(),
                arm: arms[a].clone(),
                trials: ts.len(),
                failed: ts.iter().filter(|t| !t.ok).count(),
                flagged: ts.iter().filter(|t| t.flagged.is_some()).count(),
                first_flag: ts.iter().find_map(|t| t.flagged.clone()),
                partial: ts.iter().filter(|t| t.partial.is_some()).count(),
                first_partial: ts.iter().find_map(|t| t.partial.clone()),
                mean_share: {
                    let v: Vec<f64> = ts.iter().filter_map(|t| t.share).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                },
                mean_coverage_at_peak: (!covs.is_empty())
                    .then(|| covs.iter().sum::<f64>() / covs.len() as f64),
                mean_max_coverage: mean(ts.iter().filter_map(|t| t.max_coverage)),
                mean_matters: mean(ts.iter().filter_map(|t| t.matters.map(|v| v as f64))),
                mean_entries: mean(ts.iter().filter_map(|t| t.entries.map(|v| v as f64))),
                mean_hot: mean(ts.iter().filter_map(|t| t.hot.map(|v| v as f64))),
                mean_kernel: means_by_key(ts.iter().filter_map(|t| t.kernel.as_ref())),
                mean_gauges: means_by_key(ts.iter().map(|t| &t.gauges).filter(|g| !g.is_empty())),
            }
        })
        .collect();
    ExperimentAnalysis {
        baseline: arms[baseline].clone(),
        effect,
        confidence,
        design: design.clone(),
        metrics: metric_reports,
        evidence,
        conditions: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
