//! The built-in workloads by name, as planned and stored; running them is `workload`'s.

use crate::metric::Metric;
use std::str::FromStr;

pub const WORKLOAD_NAMES: &str = "touch, chase, pretouch, stream, fault, tlb";

/// A built-in microbenchmark.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Independent random byte reads, ns/op.
    Touch,
    /// Dependent pointer chase through random cache lines, ns/load.
    Chase,
    /// Map, first-touch every base page (commit) and unmap (free), GB/s each.
    Pretouch,
    /// Sequential read and write bandwidth, GB/s.
    Stream,
    /// First-touch cost, ns per 4 KiB.
    Fault,
    /// Dependent loads of one cache line per 4 KiB page in random order, ns/access: the
    /// region's size is the span, so a size sweep finds the TLB's reach.
    Tlb,
}

impl Workload {
    pub const ALL: [Workload; 6] = [
        Workload::Touch,
        Workload::Chase,
        Workload::Pretouch,
        Workload::Stream,
        Workload::Fault,
        Workload::Tlb,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Touch => "touch",
            Workload::Chase => "chase",
            Workload::Pretouch => "pretouch",
            Workload::Stream => "stream",
            Workload::Fault => "fault",
            Workload::Tlb => "tlb",
        }
    }

    /// Whether it runs on a prepared, resident region (else it maps its own each iteration).
    pub fn uses_resident_region(self) -> bool {
        matches!(
            self,
            Workload::Touch | Workload::Chase | Workload::Stream | Workload::Tlb
        )
    }

    pub fn metrics(self) -> &'static [Metric] {
        match self {
            Workload::Touch => &[Metric::TouchNs],
            Workload::Chase => &[Metric::ChaseNs],
            Workload::Pretouch => &[Metric::CommitGbs, Metric::FreeGbs],
            Workload::Stream => &[Metric::ReadGbs, Metric::WriteGbs],
            Workload::Fault => &[Metric::FaultNs],
            Workload::Tlb => &[Metric::TlbNs],
        }
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("unknown workload {s:?}; valid workloads: {WORKLOAD_NAMES}"))
    }
}
