//! A trial's evidence, typed: what `run` gathered around one trial and stores with it. Every
//! field is lenient (absent in a run stored by an earlier version: its default), and one that
//! an earlier version stored in another shape is dropped on reading rather than failing the run.

use crate::model::arm::condition::Restored;
use crate::model::arm::spec::Expect;
use crate::model::trace::TraceWindow;
use crate::model::trial::gathered::EventView;
use crate::model::trial::gathered::TrialEvidence;
use crate::model::trial::load::LoadMetric;
use crate::model::trial::outcome::TrialOutcome;
use crate::model::trial::server::ServerEnd;
use crate::model::trial::server::{GroupMemory, LoadView};

/// Everything stored with one trial.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// The load's process: times, rusage, how it ended.
    #[serde(flatten)]
    pub outcome: TrialOutcome,
    /// Gathered around it: memory walks, perf counts, kernel counter deltas, noise.
    #[serde(flatten)]
    pub gathered: TrialEvidence,
    /// `--metric`s the output did not have (a failed trial).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_metrics: Vec<String>,
    /// A failed trial's last lines of standard error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// Whether the memory that matters got the pages asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backing: Option<Judgment>,
    /// Why the load format's parser could not read the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_at_start: Option<MachineAtStart>,
    /// (page size, pages in the pool) at the trial's start, for the arm's pool sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pools: Option<Vec<(u64, u64)>>,
    /// A `--during` event's view, and what the server said of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EventEvidence>,
    /// Metrics the load's results named (JMH rows), with their directions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_metrics: Option<Vec<LoadMetric>>,
    /// The server lifetime this trial ran in (services).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<usize>,
    /// The replica of its arm, when an arm ran several servers at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<usize>,
    /// The server read after the load (services).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerEvidence>,
    /// A service trial's load: its last lines of output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub load_output_tail: Vec<String>,
    /// Why the trial failed, in words (a server that did not come up, QEMU without its RAM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The `watch=` process read after the trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<Watched>,
    /// `--trace`: the trial's window of latencies and counts, and records the kernel dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceWindow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_lost: Option<u64>,
    /// The burst length the load ran for, seconds (warm design with a `{burst}` in the load):
    /// the pilot measures two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_s: Option<u64>,
    /// Every arm's burst of this block ran at once (the machine-wide counters are theirs
    /// together).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duet: bool,
    /// The `--condition` brought back before the trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<ConditionStamp>,
    /// A `bench` cell's coverage of its region (bench runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::model::bench::Coverage>,
    /// Imported from another tool's results (hyperfine): only its times and exit codes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub imported: bool,
    /// Read back: the stored fields this version could not read, by path (a field an earlier
    /// version stored in another shape, or one this version no longer has); never stored.
    #[serde(skip)]
    pub unread: Vec<String>,
}

impl From<serde_json::Value> for Evidence {
    /// Evidence as JSON (stored, exported, imported): see [`Evidence::decode`].
    fn from(v: serde_json::Value) -> Evidence {
        if !v.is_object() {
            return Evidence::default();
        }
        // Counters never gathered (a bench cell, a server that did not come up) were not read.
        let counted = v.get("kernel_counters").is_some();
        // Read in place (a stored run's every trial passes here): no copy unless it fails.
        let e: Evidence = match serde::Deserialize::deserialize(&v) {
            Ok(e) => e,
            Err(_) => {
                let serde_json::Value::Object(mut map) = v.clone() else {
                    return Evidence::default();
                };
                map.retain(|k, v| {
                    let one = [(k.clone(), v.clone())].into_iter().collect();
                    serde_json::from_value::<Evidence>(serde_json::Value::Object(one)).is_ok()
                });
                serde_json::from_value(serde_json::Value::Object(map)).unwrap_or_default()
            }
        };
        let unread = unread_of(&v, &e);
        Evidence {
            gathered: TrialEvidence {
                kernel_read: e.gathered.kernel_read && counted,
                ..e.gathered
            },
            unread,
            ..e
        }
    }
}

/// The fields of `stored` that `read` (the evidence read from it) lost, by path. A stored false,
/// zero or empty value is what this version reads where the field is absent, and what it leaves
/// out when it writes: nothing lost.
fn unread_of(stored: &serde_json::Value, read: &Evidence) -> Vec<String> {
    fn informative(v: &serde_json::Value) -> Option<serde_json::Value> {
        use serde_json::Value;
        match v {
            Value::Bool(false) | Value::Null => None,
            Value::Number(n) if n.as_f64() == Some(0.0) => None,
            Value::String(s) if s.is_empty() => None,
            Value::Array(a) => Some(Value::Array(
                a.iter()
                    .map(|e| informative(e).unwrap_or(Value::Null))
                    .collect(),
            )),
            Value::Object(o) => Some(Value::Object(
                o.iter()
                    .filter_map(|(k, v)| Some((k.clone(), informative(v)?)))
                    .collect(),
            )),
            v => Some(v.clone()),
        }
    }
    let read = serde_json::to_value(read).unwrap_or_default();
    match crate::model::stored::unread_fields(stored, &read).is_empty() {
        true => Vec::new(),
        false => {
            crate::model::stored::unread_fields(&informative(stored).unwrap_or_default(), &read)
        }
    }
}

impl Evidence {
    /// Read stored evidence: every field that decodes, each that does not (an earlier version's
    /// shape) dropped and named in `unread`. Not JSON at all reads as nothing gathered.
    pub fn decode(json: &str) -> Evidence {
        serde_json::from_str::<serde_json::Value>(json)
            .map(Evidence::from)
            .unwrap_or_default()
    }

    /// The memory the trial is judged on: a service's server tree after the load, a command's
    /// own group at its peak.
    pub fn coverage_at_peak(&self) -> Option<f64> {
        match &self.server {
            Some(s) => s.coverage,
            None => self.gathered.memory.coverage_at_peak,
        }
    }

    /// Hugetlb bytes the trial's memory held: committed to the server, or the command's peak.
    pub fn hugetlb_bytes(&self) -> u64 {
        match &self.server {
            Some(s) => s.memory.hugetlb_committed,
            None => self.gathered.memory.peak_hugetlb,
        }
    }

    /// The load's CPU time, ns.
    pub fn load_cpu_ns(&self) -> u64 {
        self.outcome.user_ns + self.outcome.sys_ns
    }
}

/// The state a share of the memory that matters on the pages asked for stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// The memory that matters is on the pages asked for.
    Got,
    /// Some of it is, some of it fell back.
    Partial,
    /// It is not: FLAGGED.
    FellBack,
}

/// The judgment of one trial's (or one reading's) memory.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Judgment {
    pub state: State,
    /// Share of the memory that matters on the pages asked for (4 KiB arms: on huge pages).
    pub share: f64,
    /// Resident bytes of the memory that matters, and of them on the pages asked for.
    pub matters: u64,
    pub on_asked: u64,
    /// One sentence: what the memory that matters is on, and who fell short.
    pub why: String,
    /// The page size the pages asked for are (4 KiB arms: 4096; THP and unsized hugetlb:
    /// 2 MiB): with `matters` and `on_asked`, the TLB entries the memory needs now.
    #[serde(default)]
    pub page_size: u64,
}

impl Judgment {
    /// TLB entries the memory that matters needs on the pages it is on: one per page asked
    /// for, one per 4 KiB for the rest.
    pub fn entries(&self) -> u64 {
        if self.page_size > 4096 {
            self.on_asked / self.page_size + (self.matters - self.on_asked.min(self.matters)) / 4096
        } else {
            self.matters / 4096
        }
    }
}

/// The machine's memory at a trial's start: what the workload could get.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MachineAtStart {
    /// MemAvailable, bytes.
    pub mem_available: u64,
    /// Free 2 MiB blocks (order 9 and above, counted in 2 MiB blocks) over every zone but DMA.
    pub free_2m_blocks: u64,
    /// The unusable free space index at order 9 (0: every free page is in a 2 MiB block; 1:
    /// none is).
    pub unusable_2m: Option<f64>,
}

/// A `--during` event as the trial saw it, and what the server reported of its fork.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EventEvidence {
    #[serde(flatten)]
    pub view: EventView,
    pub fork_s: Option<f64>,
    pub server_cow_bytes: Option<u64>,
}

/// The `--condition` a trial ran under, as brought back before it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ConditionStamp {
    pub name: String,
    pub restored: Restored,
}

/// A service trial's server, read after its load (or why it did not come up).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerEvidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
    pub cpu_ns: u64,
    pub memory: GroupMemory,
    pub during_load: LoadView,
    /// Huge coverage of its memory after the load.
    pub coverage: Option<f64>,
    /// Which page sizes carried it, in words.
    pub carried_by: Option<String>,
    pub expect: Option<Expect>,
    /// Whether the server's memory followed the arm's THP policy.
    pub thp_policy: Option<PolicyHeld>,
    /// The server's own words about its pages.
    pub said: Option<ServerSaid>,
    pub end: ServerEnd,
    pub log_tail: Vec<String>,
    /// What the load touched (`--hot`): bytes referenced since the bits were cleared.
    pub hot_bytes: Option<u64>,
    pub hot_refused: Vec<String>,
    /// Why it did not come up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PolicyHeld {
    pub held: bool,
    pub words: String,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerSaid {
    pub server: String,
    pub line: String,
    pub meaning: String,
}

/// What was seen of a `watch=` process after one trial.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Watched {
    pub spec: String,
    pub pid: Option<u32>,
    pub name: Option<String>,
    pub alive: bool,
    pub resident: u64,
    pub huge_bytes: u64,
    /// Huge coverage of the guest RAM for a VM, of all resident memory otherwise.
    pub coverage: Option<f64>,
    /// For a VM: the one-line guest-RAM summary and its reasons.
    pub guest_ram: Option<String>,
    pub reasons: Vec<String>,
    /// The VM declares hugetlb guest RAM (so anything below full coverage is a loss).
    pub declared_hugetlb: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_round_trips_and_an_old_shape_drops_only_its_field() {
        let mut e = Evidence::default();
        e.outcome.wall_ns = 5;
        e.outcome.exit_code = Some(0);
        e.lifetime = Some(2);
        e.duet = true;
        e.server = Some(ServerEvidence {
            coverage: Some(0.5),
            ..Default::default()
        });
        let s = serde_json::to_string(&e).unwrap();
        assert_eq!(Evidence::decode(&s), e);
        // An earlier version's `lifetime` as a string: that field is dropped, the rest kept.
        let old = r#"{"wall_ns": 7, "lifetime": "two", "duet": true}"#;
        let d = Evidence::decode(old);
        assert_eq!((d.outcome.wall_ns, d.lifetime, d.duet), (7, None, true));
        assert_eq!(d.unread, ["lifetime"]);
    }

    #[test]
    fn each_stored_field_this_version_cannot_read_is_named_and_a_default_is_not() {
        // A field in another shape, one this version does not have (at the top and inside a
        // part), and stored defaults this version leaves out when it writes (false, 0, "").
        let old = r#"{"wall_ns": 7, "lifetime": "two", "later": {"x": 1}, "retired": 0,
            "duet": false, "imported": false, "stderr_tail": "",
            "server": {"coverage": 0.5, "gone": [1, 2]}}"#;
        let d = Evidence::decode(old);
        assert_eq!(d.unread, ["later", "lifetime", "server.gone"]);
        assert_eq!(d.server.and_then(|s| s.coverage), Some(0.5));
        // Read whole: nothing named.
        assert!(
            Evidence::decode(r#"{"wall_ns": 7, "duet": true}"#)
                .unread
                .is_empty()
        );
        assert_eq!(Evidence::decode("not json"), Evidence::default());
    }

    #[test]
    fn every_part_a_trial_gathers_reads_back_whole() {
        // Maps keyed by page size and by perf event inside the flattened parts: the shapes a
        // buffered (flattened) read gets wrong unless each is read as JSON holds it.
        use crate::model::trial::server::KernelHuge;
        let group = GroupMemory {
            rss: 5 << 20,
            hugetlb: [(2 << 20, 8 << 20), (1 << 30, 1 << 30)].into(),
            kernel: Some(KernelHuge {
                hugetlb_in_use: [(2 << 20, 8 << 20)].into(),
                hugetlb_reserved: [(2 << 20, 2 << 20)].into(),
                thp_gauges: [("mthp.64K.nr_anon".to_string(), 3)].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut e = Evidence::default();
        e.outcome.exit_code = Some(0);
        e.gathered.memory.at_peak = Some(group.clone());
        e.gathered.memory.peak_hugetlb = 9 << 20;
        e.gathered.perf = [(crate::model::machine::pmu::PerfEvent::PageFaults, 7)].into();
        e.gathered.kernel_counters = [("thp_fault_alloc".to_string(), 2)].into();
        e.gathered.kernel_read = true;
        e.gathered.noise = Some(crate::model::trial::gathered::TrialNoise {
            psi_cpu_some_ns: Some(4),
            ..Default::default()
        });
        e.server = Some(ServerEvidence {
            memory: group,
            ..Default::default()
        });
        e.pools = Some(vec![(2 << 20, 4)]);
        let s = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Evidence>(&s).unwrap(), e, "{s}");
        assert_eq!(Evidence::decode(&s), e, "{s}");
    }
}
