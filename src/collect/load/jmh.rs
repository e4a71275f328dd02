//! JMH: every result row — benchmark × parameter values × mode — is a metric of its own, named
//! by the benchmark, its parameters and its mode (`ByteArrayTouch.touch size=1000 avgt`: one
//! benchmark run in two modes is two rows), with the direction its mode states (`thrpt` higher;
//! `avgt`, `sample`, `ss` lower) and its unit. Read from JMH's own machine-readable result file
//! (`-rf json -rff`, which hugelab adds in the trial's directory when the load names none), else
//! from the text table with the same rules. Secondary metrics JMH reports (`-prof gc`, `-prof
//! perfnorm`) become metrics named `<row> · <secondary>`, with the direction their profiler gives
//! them ([`secondary_direction`]) or none — then they are shown, not weighed — and, not being
//! rows, they are not in the rows' family.

use super::LoadMetric;
use std::collections::BTreeMap;
use std::path::Path;

/// The result file hugelab asks JMH for, in the trial's directory.
pub const RESULT_FILE: &str = "jmh.json";

/// One result row (or a secondary metric of one).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub higher: bool,
    pub unit: String,
    pub score: f64,
    /// A profiler's metric of a row (`· gc.alloc.rate`), not a row of its own.
    pub secondary: bool,
    /// No direction is known for it: recorded and shown, never a verdict or a cost.
    pub context: bool,
}

/// Throughput modes are better higher; average time, sample time and single shot lower.
fn higher(mode: &str) -> bool {
    matches!(mode, "thrpt" | "Throughput")
}

/// A secondary metric's direction as its profiler defines it: `Some(true)` higher is better.
/// Per-operation counts and times (perfnorm's `#/op`, `gc.alloc.rate.norm`'s `B/op`) are better
/// lower, instructions per cycle (`IPC`) higher and cycles per instruction (`CPI`) lower. Rates
/// and totals that grow with the work a throughput run does (`gc.alloc.rate` MB/sec,
/// `gc.count`, `gc.time`, churn) have none.
pub fn secondary_direction(key: &str, unit: &str) -> Option<bool> {
    let last = key.rsplit(['.', ':']).next().unwrap_or(key);
    match last {
        "IPC" => Some(true),
        "CPI" => Some(false),
        _ if unit.ends_with("/op") => Some(false),
        _ => None,
    }
}

/// A secondary metric of the row `row`.
fn secondary_row(row: &str, key: &str, unit: String, score: f64) -> Row {
    let direction = secondary_direction(key, &unit);
    Row {
        name: format!("{row} · {key}"),
        higher: direction == Some(true),
        unit,
        score,
        secondary: true,
        context: direction.is_none(),
    }
}

/// `Class.method`: the benchmark's last two components (JMH's text table shows the same).
fn short(benchmark: &str) -> String {
    let parts: Vec<&str> = benchmark.rsplitn(3, '.').collect();
    match parts.as_slice() {
        [m, c, ..] => format!("{c}.{m}"),
        _ => benchmark.to_string(),
    }
}

fn row_name(benchmark: &str, params: &[(String, String)], mode: &str) -> String {
    let mut n = short(benchmark);
    for (k, v) in params {
        n.push_str(&format!(" {k}={v}"));
    }
    n.push(' ');
    n.push_str(mode);
    n
}

/// Rows from JMH's JSON result file.
pub fn rows_json(text: &str) -> Result<Vec<Row>, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("JMH's result file is not JSON: {e}"))?;
    let mut out = Vec::new();
    for r in v
        .as_array()
        .ok_or("JMH's result file is not a list of results")?
    {
        let bench = r["benchmark"]
            .as_str()
            .ok_or("a JMH result without a benchmark")?;
        let mode = r["mode"].as_str().unwrap_or("thrpt");
        let params: Vec<(String, String)> = r["params"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map_or(v.to_string(), String::from)))
                    .collect()
            })
            .unwrap_or_default();
        let name = row_name(bench, &params, mode);
        let p = &r["primaryMetric"];
        let score = p["score"]
            .as_f64()
            .ok_or_else(|| format!("JMH result {name} without a score"))?;
        out.push(Row {
            name: name.clone(),
            higher: higher(mode),
            unit: p["scoreUnit"].as_str().unwrap_or("").to_string(),
            score,
            secondary: false,
            context: false,
        });
        if let Some(sec) = r["secondaryMetrics"].as_object() {
            for (k, m) in sec {
                let Some(score) = m["score"].as_f64() else {
                    continue;
                };
                let unit = m["scoreUnit"].as_str().unwrap_or("").to_string();
                out.push(secondary_row(&name, k, unit, score));
            }
        }
    }
    if out.is_empty() {
        return Err("JMH's result file holds no results".into());
    }
    Ok(out)
}

/// Rows from the text table `Benchmark (param…) Mode Cnt Score Error Units`.
pub fn rows_text(stdout: &str, stderr: &str) -> Result<Vec<Row>, String> {
    let text = if stdout.contains("Benchmark") {
        stdout
    } else {
        stderr
    };
    let mut lines = text
        .lines()
        .skip_while(|l| !(l.starts_with("Benchmark") && l.contains("Mode")));
    let header = lines
        .next()
        .ok_or("JMH printed no result table (Benchmark Mode Cnt Score Error Units)")?;
    // Parameter columns are named `(size)` between Benchmark and Mode.
    let params: Vec<String> = header
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('(')?.strip_suffix(')').map(String::from))
        .collect();
    let mut out = Vec::new();
    for row in lines.take_while(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = row.split_whitespace().collect();
        if w.len() < 3 + params.len() {
            continue;
        }
        let values: Vec<(String, String)> = params
            .iter()
            .cloned()
            .zip(w[1..=params.len()].iter().map(|v| v.to_string()))
            .collect();
        let mode = w[1 + params.len()];
        // … score [± error] units: the score stands before "±", else before the units.
        let at = w.iter().position(|x| *x == "±").unwrap_or(w.len() - 1);
        let Some(score) = at
            .checked_sub(1)
            .filter(|i| *i > 1 + params.len())
            .and_then(|i| w[i].parse::<f64>().ok())
        else {
            continue;
        };
        let name = w[0];
        // A secondary metric's row (`ByteArrayTouch.touch:gc.alloc.rate`) belongs to its row.
        let (bench, secondary) = match name.split_once(':') {
            Some((b, s)) => (b, Some(s)),
            None => (name, None),
        };
        let unit = w.last().copied().unwrap_or("").to_string();
        let base = row_name(bench, &values, mode);
        out.push(match secondary {
            Some(s) => secondary_row(&base, s, unit, score),
            None => Row {
                name: base,
                higher: higher(mode),
                unit,
                score,
                secondary: false,
                context: false,
            },
        });
    }
    if out.is_empty() {
        return Err("JMH's result table is empty".into());
    }
    Ok(out)
}

/// A trial's rows: the result file in `dir` when JMH wrote one, else the text table.
pub fn rows(stdout: &str, stderr: &str, dir: &Path) -> Result<Vec<Row>, String> {
    match std::fs::read_to_string(dir.join(RESULT_FILE)) {
        Ok(text) => rows_json(&text),
        Err(_) => rows_text(stdout, stderr),
    }
}

pub fn read(stdout: &str, stderr: &str, dir: &Path) -> Result<BTreeMap<String, f64>, String> {
    Ok(rows(stdout, stderr, dir)?
        .into_iter()
        .map(|r| (r.name, r.score))
        .collect())
}

/// The rows' metrics, in JMH's order.
pub fn metrics_of(rows: &[Row]) -> Vec<LoadMetric> {
    rows.iter()
        .map(|r| LoadMetric {
            name: r.name.clone(),
            higher: r.higher,
            secondary: r.secondary,
            context: r.context,
        })
        .collect()
}

/// Whether the load names its own result file (`-rf`/`-rff`): then the text table is read.
pub fn names_result_file(words: &[String]) -> bool {
    words.iter().any(|w| w == "-rf" || w == "-rff")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JMH 1.37's JSON for an `avgt` sweep over two sizes (fields hugelab does not read left out).
    const AVGT_JSON: &str = r##"[
      {"jmhVersion":"1.37","benchmark":"hugelab.ByteArrayTouch.touch","mode":"avgt","threads":1,"forks":1,
       "params":{"size":"1000"},
       "primaryMetric":{"score":2.844,"scoreError":0.077,"scoreUnit":"ns/op"},"secondaryMetrics":{}},
      {"jmhVersion":"1.37","benchmark":"hugelab.ByteArrayTouch.touch","mode":"avgt","threads":1,"forks":1,
       "params":{"size":"100000000"},
       "primaryMetric":{"score":32.5,"scoreError":0.4,"scoreUnit":"ns/op"},
       "secondaryMetrics":{"gc.alloc.rate":{"score":0.01,"scoreUnit":"MB/sec"},
                           "dTLB-load-misses":{"score":0.98,"scoreUnit":"#/op"}}}
    ]"##;

    #[test]
    fn every_json_row_is_a_metric_with_its_modes_direction_and_its_secondaries() {
        let r = rows_json(AVGT_JSON).unwrap();
        let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ByteArrayTouch.touch size=1000 avgt",
                "ByteArrayTouch.touch size=100000000 avgt",
                "ByteArrayTouch.touch size=100000000 avgt · dTLB-load-misses",
                "ByteArrayTouch.touch size=100000000 avgt · gc.alloc.rate",
            ]
        );
        assert!(!r[0].higher && !r[1].higher, "avgt: lower is better");
        assert!(!r[0].secondary && !r[0].context);
        assert_eq!((r[1].score, r[1].unit.as_str()), (32.5, "ns/op"));
        assert!(
            !r[2].higher && r[2].secondary && !r[2].context,
            "misses per op: lower"
        );
        assert!(
            r[3].secondary && r[3].context,
            "an allocation rate: no direction"
        );
        assert!(rows_json("[]").is_err() && rows_json("{").is_err());
    }

    #[test]
    fn every_text_row_is_a_metric_with_its_parameters_and_mode() {
        let out = "# Run complete. Total time: 00:01:12\n\n\
Benchmark                   (size)   Mode  Cnt   Score   Error   Units\n\
ByteArrayTouch.touch          1000  thrpt    3  35.100 ±  1.2  ops/us\n\
ByteArrayTouch.touch     100000000  thrpt    3   0.031 ±  0.001  ops/us\n\
Other.run                     1000   avgt    3  12.000 ±  0.5   ns/op\n";
        let r = rows_text(out, "").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].name, "ByteArrayTouch.touch size=1000 thrpt");
        assert!(r[0].higher && r[1].higher && !r[2].higher);
        assert_eq!(r[1].score, 0.031);
        assert_eq!(r[2].name, "Other.run size=1000 avgt");
        // Without parameters, and with JMH's "≈" for a score too small to print.
        let plain = "Benchmark  Mode  Cnt  Score   Error  Units\nA.b        avgt    5  28.700 ± 0.123  ns/op\n";
        assert_eq!(rows_text(plain, "").unwrap()[0].name, "A.b avgt");
        assert!(rows_text("no table", "").is_err());
    }

    #[test]
    fn the_result_file_wins_over_the_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), AVGT_JSON).unwrap();
        let m = read(
            "Benchmark Mode Cnt Score Error Units\nA.b thrpt 1 9.0 ops/s\n",
            "",
            dir.path(),
        )
        .unwrap();
        assert_eq!(m["ByteArrayTouch.touch size=1000 avgt"], 2.844);
        assert!(!m.contains_key("A.b thrpt"));
        assert!(names_result_file(&["-rf".to_string(), "csv".to_string()]));
    }

    /// `-bm thrpt,avgt`: one benchmark in two modes is two rows, each with its mode's direction,
    /// so no row carries the other mode's score under its direction.
    #[test]
    fn one_benchmark_in_two_modes_is_two_rows_with_their_own_directions() {
        let both = r##"[
          {"benchmark":"a.B.run","mode":"thrpt","params":{"n":"1"},
           "primaryMetric":{"score":350.0,"scoreUnit":"ops/us"},"secondaryMetrics":{}},
          {"benchmark":"a.B.run","mode":"avgt","params":{"n":"1"},
           "primaryMetric":{"score":0.003,"scoreUnit":"us/op"},
           "secondaryMetrics":{"IPC":{"score":2.1,"scoreUnit":"insns/clk"},
                               "CPI":{"score":0.47,"scoreUnit":"clks/insn"},
                               "gc.count":{"score":3.0,"scoreUnit":"counts"}}}
        ]"##;
        let r = rows_json(both).unwrap();
        let thrpt = r.iter().find(|x| x.name == "B.run n=1 thrpt").unwrap();
        let avgt = r.iter().find(|x| x.name == "B.run n=1 avgt").unwrap();
        assert!(thrpt.higher && thrpt.score == 350.0);
        assert!(!avgt.higher && avgt.score == 0.003);
        let by = |k: &str| r.iter().find(|x| x.name.ends_with(k)).unwrap();
        assert!(
            by("· IPC").higher && !by("· IPC").context,
            "IPC: higher is better"
        );
        assert!(!by("· CPI").higher && !by("· CPI").context);
        assert!(
            by("· gc.count").context,
            "a GC count grows with the work done"
        );
        let m = read("", "", std::path::Path::new("/nonexistent")).err();
        assert!(m.is_some());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), both).unwrap();
        let m = read("", "", dir.path()).unwrap();
        assert_eq!((m["B.run n=1 thrpt"], m["B.run n=1 avgt"]), (350.0, 0.003));
    }
}
