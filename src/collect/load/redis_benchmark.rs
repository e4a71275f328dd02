//! redis-benchmark `--csv`: a header `"test","rps","avg_latency_ms","min_latency_ms",
//! "p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` and a row per test.
//! Metrics per test named by `-t` (lower case): `<test>_rps`, `<test>_p50_ms`, `<test>_p99_ms`.

use super::{LoadMetric, arg_value, higher, lower};
use std::collections::BTreeMap;

const COLUMNS: [(&str, &str); 3] = [
    ("rps", "rps"),
    ("p50_latency_ms", "p50_ms"),
    ("p99_latency_ms", "p99_ms"),
];

fn tests(words: &[String]) -> Result<Vec<String>, String> {
    if !words.iter().any(|w| w == "--csv") {
        return Err(
            "--metric redis-benchmark reads its --csv output: add --csv to the load".into(),
        );
    }
    let t = arg_value(words, "-t", "--tests").ok_or(
        "--metric redis-benchmark needs the tests named with -t (e.g. -t set,get): by default it runs about 20",
    )?;
    Ok(t.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.to_ascii_lowercase())
        .collect())
}

pub fn metrics(words: &[String]) -> Result<Vec<LoadMetric>, String> {
    let mut out = Vec::new();
    for t in tests(words)? {
        out.push(higher(format!("{t}_rps")));
        out.push(lower(format!("{t}_p50_ms")));
        out.push(lower(format!("{t}_p99_ms")));
    }
    Ok(out)
}

fn fields(line: &str) -> Vec<String> {
    line.split(',')
        .map(|f| f.trim().trim_matches('"').to_string())
        .collect()
}

pub fn read(stdout: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut lines = stdout.lines().map(str::trim).filter(|l| l.starts_with('"'));
    let header = fields(
        lines
            .next()
            .ok_or("redis-benchmark printed no CSV (run it with --csv)")?,
    );
    let col = |name: &str| header.iter().position(|h| h == name);
    let mut out = BTreeMap::new();
    for line in lines {
        let f = fields(line);
        let test = f[0]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        for (column, suffix) in COLUMNS {
            let i = col(column)
                .ok_or_else(|| format!("redis-benchmark's CSV has no {column} column"))?;
            if let Some(v) = f.get(i).and_then(|v| v.parse::<f64>().ok()) {
                out.insert(format!("{test}_{suffix}"), v);
            }
        }
    }
    if out.is_empty() {
        return Err("redis-benchmark's CSV has no result row".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_become_metrics_per_test() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"SET\",\"92592.59\",\"0.297\",\"0.088\",\"0.287\",\"0.391\",\"0.503\",\"1.143\"\n\"GET\",\"100000.00\",\"0.270\",\"0.080\",\"0.263\",\"0.351\",\"0.447\",\"0.911\"\n";
        let m = read(out).unwrap();
        assert_eq!(m["set_rps"], 92592.59);
        assert_eq!(m["set_p99_ms"], 0.503);
        assert_eq!(m["get_p50_ms"], 0.263);
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let names: Vec<String> = metrics(&w("redis-benchmark --csv -t set,get"))
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(
            names,
            [
                "set_rps",
                "set_p50_ms",
                "set_p99_ms",
                "get_rps",
                "get_p50_ms",
                "get_p99_ms"
            ]
        );
        assert!(
            metrics(&w("redis-benchmark --csv"))
                .unwrap_err()
                .contains("-t")
        );
        assert!(
            metrics(&w("redis-benchmark -t set"))
                .unwrap_err()
                .contains("--csv")
        );
        assert!(read("SET: 1000 requests per second").is_err());
    }
}
