//! The quantities hugelab's built-in workloads measure, declared once: name, unit and direction
//! A utility beside `units`: the workloads produce them, the statistics and the
//! renderers read them, and neither has to import the other.

/// One measured quantity, declared once: name, unit and direction.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    TouchNs,
    ChaseNs,
    CommitGbs,
    FreeGbs,
    ReadGbs,
    WriteGbs,
    FaultNs,
    TlbNs,
}

impl Metric {
    pub fn label(self) -> &'static str {
        match self {
            Metric::TouchNs => "touch",
            Metric::ChaseNs => "chase",
            Metric::CommitGbs => "pretouch commit",
            Metric::FreeGbs => "pretouch free",
            Metric::ReadGbs => "stream read",
            Metric::WriteGbs => "stream write",
            Metric::FaultNs => "fault",
            Metric::TlbNs => "tlb",
        }
    }
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TouchNs => "ns/op",
            Metric::ChaseNs => "ns/load",
            Metric::CommitGbs | Metric::FreeGbs | Metric::ReadGbs | Metric::WriteGbs => "GB/s",
            Metric::FaultNs => "ns/4KiB",
            Metric::TlbNs => "ns/access",
        }
    }
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::CommitGbs | Metric::FreeGbs | Metric::ReadGbs | Metric::WriteGbs
        )
    }
}
