//! Tracepoint formats from tracefs (`events/<group>/<event>/format`): the event id, each
//! field's offset, size and signedness, and the names the kernel prints for symbolic values.
//! Records are decoded by field name, so a kernel that moves or adds fields still decodes.

use super::Root;
use crate::error::{ParseError, ProbeError};
use std::collections::BTreeMap;

/// Where tracefs is looked for, in order.
pub const TRACEFS_PATHS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc` fields hold (offset | length << 16) of a dynamic array, not the value.
    pub data_loc: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pub name: String,
    pub id: u64,
    pub fields: Vec<Field>,
    /// Field name → value → the name the kernel prints (from `__print_symbolic`).
    pub symbols: BTreeMap<String, BTreeMap<i64, String>>,
}

fn num(s: &str, key: &str, line: usize) -> Result<usize, ParseError> {
    s.split(';')
        .find_map(|p| p.trim().strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| ParseError::new(line, format!("no {key} in a field line")))
}

/// The `__print_symbolic(REC->field, {v, "name"}, …)` tables of a print fmt line.
fn symbols(print: &str) -> BTreeMap<String, BTreeMap<i64, String>> {
    let mut out = BTreeMap::new();
    let mut rest = print;
    while let Some(i) = rest.find("__print_symbolic(REC->") {
        rest = &rest[i + "__print_symbolic(REC->".len()..];
        let Some(comma) = rest.find(',') else { break };
        let field = rest[..comma].trim().to_string();
        let mut table = BTreeMap::new();
        // Pairs until the call's closing parenthesis at depth 0.
        let mut body = &rest[comma + 1..];
        while let Some(t) = body.trim_start().strip_prefix('{') {
            let Some(close) = t.find('}') else { break };
            if let Some((v, name)) = t[..close].split_once(',') {
                let v = v.trim();
                let parsed = v
                    .strip_prefix("0x")
                    .map_or_else(|| v.parse().ok(), |h| i64::from_str_radix(h, 16).ok());
                if let Some(v) = parsed {
                    table.insert(v, name.trim().trim_matches('"').to_string());
                }
            }
            body = t[close + 1..].trim_start().trim_start_matches(',');
        }
        out.insert(field, table);
    }
    out
}

/// Parse one `format` file.
pub fn parse_format(text: &str) -> Result<Format, ParseError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut syms = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse()
                    .map_err(|_| ParseError::new(n, "ID is not a number"))?,
            );
        } else if let Some(v) = t.strip_prefix("field:") {
            let decl = v.split(';').next().unwrap_or("").trim();
            let data_loc = decl.starts_with("__data_loc");
            // The name is the last word of the declaration, without an array suffix.
            let last = decl
                .split_whitespace()
                .last()
                .ok_or_else(|| ParseError::new(n, "empty field declaration"))?;
            let fname = last
                .split('[')
                .next()
                .unwrap_or(last)
                .trim_start_matches('*');
            fields.push(Field {
                name: fname.to_string(),
                offset: num(v, "offset:", n)?,
                size: num(v, "size:", n)?,
                signed: num(v, "signed:", n)? == 1,
                data_loc,
            });
        } else if let Some(p) = t.strip_prefix("print fmt:") {
            syms = symbols(p);
        }
    }
    Ok(Format {
        name: name.ok_or_else(|| ParseError::new(1, "no name: line"))?,
        id: id.ok_or_else(|| ParseError::new(1, "no ID: line"))?,
        fields,
        symbols: syms,
    })
}

impl Format {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// An integer field of a raw record, sign-extended when the field is signed.
    pub fn int(&self, raw: &[u8], name: &str) -> Option<i64> {
        let f = self.field(name)?;
        let b = raw.get(f.offset..f.offset + f.size)?;
        let mut v = [0u8; 8];
        v[..f.size.min(8)].copy_from_slice(&b[..f.size.min(8)]);
        let u = u64::from_le_bytes(v);
        Some(if f.signed && f.size < 8 {
            let shift = 64 - 8 * f.size as u32;
            ((u << shift) as i64) >> shift
        } else {
            u as i64
        })
    }

    /// The printed name of a symbolic field's value, or the number.
    pub fn symbol(&self, raw: &[u8], name: &str) -> Option<String> {
        let v = self.int(raw, name)?;
        Some(
            self.symbols
                .get(name)
                .and_then(|t| t.get(&v))
                .cloned()
                .unwrap_or_else(|| v.to_string()),
        )
    }
}

/// Whether the kernel has tracefs (it is listed in /proc/filesystems), mounted or not.
pub fn in_kernel(root: &Root) -> bool {
    root.read_opt("/proc/filesystems")
        .ok()
        .flatten()
        .is_some_and(|t| {
            t.lines()
                .any(|l| l.split_whitespace().any(|w| w == "tracefs"))
        })
}

/// Where tracefs is mounted under `root`, if it is.
pub fn find(root: &Root) -> Option<&'static str> {
    TRACEFS_PATHS
        .into_iter()
        .find(|p| root.exists(format!("{p}/events")))
}

/// The format of `group/event` under the tracefs at `tracefs`.
pub fn read_format(root: &Root, tracefs: &str, event: &str) -> Result<Format, ProbeError> {
    let path = format!("{tracefs}/events/{event}/format");
    let text = root.read(&path)?;
    parse_format(&text).map_err(|e| ProbeError::Parse {
        path: path.into(),
        source: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: &str = "name: mm_compaction_end\nID: 669\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:bool sync;\toffset:40;\tsize:1;\tsigned:0;\n\tfield:int status;\toffset:44;\tsize:4;\tsigned:1;\n\nprint fmt: \"mode=%s status=%s\", REC->sync ? \"sync\" : \"async\", __print_symbolic(REC->status, {1, \"skipped\"}, {2, \"deferred\"}, {8, \"success\"})\n";

    #[test]
    fn fields_and_symbols_by_name() {
        let f = parse_format(END).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("mm_compaction_end", 669));
        let status = f.field("status").unwrap();
        assert_eq!((status.offset, status.size, status.signed), (44, 4, true));
        let mut raw = vec![0u8; 48];
        raw[44..48].copy_from_slice(&8i32.to_le_bytes());
        raw[4..8].copy_from_slice(&(-3i32).to_le_bytes());
        assert_eq!(f.int(&raw, "status"), Some(8));
        assert_eq!(f.symbol(&raw, "status").as_deref(), Some("success"));
        assert_eq!(f.int(&raw, "common_pid"), Some(-3));
        raw[44..48].copy_from_slice(&99i32.to_le_bytes());
        assert_eq!(f.symbol(&raw, "status").as_deref(), Some("99"));
        // A record too short for the field, or a field the kernel does not have.
        assert_eq!(f.int(&raw[..40], "status"), None);
        assert_eq!(f.int(&raw, "nope"), None);
    }

    #[test]
    fn data_loc_and_arrays() {
        let f = parse_format("name: x\nID: 1\n\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;\n\tfield:char comm[16];\toffset:20;\tsize:16;\tsigned:0;\n").unwrap();
        assert!(f.field("child_comm").unwrap().data_loc);
        assert_eq!(f.field("comm").unwrap().size, 16);
    }

    #[test]
    fn malformed() {
        assert!(parse_format("ID: 3\n").is_err());
        assert!(parse_format("name: x\nID: y\n").is_err());
        assert!(parse_format("name: x\nID: 1\n\tfield:int a;\toffset:;\n").is_err());
    }
}
