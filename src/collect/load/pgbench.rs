//! pgbench: `tps = …` and `latency average = … ms` from its report; latency percentiles
//! (pgbench prints none) from its per-transaction log (`-l`): lines of `client_id
//! transaction_no time_us script_no time_epoch time_us [schedule_lag_us]`, the third field
//! the transaction's latency in µs (`failed`/`skipped` for transactions that did not finish).

use super::{LoadMetric, higher, lower, nearest_rank};
use std::collections::BTreeMap;
use std::path::Path;

pub const PERCENTILES: [(f64, &str); 4] = [
    (50.0, "lat_p50_ms"),
    (95.0, "lat_p95_ms"),
    (99.0, "lat_p99_ms"),
    (99.9, "lat_p999_ms"),
];

pub fn metrics() -> Vec<LoadMetric> {
    let mut m = vec![higher("tps"), lower("lat_avg_ms")];
    m.extend(PERCENTILES.iter().map(|(_, n)| lower(*n)));
    m
}

/// Every `pgbench_log*` file in `dir` (one per process, or per thread with `-j`), joined.
pub fn log_text(dir: &Path) -> Result<String, String> {
    let mut text = String::new();
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pgbench_log"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "pgbench wrote no per-transaction log into {} (it needs -l --log-prefix there)",
            dir.display()
        ));
    }
    for f in files {
        text.push_str(&std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    Ok(text)
}

/// The latencies of the finished transactions in a log, ms, sorted.
pub fn latencies_ms(log: &str) -> Vec<f64> {
    let mut v: Vec<f64> = log
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok())
        .map(|us| us / 1000.0)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|r| r.split_whitespace().next())
}

pub fn read(stdout: &str, log: &str) -> Result<BTreeMap<String, f64>, String> {
    let num = |key: &str| after(stdout, key).and_then(|v| v.parse::<f64>().ok());
    let tps = num("tps = ").ok_or("pgbench printed no `tps = …` line")?;
    let mut out = BTreeMap::from([("tps".to_string(), tps)]);
    if let Some(avg) = num("latency average = ") {
        out.insert("lat_avg_ms".into(), avg);
    }
    let lat = latencies_ms(log);
    if lat.is_empty() {
        return Err("pgbench's per-transaction log has no finished transaction".into());
    }
    for (p, name) in PERCENTILES {
        out.insert(name.into(), nearest_rank(&lat, p).expect("not empty"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
number of clients: 2
number of transactions actually processed: 4
number of failed transactions: 0 (0.000%)
latency average = 0.405 ms
initial connection time = 2.345 ms
tps = 2466.123456 (without initial connection time)
";

    #[test]
    fn report_and_log_give_throughput_and_percentiles() {
        let log = "0 0 300 0 1700000000 1\n0 1 500 0 1700000000 2\n1 0 failed 0 1700000000 3\n1 1 100 0 1700000000 4\n1 2 900 0 1700000000 5 12\n";
        let m = read(OUT, log).unwrap();
        assert_eq!(m["tps"], 2466.123456);
        assert_eq!(m["lat_avg_ms"], 0.405);
        // Sorted: 0.1 0.3 0.5 0.9 ms; nearest rank: p50 → 2nd, p95/p99/p99.9 → 4th.
        assert_eq!(m["lat_p50_ms"], 0.3);
        assert_eq!(m["lat_p99_ms"], 0.9);
        assert_eq!(m["lat_p999_ms"], 0.9);
        assert!(read("no report", log).unwrap_err().contains("tps"));
        assert!(read(OUT, "").unwrap_err().contains("no finished"));
    }
}
