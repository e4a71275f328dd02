//! Byte sizes and durations as people type and read them: `4K`, `2M`, `1G`, `1GiB`, plain bytes.

use std::fmt;
use std::str::FromStr;

/// A size in bytes, parsed from `4K`, `2M`, `1G`, `1GiB`, `64kB` or a plain number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid size {input:?}: {reason} (use a number with an optional K, M, G or T suffix, e.g. 4K, 2M, 1G, 1GiB)"
)]
pub struct SizeError {
    pub input: String,
    pub reason: &'static str,
}

impl FromStr for Bytes {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| SizeError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, suffix) = t.split_at(split);
        if digits.is_empty() {
            return Err(err("no number"));
        }
        let n: u64 = digits.parse().map_err(|_| err("number too large"))?;
        let shift = match suffix.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => return Err(err("unknown suffix")),
        };
        n.checked_mul(1u64 << shift)
            .map(Bytes)
            .ok_or_else(|| err("size overflows 64 bits"))
    }
}

impl fmt::Display for Bytes {
    /// Exact binary units where the size is a whole multiple (`2M`, `64K`), else one decimal (`1.5G`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u32); 4] = [("T", 40), ("G", 30), ("M", 20), ("K", 10)];
        let b = self.0;
        for (name, shift) in UNITS {
            let unit = 1u64 << shift;
            if b >= unit {
                return if b.is_multiple_of(unit) {
                    write!(f, "{}{}", b / unit, name)
                } else {
                    write!(f, "{:.1}{}", b as f64 / unit as f64, name)
                };
            }
        }
        write!(f, "{b}B")
    }
}

/// Parse a duration such as `500ms`, `2s`, `1.5s`, `3m`, or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: use e.g. 500ms, 2s, 1m"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "" | "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration {s:?}: unknown unit {unit:?} (use ms, s, m or h)"
            ));
        }
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("invalid duration {s:?}: out of range"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A duration that must be more than zero (a timeout, a period, a length of time to run).
pub fn parse_positive_duration(s: &str) -> Result<std::time::Duration, String> {
    if s.trim_start().starts_with('-') {
        return Err(format!(
            "{s:?} is negative; give a duration above 0, e.g. 500ms, 2s, 1m"
        ));
    }
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "{s:?} is zero; give a duration above 0, e.g. 500ms, 2s, 1m"
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!("4K".parse::<Bytes>().unwrap(), Bytes(4096));
        assert_eq!("2M".parse::<Bytes>().unwrap(), Bytes(2 << 20));
        assert_eq!("1GiB".parse::<Bytes>().unwrap(), Bytes(1 << 30));
        assert_eq!("64kB".parse::<Bytes>().unwrap(), Bytes(65536));
        assert_eq!("123".parse::<Bytes>().unwrap(), Bytes(123));
        assert!("".parse::<Bytes>().is_err());
        assert!("2X".parse::<Bytes>().is_err());
        assert!("99999999999T".parse::<Bytes>().is_err());
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(Bytes(4096).to_string(), "4K");
        assert_eq!(Bytes(1 << 30).to_string(), "1G");
        assert_eq!(Bytes(3 << 29).to_string(), "1.5G");
        assert_eq!(Bytes(100).to_string(), "100B");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert_eq!(parse_duration("2").unwrap().as_secs(), 2);
        assert!(parse_duration("2x").is_err());
    }

    proptest! {
        #[test]
        fn display_parse_roundtrip(k in 1u64..1_000_000, shift in prop::sample::select(vec![10u32, 20, 30])) {
            let b = Bytes(k << shift);
            let shown = b.to_string();
            // Whole multiples print exactly and parse back; others print one decimal.
            if shown.contains('.') {
                prop_assert!(shown.len() <= 8);
            } else {
                prop_assert_eq!(shown.parse::<Bytes>().unwrap(), b);
            }
        }

        #[test]
        fn never_panics(s in ".{0,12}") {
            let _ = s.parse::<Bytes>();
            let _ = parse_duration(&s);
            let _ = parse_positive_duration(&s);
        }
    }
}
