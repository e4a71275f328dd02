//! What one trial gathered around the workload, as stored with it: memory samples, perf
//! counts, the kernel's counters and the machine's noise; gathering it is `collect`'s.

use crate::model::machine::pmu::PerfEvent;
use crate::model::trial::server::GroupMemory;
use std::collections::BTreeMap;
use std::time::Duration;

fn read_before_recorded() -> bool {
    true
}

/// Everything gathered around one trial (stored with it as evidence).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TrialEvidence {
    pub memory: MemorySamples,
    /// perf counts of the child and its descendants (one group, scaled).
    pub perf: BTreeMap<PerfEvent, u64>,
    /// perf events that could not be opened, with the reason.
    pub perf_unavailable: Vec<String>,
    /// time_running / time_enabled of the perf group (1 = never multiplexed).
    pub perf_running_fraction: Option<f64>,
    /// `thp_*`, `compact_*` and mTHP counters that changed during the trial (system-wide).
    pub kernel_counters: BTreeMap<String, u64>,
    /// Whether /proc/vmstat was read before and after the trial: an empty `kernel_counters` is
    /// then "nothing moved", not "not counted". Runs stored before this was recorded: true.
    #[serde(default = "read_before_recorded")]
    pub kernel_read: bool,
    pub noise: Option<TrialNoise>,
}

/// When to sample. `Schedule::off()` samples nothing.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Schedule {
    pub enabled: bool,
    /// Period of the cheap `/proc/PID/status` reads.
    pub every: Duration,
    /// smaps_rollup walks with a doubling interval (the first at 4·`every`); later walks keep
    /// the last offset as their period.
    #[serde(alias = "max_walks")]
    pub backoff_walks: u32,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            enabled: true,
            every: Duration::from_millis(20),
            backoff_walks: 10,
        }
    }
}

impl Schedule {
    pub fn off() -> Self {
        Schedule {
            enabled: false,
            ..Schedule::default()
        }
    }

    /// Offset from the child's start of its `k`-th smaps_rollup walk (k from 0).
    pub fn walk_time(&self, k: u32) -> Duration {
        let steps = self.backoff_walks.max(1);
        let last = self.every * 4 * 2u32.saturating_pow(steps - 1);
        if k < steps {
            self.every * 4 * 2u32.saturating_pow(k)
        } else {
            last.saturating_mul(k - steps + 2)
        }
    }
}

/// Memory of the child's process group over its life.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MemorySamples {
    /// Cheap status reads that found the group alive.
    pub samples: u64,
    /// smaps_rollup walks done (each one took the child's mmap lock).
    #[serde(default)]
    pub walks: u64,
    /// Time spent in those walks, ns (hugelab's side of the disturbance).
    #[serde(default)]
    pub walk_ns: u64,
    /// Largest resident memory (RSS + hugetlb) seen by any read.
    pub peak_rss: u64,
    pub peak_anon_huge: u64,
    pub peak_hugetlb: u64,
    /// Time-weighted mean of (AnonHugePages + hugetlb) / (Rss + hugetlb) over the walks.
    pub mean_huge_coverage: Option<f64>,
    /// Huge coverage at the walk with the largest resident memory.
    pub coverage_at_peak: Option<f64>,
    /// The group's memory per process and region at the walk with the largest resident memory.
    #[serde(default)]
    pub at_peak: Option<GroupMemory>,
    /// The largest huge coverage any walk saw: above `coverage_at_peak` when huge pages came
    /// and went (a collapse after the peak, a split or an unmap before it).
    #[serde(default)]
    pub max_coverage: Option<f64>,
    /// The walk that saw the most anonymous and shared-memory THP, when it held more than the
    /// peak's walk did.
    #[serde(default)]
    pub most_thp: Option<ThpWalk>,
    /// The kernel's mTHP gauges (`mthp.<size>.nr_anon`, `…nr_anon_partially_mapped`),
    /// machine-wide, read right after the walk with the largest resident memory.
    #[serde(default)]
    pub gauges_at_peak: BTreeMap<String, u64>,
}

/// One walk of the group, kept for the THP it held.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThpWalk {
    /// Seconds after the child's start.
    pub at_s: f64,
    pub memory: GroupMemory,
}

/// What else happened on the machine during one trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TrialNoise {
    /// CPU time stolen by the hypervisor, all CPUs, ns (10 ms resolution).
    pub steal_ns: u64,
    /// Time some runnable task waited for a CPU (PSI `cpu some`), ns; absent without PSI.
    pub psi_cpu_some_ns: Option<u64>,
    /// CPU time of processes other than the child and hugelab, ns (10 ms resolution).
    pub other_cpu_ns: u64,
    /// hugelab's own CPU time during the trial (sampler, readers, waiter), ns.
    pub self_cpu_ns: u64,
}

impl TrialNoise {
    /// Each reading in seconds, named `<field>_s` (PSI only where the kernel has it).
    pub fn seconds(&self) -> std::collections::BTreeMap<String, f64> {
        let s = |ns: u64| ns as f64 / 1e9;
        let mut m = std::collections::BTreeMap::from([
            ("steal_s".to_string(), s(self.steal_ns)),
            ("other_cpu_s".to_string(), s(self.other_cpu_ns)),
            ("self_cpu_s".to_string(), s(self.self_cpu_ns)),
        ]);
        if let Some(p) = self.psi_cpu_some_ns {
            m.insert("psi_cpu_some_s".into(), s(p));
        }
        m
    }
}

/// What the event did, as hugelab saw it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EventView {
    /// False: the load ended before the event's moment (nothing ran).
    pub ran: bool,
    /// When the command started, seconds after the load's start.
    pub at_s: f64,
    /// How long the command itself took, and whether it exited 0.
    pub command_s: f64,
    pub ok: bool,
    /// The command's output (its last 200 characters).
    pub output: String,
    /// The server tree's summed Pss just before the command, and its peak while the processes
    /// the event made lived.
    pub before_bytes: u64,
    pub peak_bytes: u64,
    /// Processes that appeared in the server tree after the command, and how long they were
    /// seen (first to last reading).
    pub children: usize,
    pub child_s: f64,
}

impl EventView {
    /// The memory the event added at its peak (copy-on-write and the child's own), bytes.
    pub fn added_bytes(&self) -> u64 {
        self.peak_bytes.saturating_sub(self.before_bytes)
    }
}

/// Raw evidence of one region's backing.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegionEvidence {
    pub mapped_bytes: u64,
    pub rss_bytes: u64,
    /// smaps AnonHugePages: PMD-mapped THP.
    pub anon_huge_bytes: u64,
    /// smaps Private_Hugetlb + Shared_Hugetlb (not part of Rss).
    pub hugetlb_bytes: u64,
    /// smaps ShmemPmdMapped + FilePmdMapped: file and shared-memory huge pages mapped by PMD.
    #[serde(default)]
    pub file_huge_bytes: u64,
    pub kernel_page_size: u64,
    /// Folio size (bytes) → bytes of the region in folios of that size; `None` without root.
    pub folios: Option<BTreeMap<u64, u64>>,
    /// Why folio sizes are missing.
    pub folio_note: Option<String>,
}
