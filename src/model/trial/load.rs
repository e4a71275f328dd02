//! The metrics a load generator or a trial's output give, and the known generators' formats,
//! as planned and stored; reading them from an output is `collect`'s.

use regex::Regex;

/// A metric a format produces; `higher`: larger is better (throughput).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LoadMetric {
    pub name: String,
    pub higher: bool,
    /// A profiler's metric of a result row (JMH `-prof gc`/`perfnorm`): not a row of the
    /// load's table, so not in the rows' family.
    pub secondary: bool,
    /// No direction is known: recorded and shown, never a verdict or a cost.
    pub context: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadFormat {
    Pgbench,
    RedisBenchmark,
    Memtier,
    Sysbench,
    Wrk,
    Jmh,
}

impl LoadFormat {
    pub fn parse(s: &str) -> Option<LoadFormat> {
        Some(match s {
            "pgbench" => LoadFormat::Pgbench,
            "redis-benchmark" => LoadFormat::RedisBenchmark,
            "memtier" | "memtier_benchmark" => LoadFormat::Memtier,
            "sysbench" => LoadFormat::Sysbench,
            "wrk" => LoadFormat::Wrk,
            "jmh" => LoadFormat::Jmh,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadFormat::Pgbench => "pgbench",
            LoadFormat::RedisBenchmark => "redis-benchmark",
            LoadFormat::Memtier => "memtier",
            LoadFormat::Sysbench => "sysbench",
            LoadFormat::Wrk => "wrk",
            LoadFormat::Jmh => "jmh",
        }
    }

    /// The format of a load command by its program's name, for the known generators.
    pub fn detect(words: &[String]) -> Option<LoadFormat> {
        words.iter().find_map(|w| {
            let prog = w.rsplit('/').next().unwrap_or(w);
            match prog {
                "pgbench" => Some(LoadFormat::Pgbench),
                "redis-benchmark" => Some(LoadFormat::RedisBenchmark),
                "memtier_benchmark" => Some(LoadFormat::Memtier),
                "sysbench" => Some(LoadFormat::Sysbench),
                "wrk" => Some(LoadFormat::Wrk),
                _ => None,
            }
        })
    }
}

/// A metric read from a trial's output by a regex.
#[derive(Debug, Clone)]
pub struct OutputMetric {
    pub name: String,
    pub re: Regex,
    /// Larger is better (throughput); the default is lower (a time).
    pub higher: bool,
}

/// Stored with the plan as the user wrote it: name, regex, direction.
impl serde::Serialize for OutputMetric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("OutputMetric", 3)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("regex", self.re.as_str())?;
        st.serialize_field("better", if self.higher { "higher" } else { "lower" })?;
        st.end()
    }
}

impl OutputMetric {
    /// `NAME=REGEX[,higher|lower]`, checked: a capture group, a name that is not reserved, and
    /// a word after the last comma that is a direction or part of the regex.
    pub fn parse(s: &str) -> Result<OutputMetric, String> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("--metric {s:?}: expected NAME=REGEX[,higher|lower]"))?;
        let (pat, higher) = match rest.rsplit_once(',') {
            Some((p, "higher")) => (p, true),
            Some((p, "lower")) => (p, false),
            Some((_, w)) if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()) => {
                return Err(format!(
                    "--metric {name}: unknown direction {w:?} after the last comma; use higher or lower (write \\,{w} to match a literal ,{w})"
                ));
            }
            _ => (rest, false),
        };
        let re = Regex::new(pat).map_err(|e| format!("--metric {name}: invalid regex: {e}"))?;
        if re.captures_len() < 2 {
            return Err(format!(
                "--metric {name}: the regex needs a capture group around the number, e.g. '([0-9.]+) MiB/sec'"
            ));
        }
        if name.is_empty() || name == "wall_s" {
            return Err(format!("--metric name {name:?} is empty or reserved"));
        }
        Ok(OutputMetric {
            name: name.into(),
            re,
            higher,
        })
    }

    /// The first capture group of the first match in stdout or stderr, as a number.
    pub fn extract(&self, stdout: &str, stderr: &str) -> Option<f64> {
        [stdout, stderr]
            .iter()
            .find_map(|t| self.re.captures(t)?.get(1)?.as_str().trim().parse().ok())
    }
}
