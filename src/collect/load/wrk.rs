//! wrk: `Requests/sec:`, the thread stats' average latency, and with `--latency` the latency
//! distribution (50%, 75%, 90%, 99%).

use super::{LoadMetric, higher, lower, to_ms};
use std::collections::BTreeMap;

pub fn metrics(words: &[String]) -> Vec<LoadMetric> {
    let mut m = vec![higher("rps"), lower("lat_avg_ms")];
    if words.iter().any(|w| w == "--latency" || w == "-L") {
        m.extend([lower("lat_p50_ms"), lower("lat_p99_ms")]);
    }
    m
}

pub fn read(stdout: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut out = BTreeMap::new();
    let mut in_dist = false;
    for l in stdout.lines().map(str::trim) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let Some(v) = l.strip_prefix("Requests/sec:") {
            out.insert(
                "rps".into(),
                v.trim().parse().map_err(|_| format!("wrk: {l:?}"))?,
            );
        } else if w.first() == Some(&"Latency") && w.len() >= 2 && !l.contains("Distribution") {
            if let Some(ms) = to_ms(w[1]) {
                out.insert("lat_avg_ms".into(), ms);
            }
        } else if l.starts_with("Latency Distribution") {
            in_dist = true;
        } else if in_dist && w.len() == 2 && w[0].ends_with('%') {
            if let (Ok(p), Some(ms)) = (w[0].trim_end_matches('%').parse::<f64>(), to_ms(w[1])) {
                out.insert(format!("lat_p{p}_ms"), ms);
            }
        } else {
            in_dist = false;
        }
    }
    if !out.contains_key("rps") {
        return Err("wrk printed no Requests/sec line".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_average_and_distribution() {
        let out = "Running 10s test @ http://127.0.0.1:8080/
  2 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   635.91us    1.25ms  21.12ms   92.91%
    Req/Sec     9.26k     1.05k   11.22k    69.00%
  Latency Distribution
     50%  354.00us
     75%  545.00us
     90%    1.06ms
     99%    6.80ms
  184397 requests in 10.00s, 149.62MB read
Requests/sec:  18434.86
Transfer/sec:     14.96MB
";
        let m = read(out).unwrap();
        assert_eq!(m["rps"], 18434.86);
        assert!((m["lat_avg_ms"] - 0.63591).abs() < 1e-12);
        assert_eq!((m["lat_p50_ms"], m["lat_p99_ms"]), (0.354, 6.8));
        assert!(read("nothing").is_err());
    }
}
