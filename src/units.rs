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
/// Deserializes a map keyed by page size whose keys JSON holds as strings (`"2097152"`), also
/// where serde buffers the map first (inside a flattened struct, where plain `u64` keys fail).
pub mod size_keys {
    use serde::de::{Deserialize, Deserializer, Error};
    use std::collections::BTreeMap;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u64, u64>, D::Error> {
        BTreeMap::<String, u64>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                k.parse()
                    .map(|k| (k, v))
                    .map_err(|_| D::Error::custom(format!("page size {k:?} is not a number")))
            })
            .collect()
    }
}

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

/// What a metric's numbers measure, from its name: `wall_s` and `*_s` are seconds, `*_ms`
/// milliseconds, `*_us` microseconds, `*_ns` and `*ns/op` nanoseconds, `*_bytes` bytes; anything else (a user's
/// `--metric`, tps, MiB/s) is a plain number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// Values are this many seconds each (1 for `_s`, 1e-3 for `_ms`, 1e-9 for `_ns`).
    Time(f64),
    Bytes,
    Plain,
}

impl Unit {
    pub fn of_metric(name: &str) -> Unit {
        if name.ends_with("_s") {
            Unit::Time(1.0)
        } else if name.ends_with("_ms") {
            Unit::Time(1e-3)
        } else if name.ends_with("_us") {
            Unit::Time(1e-6)
        } else if name.ends_with("_ns") || name.ends_with("ns/op") {
            Unit::Time(1e-9)
        } else if name.ends_with("_bytes") {
            Unit::Bytes
        } else {
            Unit::Plain
        }
    }

    /// The unit the stored values are in (`s`, `ms`, `µs`, `ns`, `bytes`), or `None` for a
    /// number hugelab does not know the unit of.
    pub fn symbol(self) -> Option<&'static str> {
        match self {
            Unit::Time(1.0) => Some("s"),
            Unit::Time(1e-3) => Some("ms"),
            Unit::Time(1e-6) => Some("µs"),
            Unit::Time(_) => Some("ns"),
            Unit::Bytes => Some("bytes"),
            Unit::Plain => None,
        }
    }

    /// How to print numbers of this unit near `reference` so that a spread of `spread` still
    /// shows: the scale comes from the reference (ns, µs, ms, s; B, KiB … GiB), the decimals
    /// give the reference 3 significant digits and the spread 2, but never the reference more
    /// than 4 (a float-noise spread counts as none).
    pub fn fmt_for(self, reference: f64, spread: f64) -> Shown {
        // A zero reference (a median of zeros: the system CPU of `true`) says nothing of the
        // scale; the spread does.
        let reference = if reference == 0.0 && spread.is_finite() {
            spread
        } else {
            reference
        };
        let (factor, suffix) = match self {
            Unit::Time(secs_each) => {
                let s = (reference * secs_each).abs();
                let (to_secs, suffix) = if s >= 1.0 || s == 0.0 {
                    (1.0, " s")
                } else if s >= 1e-3 {
                    (1e-3, " ms")
                } else if s >= 1e-6 {
                    (1e-6, " µs")
                } else {
                    (1e-9, " ns")
                };
                (secs_each / to_secs, suffix)
            }
            Unit::Bytes => {
                let b = reference.abs();
                let (div, suffix) = [(40, " TiB"), (30, " GiB"), (20, " MiB"), (10, " KiB")]
                    .into_iter()
                    .find(|(shift, _)| b >= (1u64 << shift) as f64)
                    .map_or((1.0, " B"), |(shift, s)| ((1u64 << shift) as f64, s));
                (1.0 / div, suffix)
            }
            Unit::Plain => (1.0, ""),
        };
        // A spread below a billionth of the reference is float noise (identical values), not a
        // spread; and the spread never asks for more than one digit past the reference's third.
        let (r, sp) = (reference * factor, spread * factor);
        let real_spread = sp.is_finite() && sp.abs() > r.abs() * 1e-9;
        let wanted = decimals(r, 3).max(if real_spread { decimals(sp, 2) } else { 0 });
        let cap = if r == 0.0 { 6 } else { decimals(r, 4) };
        Shown {
            factor,
            suffix,
            decimals: wanted.min(cap).min(6),
        }
    }
}

/// Decimals that give `x` `sig` significant digits (0 for a zero or a large x).
fn decimals(x: f64, sig: i32) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    (sig - 1 - x.abs().log10().floor() as i32).max(0) as usize
}

/// Numbers of one unit printed at one scale and precision (a table column, a `mean ± sd`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown {
    factor: f64,
    suffix: &'static str,
    decimals: usize,
}

impl Shown {
    /// `1.04 ms`.
    pub fn show(&self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        format!("{}{}", self.bare(v), self.suffix)
    }
    /// `1.04` (the unit said elsewhere).
    pub fn bare(&self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        format!("{:.*}", self.decimals, v * self.factor)
    }
    /// `1.04 ± 0.03 ms`; a spread of exactly zero prints as `± 0`.
    pub fn plus_minus(&self, v: f64, spread: f64) -> String {
        let s = if spread == 0.0 {
            "0".to_string()
        } else {
            self.bare(spread)
        };
        format!("{} ± {s}{}", self.bare(v), self.suffix)
    }
}

/// A duration of running as a person says it: `850 ms`, `42 s`, `5m14s`, `2h03m`.
pub fn fmt_elapsed(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "-".into();
    }
    if secs < 1.0 {
        return format!("{:.0} ms", secs * 1000.0);
    }
    if secs < 60.0 {
        return format!("{secs:.0} s");
    }
    let s = secs.round() as u64;
    if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// A length of time that is an estimate, as roughly as it is known: `about 40 s`, `about 12 min`,
/// `about 9.9 h`, `about 3 days`.
pub fn fmt_about(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "-".into();
    }
    let (v, unit) = if secs < 90.0 {
        (secs, "s")
    } else if secs < 90.0 * 60.0 {
        (secs / 60.0, "min")
    } else if secs < 48.0 * 3600.0 {
        (secs / 3600.0, "h")
    } else {
        (secs / 86_400.0, "days")
    };
    let d = if v < 10.0 && unit != "s" { 1 } else { 0 };
    format!("about {v:.d$} {unit}")
}

/// A length of time as it is given on the command line: `30s`, `10m`, `1h30m`.
pub fn fmt_span(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if sec > 0 || out.is_empty() {
        out += &format!("{sec}s");
    }
    out
}

/// A unix time in UTC: `2026-11-24 06:00 UTC` (with `seconds`, `06:00:00`).
pub fn fmt_utc(t: f64, seconds: bool) -> String {
    let f = if seconds {
        "%Y-%m-%d %H:%M:%S UTC"
    } else {
        "%Y-%m-%d %H:%M UTC"
    };
    jiff::Timestamp::from_millisecond((t * 1000.0) as i64)
        .map(|ts| ts.strftime(f).to_string())
        .unwrap_or_else(|_| format!("{t}"))
}

/// A percentage with decimals chosen from the width of its interval: `-8.9%`, `+12%`, `-0.41%`.
pub fn fmt_percent(v: f64, half_width: f64) -> String {
    format!("{:+.*}%", percent_decimals(half_width), v)
}

/// Decimals for percentages whose interval has this half-width: 0 from ±10%, 1 from ±1%, else
/// 2; 1 without an interval.
pub fn percent_decimals(half_width: f64) -> usize {
    let w = half_width.abs();
    if !w.is_finite() {
        1
    } else if w >= 10.0 {
        0
    } else if w >= 1.0 {
        1
    } else {
        2
    }
}

/// An interval's end, signed, with `decimals` decimals, or with as many more as it needs not to
/// read zero: `-0.04`, never `-0`, since an end that reads zero says the interval
/// touches no change when it does not. An end that is exactly zero reads `0`, unsigned.
pub fn fmt_bound(x: f64, decimals: usize) -> String {
    if x == 0.0 {
        return format!("{:.decimals$}", 0.0);
    }
    let mut d = decimals;
    while d < 12 && (x * 10f64.powi(d as i32)).round() == 0.0 {
        d += 1;
    }
    format!("{x:+.d$}")
}

/// `[-28, -0.4]`: an interval's two ends by [`fmt_bound`].
pub fn fmt_interval(lo: f64, hi: f64, decimals: usize) -> String {
    format!("[{}, {}]", fmt_bound(lo, decimals), fmt_bound(hi, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// No end near zero reads `-0` or `+0`: it keeps its sign and one digit that is not zero.
    #[test]
    fn an_end_near_zero_never_reads_zero() {
        for (x, d, text) in [
            (-0.4, 0, "-0.4"),
            (-0.04, 0, "-0.04"),
            (0.004, 1, "+0.004"),
            (-0.0004, 0, "-0.0004"),
            (-0.00001, 0, "-0.00001"),
            (-27.6, 0, "-28"),
            (0.0, 1, "0.0"),
            (1.25, 2, "+1.25"),
        ] {
            assert_eq!(fmt_bound(x, d), text, "{x} at {d} decimals");
        }
        assert_eq!(fmt_interval(-27.6, -0.04, 0), "[-28, -0.04]");
    }

    proptest! {
        /// Any end that is not zero prints its own sign and a non-zero digit.
        #[test]
        fn a_printed_end_keeps_its_sign(x in -50.0f64..50.0, d in 0usize..3) {
            let t = fmt_bound(x, d);
            let back: f64 = t.parse().unwrap();
            if x.abs() >= 1e-9 {
                prop_assert!(back != 0.0 && back.signum() == x.signum(), "{x} printed {t}");
            }
        }
    }

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
    fn quantities_scale_and_keep_the_spread_visible() {
        let t = Unit::of_metric("wall_s");
        // `true` runs in about a millisecond: milliseconds, and a spread that does not vanish.
        let f = t.fmt_for(0.0011, 0.00004);
        assert_eq!(f.plus_minus(0.0011, 0.00004), "1.100 ± 0.040 ms");
        assert_eq!(f.show(0.0013), "1.300 ms");
        assert_eq!(
            t.fmt_for(1.039, 0.0288).plus_minus(1.039, 0.0288),
            "1.039 ± 0.029 s"
        );
        assert_eq!(t.fmt_for(2.5e-7, 0.0).show(2.5e-7), "250 ns");
        assert_eq!(t.fmt_for(0.0, 0.0).plus_minus(0.0, 0.0), "0 ± 0 s");
        assert_eq!(
            Unit::of_metric("touch_ns/op").fmt_for(3.2, 0.1).show(3.2),
            "3.20 ns"
        );
        assert_eq!(
            Unit::of_metric("lat_p99_ms").fmt_for(7.4, 2.0).show(7.4),
            "7.40 ms"
        );
        assert_eq!(
            Unit::of_metric("lat_p99_ms").fmt_for(0.42, 0.02).show(0.42),
            "420 µs"
        );
        assert_eq!(
            Unit::of_metric("rss_bytes")
                .fmt_for(3.0 * 1048576.0, 0.0)
                .show(3.0 * 1048576.0),
            "3.00 MiB"
        );
        assert_eq!(
            Unit::of_metric("tps").fmt_for(2466.12, 35.0).show(2466.12),
            "2466"
        );
        // A tiny spread asks for at most one digit past the reference's third.
        assert_eq!(
            Unit::of_metric("tps").fmt_for(2466.12, 0.35).show(2466.12),
            "2466"
        );
        assert_eq!(
            Unit::of_metric("tps")
                .fmt_for(24.6612, 0.0035)
                .show(24.6612),
            "24.66"
        );
        // Three identical sub-millisecond latencies: a float-noise sd is no spread (it gave
        // `471.000000 µs`), and a real one of 4.6 µs still shows at the reference's precision.
        let lat = Unit::of_metric("get_p99_ms");
        assert_eq!(lat.fmt_for(0.471, 5.5e-17).show(0.471), "471 µs");
        assert_eq!(
            lat.fmt_for(0.471, 0.0046188).plus_minus(0.471, 0.0046188),
            "471.0 ± 4.6 µs"
        );
        assert_eq!(f.show(f64::NAN), "-");
        // A metric in microseconds prints in µs, or in ms from a millisecond up.
        let us = Unit::of_metric("x_us");
        assert_eq!(us.symbol(), Some("µs"));
        assert_eq!(us.fmt_for(471.0, 5.0).show(471.0), "471.0 µs");
        assert_eq!(us.fmt_for(2500.0, 100.0).show(2500.0), "2.50 ms");
    }

    #[test]
    fn elapsed_and_percentages() {
        assert_eq!(fmt_elapsed(0.25), "250 ms");
        assert_eq!(fmt_elapsed(42.4), "42 s");
        assert_eq!(fmt_elapsed(314.0), "5m14s");
        assert_eq!(fmt_elapsed(7380.0), "2h03m");
        assert_eq!(fmt_percent(-8.87, 2.0), "-8.9%");
        assert_eq!(fmt_percent(26.7, 20.0), "+27%");
        assert_eq!(fmt_percent(-0.412, 0.3), "-0.41%");
    }

    #[test]
    fn an_estimated_time_reads_as_roughly_as_it_is_known() {
        for (secs, text) in [
            (40.0, "about 40 s"),
            (12.0 * 60.0, "about 12 min"),
            (9.9 * 3600.0, "about 9.9 h"),
            (30.0 * 3600.0, "about 30 h"),
            (3.2 * 86_400.0, "about 3.2 days"),
        ] {
            assert_eq!(fmt_about(secs), text);
        }
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
