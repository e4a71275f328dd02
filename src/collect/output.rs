//! A number read from a trial's output by the user's regex (`run --metric NAME=REGEX`): the
//! first capture group of the first match in stdout, else stderr. The built-in load formats
//! (`load/`) read their outputs without regexes.

use regex::Regex;

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

/// Read back as stored: the regex compiled again, and checked as `--metric` checks it.
impl<'de> serde::Deserialize<'de> for OutputMetric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Stored {
            name: String,
            regex: String,
            better: String,
        }
        let s = Stored::deserialize(d)?;
        OutputMetric::parse(&format!("{}={},{}", s.name, s.regex, s.better))
            .map_err(serde::de::Error::custom)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_capture_from_stdout_then_stderr() {
        let m = OutputMetric::parse("rate=([0-9.]+) MiB/s,higher").unwrap();
        assert!(m.higher);
        assert_eq!(m.extract("x\nrate 1\n12.5 MiB/s\n", ""), Some(12.5));
        assert_eq!(m.extract("nothing", "3 MiB/s"), Some(3.0));
        assert_eq!(m.extract("nothing", "none"), None);
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["regex"], "([0-9.]+) MiB/s");
        assert_eq!(json["better"], "higher");
    }

    #[test]
    fn refuses_what_cannot_measure() {
        assert!(
            OutputMetric::parse("t=[0-9]+")
                .unwrap_err()
                .contains("capture group")
        );
        assert!(
            OutputMetric::parse("wall_s=([0-9]+)")
                .unwrap_err()
                .contains("reserved")
        );
        assert!(
            OutputMetric::parse("t=([0-9]+),faster")
                .unwrap_err()
                .contains("unknown direction")
        );
        assert!(
            OutputMetric::parse("t")
                .unwrap_err()
                .contains("expected NAME=REGEX")
        );
        // A comma inside the regex is the regex's own.
        assert!(!OutputMetric::parse("t=([0-9]+),[0-9]").unwrap().higher);
    }
}
