//! The TLB's geometry as CPUID reports it: entries per level and page size.

/// Which accesses a TLB translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlbKind {
    Data,
    Instruction,
    Unified,
    Load,
    Store,
}

/// One TLB (or one page size's part of a TLB).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlbLevel {
    pub level: u8,
    pub kind: TlbKind,
    /// The page size these entries map, bytes.
    pub page_size: u64,
    pub entries: u32,
    /// Ways; `None` is fully associative.
    pub ways: Option<u32>,
}

impl TlbLevel {
    /// Bytes these entries map when every entry is used.
    pub fn reach(&self) -> u64 {
        self.entries as u64 * self.page_size
    }
}

/// What CPUID says, and which leaf said it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlbGeometry {
    pub levels: Vec<TlbLevel>,
    /// The leaves read, in words: "CPUID 0x80000005/6" or why there is nothing.
    pub source: String,
}

impl TlbGeometry {
    /// The data (or unified) TLB entries for `page_size` at `level`.
    pub fn data_entries(&self, level: u8, page_size: u64) -> Option<u32> {
        self.levels
            .iter()
            .filter(|l| l.level == level && l.page_size == page_size)
            .find(|l| matches!(l.kind, TlbKind::Data | TlbKind::Unified | TlbKind::Load))
            .map(|l| l.entries)
    }
}
