//! Printed = stored: every number an answer prints, found (rounded as printed, in the unit
//! printed) among the numbers of a stored record (`results show --json`), or in its words.

use regex::Regex;

/// A number as printed: its value, its decimals and the unit right after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Printed {
    pub text: String,
    pub value: f64,
    pub decimals: usize,
    pub unit: String,
}

/// Every number in `text` with its unit; numbers inside words (`hugetlb-2m`, `r2`) are not
/// numbers, and a span like `2m26s` is one number of seconds.
pub fn numbers(text: &str) -> Vec<Printed> {
    let span = Regex::new(r"\b(?:(\d+)h)?(\d+)m(\d+)s\b").unwrap();
    let re = Regex::new(
        r"(^|[^\w.\-])([+\-−]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s?(?:%|×|GiB|MiB|KiB|kB|MB|GB|ms|µs|us|ns|s|B|M|G|K)\b|%|×)?",
    )
    .unwrap();
    let mut out = Vec::new();
    let mut rest = text.to_string();
    for c in span.captures_iter(text) {
        let n = |i| c.get(i).map_or(0.0, |m| m.as_str().parse::<f64>().unwrap());
        out.push(Printed {
            text: c[0].to_string(),
            value: n(1) * 3600.0 + n(2) * 60.0 + n(3),
            decimals: 0,
            unit: "s".into(),
        });
        rest = rest.replace(&c[0], " ");
    }
    for c in re.captures_iter(&rest) {
        let digits = c[3].replace(',', "");
        let frac = c.get(4).map_or("", |m| m.as_str());
        let sign = if matches!(&c[2], "-" | "−") {
            -1.0
        } else {
            1.0
        };
        out.push(Printed {
            text: c[0].trim().to_string(),
            value: sign * format!("{digits}{frac}").parse::<f64>().unwrap(),
            decimals: frac.len().saturating_sub(1),
            // `×2.1`: a change printed as a ratio once it doubles.
            unit: match &c[1] {
                "×" => "×".to_string(),
                _ => c.get(5).map_or("", |m| m.as_str()).trim().to_string(),
            },
        });
    }
    out
}

/// Every number a JSON value holds, every list's length, and every number printed inside its
/// strings (with the unit it was printed in there).
pub fn json_numbers(v: &serde_json::Value, out: &mut Vec<(f64, Option<String>)>) {
    match v {
        serde_json::Value::Number(n) => out.extend(n.as_f64().map(|n| (n, None))),
        serde_json::Value::String(s) => {
            out.extend(numbers(s).into_iter().map(|p| (p.value, Some(p.unit))))
        }
        // A count printed ("5 notes") is the length of a stored list.
        serde_json::Value::Array(a) => {
            out.push((a.len() as f64, None));
            a.iter().for_each(|x| json_numbers(x, out))
        }
        serde_json::Value::Object(m) => m.values().for_each(|x| json_numbers(x, out)),
        _ => {}
    }
}

/// What a stored number `n` reads as in the unit printed.
fn as_printed(n: f64, unit: &str) -> Vec<f64> {
    let k = 1024f64;
    match unit {
        "%" => vec![n * 100.0, n],
        // A ratio, or a stored percentage change printed as one.
        "×" => vec![n, 1.0 + n / 100.0],
        "GiB" | "G" => vec![n / k.powi(3)],
        "MiB" | "M" => vec![n / k.powi(2)],
        "KiB" | "K" => vec![n / k],
        "GB" => vec![n / 1e9],
        "MB" => vec![n / 1e6],
        "kB" => vec![n / 1e3, n / k],
        "s" => vec![n, n / 1e3, n / 1e9],
        "ms" => vec![n * 1e3, n, n / 1e6],
        "µs" | "us" => vec![n * 1e6, n * 1e3, n, n / 1e3],
        "ns" => vec![n * 1e9, n],
        _ => vec![n],
    }
}

/// Whether `p` is one of `stored`, rounded as printed.
pub fn is_stored(p: &Printed, stored: &[(f64, Option<String>)]) -> bool {
    let step = 10f64.powi(-(p.decimals as i32));
    let eps = 1e-9 * p.value.abs().max(1.0);
    // A span of seconds is printed to the second.
    let tol = if p.text.contains('m') && p.unit == "s" {
        1.0
    } else {
        0.5 * step + eps
    };
    let near = |c: f64| (c - p.value).abs() <= tol;
    stored.iter().any(|(n, unit)| match unit {
        Some(u) => *u == p.unit && near(*n),
        None => as_printed(*n, &p.unit).into_iter().any(near),
    })
}

/// The numbers `text` prints that the record does not hold.
pub fn not_stored(text: &str, record: &serde_json::Value) -> Vec<Printed> {
    let mut stored = Vec::new();
    json_numbers(record, &mut stored);
    numbers(text)
        .into_iter()
        .filter(|p| !is_stored(p, &stored))
        .collect()
}
