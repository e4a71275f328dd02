//! Stage 8, render: terminal tables and JSON from the records the other stages return.

pub mod bench;
pub mod inspect;
pub mod run;
pub mod status;

use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};

/// A table styled the same way everywhere.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    t
}

/// Optional values print as `-` when the kernel lacks them.
pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}
