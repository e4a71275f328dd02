//! Small shared parsers: one integer, `key value` tables (/proc/vmstat), bracketed selectors.

pub use crate::model::machine::thp::Selector;

use crate::error::ParseError;
use std::collections::BTreeMap;

/// A file holding a single unsigned integer (most sysfs knobs and counters).
pub fn parse_u64(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.parse()
        .map_err(|_| ParseError::new(1, format!("expected an unsigned integer, found {t:?}")))
}

/// `name value` per line, as /proc/vmstat.
pub fn parse_key_values(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(ParseError::new(
                i + 1,
                format!("expected `name value`, found {line:?}"),
            ));
        };
        let v: u64 = v.parse().map_err(|_| {
            ParseError::new(i + 1, format!("value of {k} is not an integer: {v:?}"))
        })?;
        out.insert(k.to_string(), v);
    }
    Ok(out)
}

pub fn parse_selector(text: &str) -> Result<Selector, ParseError> {
    let mut selected = None;
    let mut choices = Vec::new();
    for word in text.split_whitespace() {
        if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            if selected.replace(inner.to_string()).is_some() {
                return Err(ParseError::new(
                    1,
                    format!("more than one [selected] value in {:?}", text.trim()),
                ));
            }
            choices.push(inner.to_string());
        } else {
            choices.push(word.to_string());
        }
    }
    match selected {
        Some(selected) => Ok(Selector { selected, choices }),
        None => Err(ParseError::new(
            1,
            format!("no [selected] value in {:?}", text.trim()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn selector() {
        let s = parse_selector("always [madvise] never\n").unwrap();
        assert_eq!(s.selected, "madvise");
        assert_eq!(s.choices, vec!["always", "madvise", "never"]);
        assert!(parse_selector("always madvise").is_err());
        assert!(parse_selector("[a] [b]").is_err());
    }

    #[test]
    fn key_values() {
        let m = parse_key_values("thp_fault_alloc 12\ncompact_stall 3\n").unwrap();
        assert_eq!(m["thp_fault_alloc"], 12);
        let e = parse_key_values("a 1\nb x\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    proptest! {
        #[test]
        fn never_panic(s in "\\PC{0,80}") {
            let _ = parse_u64(&s);
            let _ = parse_key_values(&s);
            let _ = parse_selector(&s);
        }
    }
}
