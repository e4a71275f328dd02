//! A stored trial as the analysis reads it (`TrialData`, from its evidence), and whether a
//! command's arm got the pages it asked for (`judge_trial`).

use super::flagged;
use crate::backing::arm::Expect;
use crate::collect::sampler::MemorySamples;
pub use crate::model::analysis::{TrialCondition, TrialData, TrialEvent};
use crate::model::evidence::{Evidence, Judgment};
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

/// A stored trial's evidence as the analysis sees it.
pub fn trial_data(
    block: i64,
    arm: i64,
    ok: bool,
    flagged: Option<String>,
    metrics: BTreeMap<String, f64>,
    evidence: &Evidence,
) -> TrialData {
    let floats = |m: &BTreeMap<String, u64>| -> BTreeMap<String, f64> {
        m.iter().map(|(k, v)| (k.clone(), *v as f64)).collect()
    };
    let memory = &evidence.gathered.memory;
    let backing = evidence.backing.as_ref();
    TrialData {
        block: block.max(0) as usize,
        arm: arm as usize,
        ok,
        flagged,
        metrics,
        // A service's evidence is its server's tree after the load, not the load's client.
        coverage_at_peak: evidence.coverage_at_peak(),
        max_coverage: match evidence.server {
            Some(_) => None,
            None => memory.max_coverage,
        },
        share: backing.map(|j| j.share),
        matters: backing.map(|j| j.matters),
        hot: evidence.server.as_ref().and_then(|s| s.hot_bytes),
        entries: backing.filter(|j| j.page_size > 0).map(Judgment::entries),
        partial: backing
            .filter(|j| j.state == flagged::State::Partial)
            .map(|j| j.why.clone()),
        counters: evidence
            .gathered
            .perf
            .iter()
            .map(|(e, n)| (e.key().to_string(), *n as f64))
            .collect(),
        noise: evidence
            .gathered
            .noise
            .map(|n| n.seconds())
            .unwrap_or_default(),
        lifetime: evidence.lifetime,
        replica: evidence.replica,
        condition: trial_condition(evidence),
        // Not read (an unreadable /proc/vmstat) is not "nothing moved".
        kernel: evidence
            .gathered
            .kernel_read
            .then(|| floats(&evidence.gathered.kernel_counters)),
        // Every arm's burst of a duet block ran at once: the machine-wide counters are theirs
        // together.
        kernel_shared: evidence.duet,
        gauges: match &evidence.server {
            Some(s) => s
                .memory
                .kernel
                .as_ref()
                .map(|k| floats(&k.thp_gauges))
                .unwrap_or_default(),
            None => floats(&memory.gauges_at_peak),
        },
        event: evidence.event.as_ref().map(|e| TrialEvent {
            ran: e.view.ran,
            ok: e.view.ok,
            output: e.view.output.clone(),
        }),
    }
}

/// A trial's condition, when it ran under one: its name, the state at its start, the kernel's
/// compaction and reclaim counters and, when traced, its tree's stall times.
fn trial_condition(evidence: &Evidence) -> Option<TrialCondition> {
    let name = &evidence.condition.as_ref()?.name;
    let at = evidence.machine_at_start;
    let stalls_ms = evidence
        .trace
        .iter()
        .flat_map(|w| &w.latencies)
        .map(|l| (l.kind.clone(), l.hist.total_ns as f64 / 1e6))
        .collect();
    Some(TrialCondition {
        name: name.clone(),
        kernel_read: evidence.gathered.kernel_read,
        free_2m_blocks: at.map(|a| a.free_2m_blocks),
        unusable_2m: at.and_then(|a| a.unusable_2m),
        mem_available: at.map(|a| a.mem_available),
        kernel: evidence
            .gathered
            .kernel_counters
            .iter()
            .map(|(k, v)| (k.clone(), *v as f64))
            .collect(),
        stalls_ms,
    })
}

/// Whether a command's arm got the pages it asked for, from the walk of its process group at the
/// largest resident memory (`analyze::flagged`), with the program's own words about its pages
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
    if memory.walks == 0 || memory.peak_rss < flagged::MIN_RESIDENT {
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
        let mut j = flagged::judge(expect, view, said.as_deref())?;
        if let Some(t) = at.filter(|_| j.state != flagged::State::Got) {
            j.why = format!("at a walk {t:.1} s in: {}", j.why);
        }
        return Some(j);
    }
    let view = memory.at_peak.as_ref()?;
    let walked = view.rss + view.hugetlb_total();
    if (walked as f64) >= 0.95 * memory.peak_rss as f64 {
        return flagged::judge(expect, view, said.as_deref());
    }
    if !matches!(expect, Expect::Hugetlb(_)) {
        // Status reads cannot see THP: judged at the largest walk only when that walk saw most
        // of the peak; a short peak that fell between walks is not judged at all.
        return ((walked as f64) >= 0.5 * memory.peak_rss as f64)
            .then(|| flagged::judge(expect, view, said.as_deref()))
            .flatten();
    }
    // A hugetlb arm whose peak the walks missed: the hugetlb share status reads saw there.
    let share = memory.coverage_at_peak.unwrap_or(0.0);
    let state = flagged::classify(share);
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
