//! The TLB's reach measured by timing (`bench tlb`, `analyze::tlb` finds the knees).
use crate::model::arm::backing::Backing;
use crate::model::machine::tlb::TlbGeometry;
use crate::stats::Estimate;

/// A span is past the reach when huge pages are faster by at least this share, with the
/// bench's confidence (the ratio's whole interval below 1 − 5%).
pub const FASTER_BY: f64 = 0.05;

/// A span whose table shows the huge backing this much faster with confidence is past the
/// reach whatever the resampling says: the reach never lies beyond it.
pub const SURELY_PAST_BY: f64 = 0.10;

/// One span: both backings' times and their paired ratio.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// 4 KiB pages in the span (one access each per cycle).
    pub pages: u64,
    /// Mean ns per access on 4 KiB pages and on the huge backing.
    pub base_ns: f64,
    pub huge_ns: f64,
    /// Huge over 4 KiB, paired by round, with its interval.
    pub ratio: Estimate,
    /// What 4 KiB pages cost per access beyond the huge backing, ns (from the ratio's interval
    /// at the huge backing's mean).
    pub extra_ns: Estimate,
    /// That cost as a share of an access whose translation hits (the huge backing's time);
    /// `None` in benches stored before it was kept.
    #[serde(default)]
    pub extra_share: Option<f64>,
}

/// One huge backing against 4 KiB pages across the spans.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sweep {
    pub backing: Backing,
    pub points: Vec<Point>,
    /// The reach of the 4 KiB TLB in pages, as the range `located` states: more than the
    /// first, at most the second (`None`: no knee within the spans measured, or one the noise
    /// may put beyond the largest).
    pub knee: Option<(u64, u64)>,
    /// How the knee was located over the whole sweep, and how sure that is (`None` in runs
    /// stored before it was located this way).
    #[serde(default)]
    pub located: Option<Located>,
    /// Every level of the 4 KiB TLB the timing resolves, smallest first: the knee is the first;
    /// each later one is a further step in what 4 KiB pages cost after a plateau.
    #[serde(default)]
    pub levels: Vec<MeasuredLevel>,
}

/// The knee located over the whole sweep: the rounds of every span resampled together
/// (a percentile bootstrap), the knee found in each resample by a rule that one noisy span
/// cannot move, and the range of spans that holds it at the bench's confidence.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Located {
    /// The confidence of the range (the bench's).
    pub confidence: f64,
    pub resamples: usize,
    /// In 4 KiB pages: the knee lies above the first and at most at the second in
    /// `confidence` of the resamples; the second is `None` when that share reaches beyond the
    /// largest span (some resamples found no knee).
    pub between: (u64, Option<u64>),
    /// The share of resamples that found no knee within the spans.
    pub no_knee: f64,
    /// The range is within two doublings of span (a factor of 4) and has an upper end.
    pub resolved: bool,
    /// The first span the table shows the huge backing ≥ 10% faster at with confidence (its
    /// interval below 0.90): the range's upper end never lies beyond it.
    pub surely_past: Option<u64>,
    /// Rounds that would settle every span inside the range on one side of the 5% rule, from
    /// each span's own interval (half-widths shrink as 1/√rounds); `None` when a span sits on
    /// the rule itself or the range is settled.
    pub rounds_to_resolve: Option<usize>,
}

/// One TLB level as timing finds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeasuredLevel {
    /// 1 for the smallest (the first-level data TLB), then 2, …
    pub level: u8,
    /// Its entries for 4 KiB pages: more than the last span that still hit it, at most the
    /// first that missed.
    pub entries: (u64, u64),
    /// Its reach on 4 KiB pages, bytes (entries × 4 KiB).
    pub reach_4k: (u64, u64),
    /// What 4 KiB pages cost per access beyond the huge backing once they miss this level: the
    /// second span past it (the first may miss only in part), ns with its interval.
    pub miss_ns: Estimate,
}

/// What `bench tlb` found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TlbReach {
    pub sweeps: Vec<Sweep>,
    /// The sweep the answer is read from: hugetlb 2 MiB, else THP, else the first.
    pub headline: Option<usize>,
    /// What CPUID declares, and whether the measured knee agrees with it.
    pub geometry: TlbGeometry,
    pub agreement: Option<Agreement>,
    /// A guest of a hypervisor: each miss walks the guest's and the host's tables.
    pub hypervisor: bool,
    /// The range set against this host's earlier `bench tlb` runs at the same level (`None`
    /// for a bench decided again at another level, or one stored before runs were compared).
    #[serde(default)]
    pub across: Option<AcrossRuns>,
}

/// Runs a study of the range across runs takes on one host before its printed level is said to
/// hold between runs, not only within one.
pub const STUDY_RUNS: usize = 10;

/// The headline range of this host's `bench tlb` runs at one level, this run last: one run's
/// resampling cannot see the host's state moving between runs, so each range is set against
/// every other's.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AcrossRuns {
    pub runs: Vec<RunRange>,
    /// The span every range shares, 4 KiB pages (above the first, at most the second; `None`:
    /// past the largest span), when every pair of them overlaps.
    pub common: Option<(u64, Option<u64>)>,
    /// Two runs whose ranges do not overlap (indices into `runs`), when some do not.
    pub apart: Option<(usize, usize)>,
}

/// One run's headline range.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRange {
    /// Its stored run (`None`: the bench being printed, not yet stored).
    pub run: Option<i64>,
    pub created: String,
    /// 4 KiB pages: the knee lies above the first and at most at the second (`None`: past the
    /// largest span).
    pub between: (u64, Option<u64>),
    pub resolved: bool,
}

/// A reach `bench tlb` stored: which run, when, and what it found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    pub run: i64,
    pub created: String,
    pub reach: TlbReach,
}

/// A run's "why" against the TLB reach `bench tlb` measured here: what the model was given, kept
/// with the run so that every view says what the run said (built by `analyze::tlb::why`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunWhy {
    /// The reach the run was read against (the latest `bench tlb` when the run ended).
    pub measured: Measured,
    /// Per arm: the TLB entries its memory needs on the pages it was on, against the reach.
    pub needs: Vec<Need>,
    /// `run --hot`: the entries are of the memory each load referenced (up to `hot_bytes`);
    /// else of all the memory that matters.
    pub hot: bool,
    pub hot_bytes: u64,
    /// The largest memory that matters of any arm, bytes.
    pub matters_bytes: u64,
    /// The primary metric, where none of its contrasts resolved a direction (the model then
    /// explains nothing and says what it predicts).
    pub unresolved: Option<String>,
    /// A sweep's rows whose `size=N` is read as the bytes they touch, against the reach.
    pub rows: Vec<Need>,
}

/// Memory's TLB entries on the pages it was on, against the measured 4 KiB reach (a model,
/// built by `analyze::tlb::needs`): how many times the reach they are, and where they fall among
/// the levels the timing resolved.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Need {
    /// The arm, the backing, or the row (`size=1000000`).
    pub name: String,
    pub entries: u64,
    /// The entries over the reach's upper and lower end: both below 1, within it; the first
    /// below 1, at its edge.
    pub times: (f64, f64),
    /// Where the timing resolved two levels or more: the levels the entries are past (0:
    /// within the first) and the level they fall within (`None`: past the last one measured).
    pub level: Option<(usize, Option<u8>)>,
}

/// The declared reach beside the measured one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Agreement {
    pub level: u8,
    pub entries: u32,
    /// Whether the declared entries fall within the measured knee (a step either side).
    pub agrees: bool,
}

impl Point {
    pub fn past_reach(&self) -> bool {
        self.ratio.hi.is_some_and(|hi| hi < 1.0 - FASTER_BY)
    }
}

impl Sweep {
    /// The first span past the knee, and the largest span.
    pub fn past(&self) -> (Option<&Point>, Option<&Point>) {
        let Some((_, hi)) = self.knee else {
            return (None, None);
        };
        (
            self.points.iter().find(|p| p.pages == hi),
            self.points.last().filter(|p| p.past_reach()),
        )
    }
}

impl TlbReach {
    pub fn headline(&self) -> Option<&Sweep> {
        self.headline.map(|i| &self.sweeps[i])
    }

    /// The measured reach in 4 KiB entries, as (at least, at most).
    pub fn entries_4k(&self) -> Option<(u64, u64)> {
        self.headline()?.knee
    }
}
