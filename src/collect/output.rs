//! A number read from a trial's output by the user's regex (`run --metric NAME=REGEX`): the
//! first capture group of the first match in stdout, else stderr. The built-in load formats
//! (`load/`) read their outputs without regexes.

pub use crate::model::trial::load::OutputMetric;

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
