//! JMH: the result table `Benchmark Mode Cnt Score Error Units`, the first benchmark's score.
//! Its direction follows the mode: throughput (`thrpt`) higher, the others (`avgt`,
//! `sample`, `ss`) lower. JMH's default mode is throughput; give `-bm avgt` (or the mode the
//! benchmark is annotated with) so the direction is known before the run.

use super::{LoadMetric, arg_value, higher, lower};
use std::collections::BTreeMap;

fn throughput(words: &[String]) -> bool {
    arg_value(words, "-bm", "-bm").is_none_or(|m| {
        let m = m.to_ascii_lowercase();
        m == "thrpt" || m == "throughput"
    })
}

pub fn metrics(words: &[String]) -> Vec<LoadMetric> {
    vec![if throughput(words) {
        higher("score")
    } else {
        lower("score")
    }]
}

pub fn read(stdout: &str, stderr: &str) -> Result<BTreeMap<String, f64>, String> {
    let text = if stdout.contains("Benchmark") {
        stdout
    } else {
        stderr
    };
    let mut lines = text
        .lines()
        .skip_while(|l| !(l.starts_with("Benchmark") && l.contains("Mode")));
    lines
        .next()
        .ok_or("JMH printed no result table (Benchmark Mode Cnt Score Error Units)")?;
    let row = lines.next().ok_or("JMH's result table is empty")?;
    let w: Vec<&str> = row.split_whitespace().collect();
    // name mode [cnt] score [± error] units: the score stands before "±", else before the units.
    let at = w
        .iter()
        .position(|x| *x == "±")
        .unwrap_or(w.len().saturating_sub(1));
    let score = at
        .checked_sub(1)
        .filter(|i| *i >= 2)
        .and_then(|i| w[i].parse::<f64>().ok())
        .ok_or_else(|| format!("JMH result row without a score: {row:?}"))?;
    Ok(BTreeMap::from([("score".to_string(), score)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rows_score_and_the_modes_direction() {
        let out = "# Run complete.\n\nBenchmark                 Mode  Cnt   Score   Error  Units\nByteArrayTouch.touch      avgt    5  28.700 ± 0.123  ns/op\nByteArrayTouch.touch2     avgt    5  30.100 ± 0.200  ns/op\n";
        assert_eq!(read(out, "").unwrap()["score"], 28.7);
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(!metrics(&w("java -jar b.jar -bm avgt"))[0].higher);
        assert!(metrics(&w("java -jar b.jar"))[0].higher);
        assert!(read("no table", "").is_err());
    }
}
