//! The perf events hugelab counts, by name, and whether this machine can count them.

/// A counter hugelab may open, with the encoding perf_event_open needs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PerfEvent {
    PageFaults,
    Cycles,
    Instructions,
    DtlbLoads,
    DtlbLoadMisses,
    DtlbStoreMisses,
    ItlbLoadMisses,
    /// Cycles with a data page walk in progress (model-specific raw event).
    DtlbWalkCycles,
    /// Cycles with an instruction page walk in progress (model-specific raw event).
    ItlbWalkCycles,
}

impl PerfEvent {
    pub const HARDWARE: [PerfEvent; 8] = [
        PerfEvent::Cycles,
        PerfEvent::Instructions,
        PerfEvent::DtlbLoads,
        PerfEvent::DtlbLoadMisses,
        PerfEvent::DtlbStoreMisses,
        PerfEvent::ItlbLoadMisses,
        PerfEvent::DtlbWalkCycles,
        PerfEvent::ItlbWalkCycles,
    ];

    /// Its key in stored evidence and analyses (the serde name).
    pub fn key(self) -> &'static str {
        match self {
            PerfEvent::PageFaults => "page_faults",
            PerfEvent::Cycles => "cycles",
            PerfEvent::Instructions => "instructions",
            PerfEvent::DtlbLoads => "dtlb_loads",
            PerfEvent::DtlbLoadMisses => "dtlb_load_misses",
            PerfEvent::DtlbStoreMisses => "dtlb_store_misses",
            PerfEvent::ItlbLoadMisses => "itlb_load_misses",
            PerfEvent::DtlbWalkCycles => "dtlb_walk_cycles",
            PerfEvent::ItlbWalkCycles => "itlb_walk_cycles",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PerfEvent::PageFaults => "page-faults",
            PerfEvent::Cycles => "cycles",
            PerfEvent::Instructions => "instructions",
            PerfEvent::DtlbLoads => "dTLB-loads",
            PerfEvent::DtlbLoadMisses => "dTLB-load-misses",
            PerfEvent::DtlbStoreMisses => "dTLB-store-misses",
            PerfEvent::ItlbLoadMisses => "iTLB-load-misses",
            PerfEvent::DtlbWalkCycles => "dtlb-walk-cycles",
            PerfEvent::ItlbWalkCycles => "itlb-walk-cycles",
        }
    }
}

/// Whether hardware counters can be opened for this process, and why not.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PmuCapability {
    pub hardware_counters: bool,
    pub tlb_counters: bool,
    pub walk_cycle_events: bool,
    pub software_counters: bool,
    /// Why hardware counters are unavailable, with the fix where there is one.
    pub reason: Option<String>,
    pub perf_event_paranoid: Option<i64>,
}
