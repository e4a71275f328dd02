//! Load generators' outputs read without regexes: throughput and latency percentiles of
//! pgbench, redis-benchmark, memtier_benchmark, sysbench, wrk and JMH, each in a file of its
//! own. A format declares its metrics before the run (from the load's arguments), may add
//! arguments that make the load write what it would not print (pgbench's per-transaction log,
//! memtier's JSON), and reads one trial's output into those metrics.

pub use crate::model::trial::load::{LoadFormat, LoadMetric};

mod jmh;
mod memtier;
mod pgbench;
mod redis_benchmark;
mod sysbench;
mod wrk;

use std::collections::BTreeMap;
use std::path::Path;

fn lower(name: impl Into<String>) -> LoadMetric {
    LoadMetric {
        name: name.into(),
        higher: false,
        ..Default::default()
    }
}

fn higher(name: impl Into<String>) -> LoadMetric {
    LoadMetric {
        name: name.into(),
        higher: true,
        ..Default::default()
    }
}

pub const FORMAT_NAMES: &str = "pgbench, redis-benchmark, memtier, sysbench, wrk, jmh";

pub use crate::workload::server::dirs::TrialDir;

/// Whether a load runs for a set time rather than a set amount of work, so that its wall time
/// is the load's own choice: `pgbench -T`, `sysbench --time`, `memtier --test-time`, `wrk -d`,
/// or a service's `{burst}`.
pub fn fixed_duration(words: &[String]) -> bool {
    let prog = words
        .first()
        .map_or("", |w| w.rsplit('/').next().unwrap_or(w));
    let has = |short: Option<&str>, long: &str| {
        crate::backing::services::option(words, short, long).is_some()
    };
    words.iter().any(|w| w.contains("{burst}"))
        || match prog {
            "pgbench" => has(Some("-T"), "--time"),
            "sysbench" => has(None, "--time"),
            "memtier_benchmark" => has(None, "--test-time"),
            "wrk" => has(Some("-d"), "--duration"),
            _ => false,
        }
}

/// The nearest-rank percentile (the smallest value with at least `p`% of values at or below
/// it) of sorted values; `None` for none.
pub fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// A duration with its unit (`354.00us`, `1.06ms`, `2.1s`) in milliseconds.
fn to_ms(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = v.split_at(split);
    let x: f64 = num.trim().parse().ok()?;
    Some(match unit {
        "us" => x / 1000.0,
        "ms" => x,
        "s" => x * 1000.0,
        "m" => x * 60_000.0,
        _ => return None,
    })
}

/// The value after `flag` (`-t set,get`, `-tset`, `--tests=set`).
fn arg_value<'a>(words: &'a [String], short: &str, long: &str) -> Option<&'a str> {
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == short || w == long {
            return it.next().map(String::as_str);
        }
        if let Some(v) = w.strip_prefix(&format!("{long}=")) {
            return Some(v);
        }
        if short.len() == 2
            && let Some(v) = w.strip_prefix(short)
            && !v.is_empty()
            && !w.starts_with("--")
        {
            return Some(v);
        }
    }
    None
}

/// The metrics one trial yields, in order (the first is the primary metric), from the
/// load's words (argv, or a shell command split on white space).
pub fn metrics(format: LoadFormat, words: &[String]) -> Result<Vec<LoadMetric>, String> {
    match format {
        LoadFormat::Pgbench => Ok(pgbench::metrics()),
        LoadFormat::RedisBenchmark => redis_benchmark::metrics(words),
        LoadFormat::Memtier => Ok(memtier::metrics()),
        LoadFormat::Sysbench => Ok(sysbench::metrics(words)),
        LoadFormat::Wrk => Ok(wrk::metrics(words)),
        // Its rows are found in the first trial's results (`discovered`).
        LoadFormat::Jmh => Ok(Vec::new()),
    }
}

/// Arguments that make the load write what this format reads into `dir` (a fresh
/// directory per trial), added to an argv; for a shell command, the check that the user
/// wrote them (with `$HUGELAB_TRIAL_DIR`).
pub fn prepare(format: LoadFormat, argv: &mut Vec<String>, shell: bool) -> Result<(), String> {
    let add: &[&str] = match format {
        LoadFormat::Pgbench => &["-l", "--log-prefix=$HUGELAB_TRIAL_DIR/pgbench_log"],
        LoadFormat::Memtier => &["--json-out-file=$HUGELAB_TRIAL_DIR/memtier.json"],
        LoadFormat::Jmh if !jmh::names_result_file(argv) => {
            &["-rf", "json", "-rff", "$HUGELAB_TRIAL_DIR/jmh.json"]
        }
        _ => return Ok(()),
    };
    if shell {
        let joined = argv.join(" ");
        if !joined.contains("HUGELAB_TRIAL_DIR") {
            return Err(format!(
                "--metric {}: with --shell, add {} to the load command (hugelab sets HUGELAB_TRIAL_DIR for each trial)",
                format.name(),
                add.join(" ")
            ));
        }
        return Ok(());
    }
    if format == LoadFormat::Pgbench
        && argv.iter().any(|a| {
            a == "-l"
                || a == "--log"
                || a.starts_with("--log-prefix")
                || a.starts_with("--aggregate-interval")
        })
    {
        return Err("--metric pgbench adds -l --log-prefix itself (into a directory per trial); remove -l, --log-prefix and --aggregate-interval from the load".into());
    }
    argv.extend(add.iter().map(|s| s.to_string()));
    Ok(())
}

/// One trial's metrics from its output and the files it wrote into `dir`.
pub fn read(
    format: LoadFormat,
    stdout: &str,
    stderr: &str,
    dir: &Path,
) -> Result<BTreeMap<String, f64>, String> {
    match format {
        LoadFormat::Pgbench => pgbench::read(stdout, &pgbench::log_text(dir)?),
        LoadFormat::RedisBenchmark => redis_benchmark::read(stdout),
        LoadFormat::Memtier => {
            let f = dir.join("memtier.json");
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("memtier wrote no {}: {e}", f.display()))?;
            memtier::read(&text)
        }
        LoadFormat::Sysbench => sysbench::read(stdout),
        LoadFormat::Wrk => wrk::read(stdout),
        LoadFormat::Jmh => jmh::read(stdout, stderr, dir),
    }
}

/// Metrics a load names only in its results (JMH's rows, with their directions); empty for
/// a format whose metrics are known before the run.
pub fn discovered(format: LoadFormat, stdout: &str, stderr: &str, dir: &Path) -> Vec<LoadMetric> {
    match format {
        LoadFormat::Jmh => jmh::rows(stdout, stderr, dir)
            .map(|r| jmh::metrics_of(&r))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_matches_its_definition() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 50.0), Some(50.0));
        assert_eq!(nearest_rank(&v, 99.0), Some(99.0));
        assert_eq!(nearest_rank(&v, 99.9), Some(100.0));
        assert_eq!(nearest_rank(&[7.0], 99.0), Some(7.0));
        assert_eq!(nearest_rank(&[], 50.0), None);
    }

    #[test]
    fn units_and_arguments() {
        assert_eq!(to_ms("354.00us"), Some(0.354));
        assert_eq!(to_ms("1.5s"), Some(1500.0));
        assert_eq!(to_ms("12"), None);
        let w: Vec<String> = ["redis-benchmark", "-q", "-t", "set,get", "--percentile=99"]
            .map(String::from)
            .to_vec();
        assert_eq!(arg_value(&w, "-t", "--tests"), Some("set,get"));
        assert_eq!(arg_value(&w, "", "--percentile"), Some("99"));
        let w: Vec<String> = ["x", "-tset"].map(String::from).to_vec();
        assert_eq!(arg_value(&w, "-t", "--tests"), Some("set"));
    }

    #[test]
    fn fixed_durations_are_recognised() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(fixed_duration(&w("pgbench -S -T 5 postgres")));
        assert!(fixed_duration(&w("/usr/bin/pgbench -S -T{burst}")));
        assert!(!fixed_duration(&w("pgbench -S -t 1000 postgres")));
        assert!(fixed_duration(&w("sysbench memory --time=10 run")));
        assert!(!fixed_duration(&w("redis-benchmark -n 1000 -q --csv")));
        assert!(fixed_duration(&w("wrk -d 5s http://x")));
    }

    #[test]
    fn detection_and_preparation() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            LoadFormat::detect(&w("/usr/bin/pgbench -S db")),
            Some(LoadFormat::Pgbench)
        );
        assert_eq!(
            LoadFormat::detect(&w("taskset -c 1 redis-benchmark")),
            Some(LoadFormat::RedisBenchmark)
        );
        assert_eq!(LoadFormat::detect(&w("true")), None);
        let mut a = w("pgbench -S db");
        prepare(LoadFormat::Pgbench, &mut a, false).unwrap();
        assert_eq!(
            a[3..],
            ["-l", "--log-prefix=$HUGELAB_TRIAL_DIR/pgbench_log"]
        );
        assert!(prepare(LoadFormat::Pgbench, &mut w("pgbench -l db"), false).is_err());
        let e = prepare(LoadFormat::Pgbench, &mut w("pgbench -S db"), true).unwrap_err();
        assert!(e.contains("HUGELAB_TRIAL_DIR"), "{e}");
        let mut ok = w("pgbench -l --log-prefix=$HUGELAB_TRIAL_DIR/pgbench_log db");
        prepare(LoadFormat::Pgbench, &mut ok, true).unwrap();
    }

    proptest::proptest! {
        #[test]
        fn every_format_reads_any_text_without_panicking(text in "(?s).{0,400}", words in proptest::collection::vec("[-a-z0-9=,]{0,10}", 0..6)) {
            let dir = std::env::temp_dir();
            let words: Vec<String> = words;
            for f in [LoadFormat::Pgbench, LoadFormat::RedisBenchmark, LoadFormat::Memtier, LoadFormat::Sysbench, LoadFormat::Wrk, LoadFormat::Jmh] {
                let _ = metrics(f, &words);
                let _ = prepare(f, &mut words.clone(), false);
                if f != LoadFormat::Pgbench && f != LoadFormat::Memtier {
                    let _ = read(f, &text, &text, &dir);
                }
            }
            let _ = pgbench::read(&text, &text);
            let _ = memtier::read(&text);
            let _ = to_ms(&text);
        }
    }
}
