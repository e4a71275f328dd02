//! A stored trial as the analysis reads it (`TrialData`, from its evidence), and whether a
//! command's arm got the pages it asked for (`judge_trial`).

use super::matters::{self, Judgment};
use crate::backing::arm::Expect;
use crate::collect::sampler::MemorySamples;
pub use crate::model::analysis::{TrialCondition, TrialData, TrialEvent};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Per key, the mean over maps, a key a map lacks counting 0 there (a counter that did not move).
pub(super) fn means_by_key<'a>(
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
        // Not read (an unreadable /proc/vmstat) is not "nothing moved".
        kernel: evidence["kernel_counters"]
            .as_object()
            .filter(|_| evidence["kernel_read"] != false)
            .map(numbers),
        // Every arm's burst of a duet block ran at once: the machine-wide counters are theirs
        // together.
        kernel_shared: evidence["duet"] == true,
        gauges: match evidence.get("server") {
            Some(s) => s["memory"]["kernel"]["thp_gauges"].as_object(),
            None => evidence["memory"]["gauges_at_peak"].as_object(),
        }
        .map(numbers)
        .unwrap_or_default(),
        event: evidence
            .get("event")
            .filter(|e| e.is_object())
            .map(|e| TrialEvent {
                ran: e["ran"].as_bool().unwrap_or(false),
                ok: e["ok"].as_bool().unwrap_or(false),
                output: e["output"].as_str().unwrap_or("").to_string(),
            }),
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
fn trial_condition(evidence: &serde_json::Value) -> Option<TrialCondition> {
    let name = evidence["condition"]["name"].as_str()?;
    let at = &evidence["machine_at_start"];
    let stalls_ms =
        serde_json::from_value::<crate::analyze::trace::TraceWindow>(evidence["trace"].clone())
            .map(|w| {
                w.latencies
                    .iter()
                    .map(|l| (l.kind.clone(), l.hist.total_ns as f64 / 1e6))
                    .collect()
            })
            .unwrap_or_default();
    Some(TrialCondition {
        name: name.to_string(),
        kernel_read: evidence["kernel_read"] != false,
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
