//! Plain result records: what commands produce and every renderer consumes (serde structs, no
//! behaviour beyond derived data). Renderers import these, never `commands`.

pub mod advice;
pub mod analysis;
pub mod arm;
pub mod bench;
pub mod cgroup;
pub mod costs;
pub mod decision;
pub mod evidence;
pub mod exporter;
pub mod inspect;
pub mod judge;
pub mod machine;
pub mod node_pool;
pub mod record;
pub mod report;
pub mod run;
pub mod stats;
pub mod status;
pub mod stored;
pub mod tlb;
pub mod trace;
pub mod trial;
pub mod verdict;
pub mod vm;

/// A JSON record with the version of hugelab that wrote it (its last key).
#[derive(serde::Serialize)]
pub struct Versioned<'a, T: serde::Serialize> {
    #[serde(flatten)]
    pub record: &'a T,
    pub hugelab_version: &'static str,
}

impl<'a, T: serde::Serialize> Versioned<'a, T> {
    pub fn of(record: &'a T) -> Self {
        Versioned {
            record,
            hugelab_version: crate::VERSION,
        }
    }
}
