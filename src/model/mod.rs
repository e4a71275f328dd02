//! Plain result records: what commands produce and every renderer consumes (serde structs, no
//! behaviour beyond derived data). Renderers import these, never `commands`.

pub mod bench;
pub mod exporter;
pub mod inspect;
pub mod judge;
pub mod report;
pub mod run;
pub mod trace;
