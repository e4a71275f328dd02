//! Synthetic series written as OpenMetrics and backfilled into a Prometheus data directory with
//! `promtool tsdb create-blocks-from openmetrics` (judge's tests and bench).

use hugelab::collect::prometheus::Series;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One OpenMetrics family: its TYPE line and every series' samples (seconds).
pub fn family(out: &mut String, name: &str, kind: &str, sample: &str, series: &[Series]) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for s in series {
        let labels: Vec<String> = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        for (t, v) in &s.points {
            let _ = writeln!(out, "{sample}{{{}}} {v} {t:.0}", labels.join(","));
        }
    }
}

pub fn relabel(
    mut s: Vec<Series>,
    start: f64,
    labels: impl Fn(usize) -> Vec<(&'static str, String)>,
) -> Vec<Series> {
    for (i, x) in s.iter_mut().enumerate() {
        x.labels = labels(i)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for p in &mut x.points {
            p.0 += start;
        }
    }
    s
}

/// Backfill `text` (OpenMetrics) into `dir/data` and return that directory.
pub fn backfill(dir: &Path, text: &str) -> PathBuf {
    let input = dir.join("fleet.om");
    std::fs::write(&input, text).unwrap();
    let data = dir.join("data");
    super::succeed(
        std::process::Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
            .arg(&input)
            .arg(&data),
    );
    data
}

/// A window of `hours` ending twenty minutes ago on a whole minute, as (start, end) in unix
/// seconds: recent enough for Prometheus's retention, ended so every sample is in a block.
pub fn recent_window(hours: f64) -> (f64, f64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let end = ((now - 1200.0) / 60.0).floor() * 60.0;
    (end - hours * 3600.0, end)
}
