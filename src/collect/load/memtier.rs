//! memtier_benchmark `--json-out-file`: `"ALL STATS" → "Totals"` with `Ops/sec`, `Latency`
//! (average, ms) and `Percentile Latencies` (`p50.00`, `p99.00`, `p99.90`, ms).

use super::{LoadMetric, higher, lower};
use std::collections::BTreeMap;

const PERCENTILES: [(&str, &str); 3] = [
    ("p50.00", "p50_ms"),
    ("p99.00", "p99_ms"),
    ("p99.90", "p999_ms"),
];

pub fn metrics() -> Vec<LoadMetric> {
    let mut m = vec![higher("ops_per_s"), lower("lat_avg_ms")];
    m.extend(PERCENTILES.iter().map(|(_, n)| lower(*n)));
    m
}

pub fn read(json: &str) -> Result<BTreeMap<String, f64>, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("memtier's JSON: {e}"))?;
    let t = &v["ALL STATS"]["Totals"];
    let ops = t["Ops/sec"]
        .as_f64()
        .ok_or("memtier's JSON has no ALL STATS → Totals → Ops/sec")?;
    let mut out = BTreeMap::from([("ops_per_s".to_string(), ops)]);
    if let Some(l) = t["Latency"]
        .as_f64()
        .or_else(|| t["Average Latency"].as_f64())
    {
        out.insert("lat_avg_ms".into(), l);
    }
    for (key, name) in PERCENTILES {
        if let Some(x) = t["Percentile Latencies"][key].as_f64() {
            out.insert(name.into(), x);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_read() {
        let j = r#"{"ALL STATS": {"Sets": {}, "Totals": {"Ops/sec": 51234.5, "Latency": 0.98, "Percentile Latencies": {"p50.00": 0.87, "p99.00": 2.1, "p99.90": 4.3}}}}"#;
        let m = read(j).unwrap();
        assert_eq!(
            (m["ops_per_s"], m["lat_avg_ms"], m["p99_ms"], m["p999_ms"]),
            (51234.5, 0.98, 2.1, 4.3)
        );
        assert!(read("{}").is_err());
        assert!(read("not json").is_err());
    }
}
