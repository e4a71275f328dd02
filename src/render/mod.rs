//! Stage 8, render: terminal tables and JSON from the records the other stages return.

pub mod bench;
pub mod csv;
pub mod html;
pub mod inspect;
pub mod markdown;
pub mod progress;
pub mod prometheus;
pub mod run;
pub mod status;
pub mod trace;

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

/// One table of a report, before it is drawn: the terminal, Markdown and HTML renderers draw
/// the same cells, so a number reads the same everywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// The line above the table (what it shows, its level, n).
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines below the table (per-arm details, warnings).
    pub notes: Vec<String>,
}

impl Grid {
    pub fn new(title: impl Into<String>, header: &[&str]) -> Grid {
        Grid {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Title, table and notes as the terminal shows them.
    pub fn terminal(&self) -> String {
        let h: Vec<&str> = self.header.iter().map(String::as_str).collect();
        let mut t = table(&h);
        for r in &self.rows {
            t.add_row(r.clone());
        }
        let mut o = format!("{}\n{t}\n", self.title);
        for n in &self.notes {
            o += n;
            o.push('\n');
        }
        o
    }
}
