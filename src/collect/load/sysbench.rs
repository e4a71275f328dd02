//! sysbench: events per second (`total number of events` / `total time`, so it exists for
//! every test), `transactions: N (X per sec.)` for OLTP, `MiB transferred (X MiB/sec)` for
//! memory, and the `Latency (ms)` block: `avg` and the `Nth percentile` (`--percentile`, 95 by
//! default).

use super::{LoadMetric, arg_value, higher, lower};
use std::collections::BTreeMap;

fn percentile(words: &[String]) -> String {
    arg_value(words, "", "--percentile")
        .unwrap_or("95")
        .to_string()
}

pub fn metrics(words: &[String]) -> Vec<LoadMetric> {
    let mut m = vec![higher("events_per_s"), lower("lat_avg_ms")];
    let p = percentile(words);
    if p != "0" {
        m.push(lower(format!("lat_p{p}_ms")));
    }
    m
}

fn value_after(line: &str) -> Option<f64> {
    line.split_once(':')?
        .1
        .split_whitespace()
        .next()?
        .trim_end_matches('s')
        .parse()
        .ok()
}

pub fn read(stdout: &str) -> Result<BTreeMap<String, f64>, String> {
    let find = |key: &str| stdout.lines().map(str::trim).find(|l| l.starts_with(key));
    let events = find("total number of events:").and_then(value_after);
    let time = find("total time:").and_then(value_after);
    let (Some(events), Some(time)) = (events, time) else {
        return Err("sysbench printed no `total number of events` / `total time`".into());
    };
    let mut out = BTreeMap::from([("events_per_s".to_string(), events / time)]);
    let per = |l: &str| {
        let inner = l.split_once('(')?.1;
        inner.split_whitespace().next()?.parse::<f64>().ok()
    };
    if let Some(tps) = find("transactions:").and_then(per) {
        out.insert("tps".into(), tps);
    }
    if let Some(mib) = stdout
        .lines()
        .find(|l| l.contains("MiB transferred"))
        .and_then(per)
    {
        out.insert("mib_per_s".into(), mib);
    }
    let lat = stdout.split("Latency (ms):").nth(1).unwrap_or("");
    for l in lat
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Threads fairness"))
    {
        if let Some(v) = l.strip_prefix("avg:").and_then(|v| v.trim().parse().ok()) {
            out.insert("lat_avg_ms".into(), v);
        }
        if let Some((head, v)) = l.split_once("th percentile:")
            && let Ok(x) = v.trim().parse::<f64>()
        {
            out.insert(format!("lat_p{}_ms", head.trim()), x);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMORY: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Total operations: 65536 (6543.21 per second)

4096.00 MiB transferred (408.95 MiB/sec)


General statistics:
    total time:                          10.0156s
    total number of events:              65536

Latency (ms):
         min:                                    0.14
         avg:                                    0.15
         max:                                    1.23
         95th percentile:                        0.17
         sum:                                 9985.31

Threads fairness:
    events (avg/stddev):           65536.0000/0.00
";

    #[test]
    fn memory_and_oltp_outputs() {
        let m = read(MEMORY).unwrap();
        assert!((m["events_per_s"] - 65536.0 / 10.0156).abs() < 1e-9);
        assert_eq!(
            (m["mib_per_s"], m["lat_avg_ms"], m["lat_p95_ms"]),
            (408.95, 0.15, 0.17)
        );
        let oltp = "    transactions:                        1234   (123.40 per sec.)\n    total time: 10.0010s\n    total number of events: 1234\nLatency (ms):\n         avg:   8.10\n         99th percentile:  20.00\n";
        let m = read(oltp).unwrap();
        assert_eq!((m["tps"], m["lat_p99_ms"]), (123.4, 20.0));
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let names: Vec<String> = metrics(&w("sysbench --percentile=99 oltp_read_only run"))
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["events_per_s", "lat_avg_ms", "lat_p99_ms"]);
        assert!(read("nothing").is_err());
    }
}
