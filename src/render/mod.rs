//! Render (the last stage): terminal tables and JSON from the records the other stages return.

pub mod advice;
pub mod analysis_step;
pub mod bench;
pub mod cgroups;
pub mod compare;
pub mod conditions;
pub mod costs;
pub mod csv;
pub mod events;
pub mod html;
pub mod inspect;
pub mod judge;
pub mod manifest;
pub mod markdown;
pub mod progress;
pub mod prometheus;
pub mod run;
pub mod service_answer;
pub mod status;
pub mod summary;
pub mod thp_activity;
pub mod tlb;
pub mod trace;
pub mod words;

use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use std::io::IsTerminal;

/// A table styled the same way everywhere. Call [`fit`] once its rows are in.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    t
}

/// Keep a table within the terminal (comfy-table wraps cells to its width) or, when stdout is
/// not a terminal, within [`summary::WIDTH`] columns — only when it would not fit as it is,
/// so a table that fits is never wrapped.
pub fn fit(t: &mut Table) -> &mut Table {
    if std::io::stdout().is_terminal() {
        return t;
    }
    let widths = t.column_max_content_widths();
    let natural: usize = widths.iter().map(|w| *w as usize + 3).sum::<usize>() + 1;
    if natural > summary::WIDTH {
        t.set_width(summary::WIDTH as u16);
    }
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
        fit(&mut t);
        let mut o = String::new();
        for line in self.title.lines() {
            for l in summary::wrap_hanging(line, 2) {
                o += &l;
                o.push('\n');
            }
        }
        o += &format!("{t}\n");
        for n in &self.notes {
            let indent = n.len() - n.trim_start().len() + 2;
            for l in summary::wrap_hanging(n, indent) {
                o += &l;
                o.push('\n');
            }
        }
        o
    }
}
