//! A condition the machine is put in for a run (fragmented, under pressure, a full page
//! cache), as planned and stored; preparing it is `backing::condition`'s.

use crate::model::arm::knob::Knob;
use crate::units::Bytes;

pub const SYNTAX: &str =
    "clean, fragmented[=FRACTION][,proactiveness=N], pressure=SIZE or cache[=FRACTION]";

fn fraction(what: &str, v: Option<&str>) -> Result<f64, String> {
    let Some(v) = v else { return Ok(1.0) };
    match v.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!(
            "--condition {what}={v}: the fraction must be a number in (0, 1], e.g. {what}=0.5"
        )),
    }
}

/// A machine state, as `--condition` names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Condition {
    /// The machine as found.
    Clean,
    /// `fraction` of MemAvailable faulted in 4 KiB pages, three of every four given back, and
    /// every 2 MiB block still free taken whole; kcompactd's proactive compaction held at
    /// `proactiveness` meanwhile (0 by default: otherwise it repairs the damage within seconds).
    Fragmented { fraction: f64, proactiveness: u32 },
    /// Memory held so that MemAvailable is `headroom` when each trial starts.
    Pressure { headroom: u64 },
    /// `fraction` of free memory filled with clean page cache (a file's pages, read).
    Cache { fraction: f64 },
}

impl std::str::FromStr for Condition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',');
        let head = parts.next().unwrap_or_default().trim();
        let (kind, value) = match head.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (head, None),
        };
        let extra: Vec<&str> = parts.collect();
        let mut proactiveness = 0;
        for e in &extra {
            match e.split_once('=') {
                Some(("proactiveness", n)) if kind == "fragmented" => {
                    proactiveness = n.parse().ok().filter(|n| *n <= 100).ok_or_else(|| {
                        format!("--condition {s}: proactiveness must be 0–100 (vm.compaction_proactiveness)")
                    })?;
                }
                _ => {
                    return Err(format!(
                        "--condition {s}: {e:?} is not an option of {kind}; give {SYNTAX}"
                    ));
                }
            }
        }
        match (kind, value) {
            ("clean", None) => Ok(Condition::Clean),
            ("fragmented", v) => Ok(Condition::Fragmented {
                fraction: fraction(kind, v)?,
                proactiveness,
            }),
            ("pressure", Some(v)) => {
                let headroom = v
                    .parse::<Bytes>()
                    .map_err(|e| format!("--condition pressure={v}: {e}; give a size such as 1G"))?
                    .0;
                if headroom < 64 << 20 {
                    return Err(format!(
                        "--condition pressure={v}: below 64M the workload would meet the OOM killer, not reclaim; give at least 64M"
                    ));
                }
                Ok(Condition::Pressure { headroom })
            }
            ("pressure", None) => Err(
                "--condition pressure needs the headroom the workload keeps: pressure=SIZE, e.g. pressure=1G".into(),
            ),
            ("cache", v) => Ok(Condition::Cache {
                fraction: fraction(kind, v)?,
            }),
            _ => Err(format!("--condition {s:?}: unknown; give {SYNTAX}")),
        }
    }
}

impl Condition {
    /// Its name in answers: the kind, with the value when it is not the default.
    pub fn name(&self) -> String {
        match self {
            Condition::Clean => "clean".into(),
            Condition::Fragmented {
                fraction,
                proactiveness,
            } => {
                let mut s = "fragmented".to_string();
                if *fraction < 1.0 {
                    s.push_str(&format!("={fraction}"));
                }
                if *proactiveness > 0 {
                    s.push_str(&format!(",proactiveness={proactiveness}"));
                }
                s
            }
            Condition::Pressure { headroom } => format!("pressure={}", Bytes(*headroom)),
            Condition::Cache { fraction } if *fraction < 1.0 => format!("cache={fraction}"),
            Condition::Cache { .. } => "cache".into(),
        }
    }

    /// What it does to the machine, in a sentence.
    pub fn describe(&self) -> String {
        match self {
            Condition::Clean => "the machine as found".into(),
            Condition::Fragmented {
                fraction,
                proactiveness,
            } => format!(
                "{}% of MemAvailable faulted in 4 KiB pages and three of every four given back, every 2 MiB block still free taken whole before each trial; vm.compaction_proactiveness {proactiveness} meanwhile",
                (fraction * 100.0).round()
            ),
            Condition::Pressure { headroom } => format!(
                "memory held so that MemAvailable is {} as each trial starts",
                Bytes(*headroom)
            ),
            Condition::Cache { fraction } => format!(
                "{}% of free memory filled with clean page cache (a file's pages, read), re-read before each trial",
                (fraction * 100.0).round()
            ),
        }
    }

    /// System settings held while the condition is (restored with every other setting).
    pub fn settings(&self) -> Vec<(Knob, String)> {
        match self {
            Condition::Fragmented { proactiveness, .. } => {
                vec![(Knob::CompactionProactiveness, proactiveness.to_string())]
            }
            _ => Vec::new(),
        }
    }

    /// Whether holding it needs root (a system setting).
    pub fn needs_root(&self) -> bool {
        !self.settings().is_empty()
    }
}

/// How a condition was brought back before a trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Restored {
    pub seconds: f64,
    /// `fragmented`: free 2 MiB blocks taken whole (the previous trial's compaction made them).
    pub taken_2m: u64,
    /// Memory given back (`fragmented`: kept pages, as many as the blocks taken; `pressure`).
    pub released_bytes: u64,
    /// Memory taken (`pressure`) or page cache read again (`cache`).
    pub added_bytes: u64,
}
