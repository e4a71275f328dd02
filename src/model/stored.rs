//! A stored run as the results database lists it (`store` reads and writes it).

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RunMeta {
    pub id: i64,
    pub created: String,
    pub label: Option<String>,
    pub command: Vec<String>,
    pub host: String,
    pub kernel: Option<String>,
    /// `running`, `complete`, `interrupted`, `failed`, `imported`.
    pub status: String,
    /// The plan as the command that ran it stored it, typed.
    pub plan: StoredRunPlan,
    /// The stored plan's fields this hugelab could not read (another version's, or another
    /// shape of one it knows), by path: what reading it as typed left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

/// A stored run's plan, typed by the command that wrote it. It is stored as the inner plan's
/// JSON (the database's shape is unchanged) and read back as the first shape that fits: a
/// `run`'s whole plan, a bench's, or — for an import or a plan an earlier version stored in
/// another shape — the parts every reader uses, each read leniently.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum StoredRunPlan {
    Run(Box<StoredPlan>),
    Bench(Box<StoredBenchPlan>),
    Partial(Box<PlanHead>),
}

/// A `run`'s plan as stored: the plan as it ran (what the engine decided on the way included:
/// the replicas, the schedule, the forecasts), who ran it, the machine's huge-page state at its
/// start and the notes the run printed. Written whole when the run starts and again when it
/// ends; never patched field by field.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StoredPlan {
    #[serde(flatten)]
    pub plan: crate::model::run::Plan,
    /// The hugelab that wrote it (set by the store; None before versions were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugelab_version: Option<String>,
    /// The file an imported run came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// The process that ran it: a run killed outright is told from one still running by this.
    pub owner: Option<RunOwner>,
    /// `hugelab status` as the run started (None where it could not be read, or an earlier
    /// version's shape).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub system: Option<crate::model::machine::status::Status>,
    /// What the run printed before its answer (the plan's notes and those made on the way).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub said: Vec<String>,
}

/// A `bench`'s plan as stored: its own plan, the metrics its cells are compared on (each
/// backing against the first), and the machine's state as it started.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StoredBenchPlan {
    pub bench: crate::model::bench::Plan,
    pub metrics: Vec<crate::model::analysis::MetricDef>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub system: Option<crate::model::machine::status::Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugelab_version: Option<String>,
}

/// What every reader of a stored plan uses, from a plan that is neither a whole `run`'s nor a
/// bench's as this version writes them: an import (hyperfine's: unpaired, `wall_s` lower is
/// better) or an earlier version's shape. A part that does not read is absent.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PlanHead {
    #[serde(default)]
    pub baseline: usize,
    /// False for an unpaired import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub design: Option<crate::model::verdict::Design>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_vec"
    )]
    pub metrics: Vec<crate::model::analysis::MetricDef>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_vec"
    )]
    pub conditions: Vec<crate::model::arm::condition::Condition>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub effect: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub confidence: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub arms: Option<Vec<crate::model::arm::spec::Arm>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub server: Option<ServerHead>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub owner: Option<RunOwner>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub system: Option<crate::model::machine::status::Status>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_vec"
    )]
    pub said: Vec<String>,
    /// A bench stored in an earlier shape.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "present"
    )]
    pub bench: bool,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub hugelab_version: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub imported_from: Option<String>,
}

/// A server's plan in a stored plan of another shape: whole where it reads, else the parts the
/// readers name (its preset, its replicas).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ServerHead {
    Whole(Box<crate::model::run::ServerPlan>),
    Part {
        #[serde(default, deserialize_with = "lenient")]
        preset: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        warm: Option<WarmHead>,
    },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WarmHead {
    #[serde(default, deserialize_with = "lenient")]
    pub replicas: Option<usize>,
}

/// A process, by its pid and start time (clock ticks after boot; None where unreadable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOwner {
    pub pid: u32,
    pub start: Option<u64>,
}

/// A part another version stored in another shape reads as absent, not as a failed run.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// A part that is there, whatever its shape.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| true)
}

/// A list another version stored in another shape reads as empty.
fn lenient_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(lenient(d)?.unwrap_or_default())
}

impl RunMeta {
    /// The hugelab that stored the run (runs stored before versions were recorded have none).
    pub fn written_by(&self) -> Option<&str> {
        self.plan.version()
    }

    /// Said when the run was written by another hugelab than this one, or holds fields this
    /// one could not read (named, the first eight).
    pub fn other_version(&self) -> Option<String> {
        let unread = match self.unread.is_empty() {
            true => String::new(),
            false => format!("; of its plan, {}", could_not_read(&self.unread)),
        };
        match self.written_by() {
            Some(v) if v == crate::VERSION && unread.is_empty() => None,
            Some(v) => Some(format!(
                "this run was written by hugelab {v}; this is {}: its evidence is read as this version reads it{unread}",
                crate::VERSION
            )),
            None => Some(format!(
                "this run was written by a hugelab that did not record its version (before 0.1.0's packaging); this is {}{unread}",
                crate::VERSION
            )),
        }
    }
}

/// "this version could not read N: a, b, …", at most eight named: the phrase for what a reader
/// dropped of a stored record (its plan, its trials' evidence).
pub fn could_not_read(unread: &[String]) -> String {
    let n = unread.len();
    let more = match n > 8 {
        true => format!(", and {} more", n - 8),
        false => String::new(),
    };
    format!(
        "this version could not read {n}: {}{more}",
        unread[..n.min(8)].join(", ")
    )
}

/// The fields of `stored` (a record as written) that `read` (the same record read as typed and
/// written again) lacks, by path (`system.thp`, `arms[].spec`): what the reader dropped. A
/// null or empty stored part is nothing lost; an array's elements share one path.
pub fn unread_fields(stored: &serde_json::Value, read: &serde_json::Value) -> Vec<String> {
    fn walk(
        path: &str,
        stored: &serde_json::Value,
        read: Option<&serde_json::Value>,
        out: &mut Vec<String>,
    ) {
        use serde_json::Value;
        let empty = match stored {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        match (stored, read) {
            _ if empty => {}
            (_, None | Some(Value::Null)) if !out.iter().any(|p| p == path) => {
                out.push(path.to_owned());
            }
            (Value::Object(s), Some(Value::Object(r))) => {
                for (k, v) in s {
                    let sub = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(&sub, v, r.get(k), out);
                }
            }
            (Value::Array(s), Some(Value::Array(r))) => {
                for (i, v) in s.iter().enumerate() {
                    walk(&format!("{path}[]"), v, r.get(i), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", stored, Some(read), &mut out);
    out
}

impl StoredRunPlan {
    /// A plan as this hugelab stores it: its version written in, unless it names one (an
    /// import keeps the version it came from).
    pub fn versioned(mut self) -> StoredRunPlan {
        let v = match &mut self {
            StoredRunPlan::Run(p) => &mut p.hugelab_version,
            StoredRunPlan::Bench(p) => &mut p.hugelab_version,
            StoredRunPlan::Partial(p) => &mut p.hugelab_version,
        };
        v.get_or_insert_with(|| crate::VERSION.to_string());
        self
    }

    pub fn version(&self) -> Option<&str> {
        match self {
            StoredRunPlan::Run(p) => p.hugelab_version.as_deref(),
            StoredRunPlan::Bench(p) => p.hugelab_version.as_deref(),
            StoredRunPlan::Partial(p) => p.hugelab_version.as_deref(),
        }
    }

    /// The `run`'s whole plan; None for a bench, a hyperfine import, or an earlier shape.
    pub fn run(&self) -> Option<&StoredPlan> {
        match self {
            StoredRunPlan::Run(p) => Some(p),
            _ => None,
        }
    }

    /// A bench's plan, where it was stored whole.
    pub fn bench(&self) -> Option<&StoredBenchPlan> {
        match self {
            StoredRunPlan::Bench(p) => Some(p),
            _ => None,
        }
    }

    pub fn is_bench(&self) -> bool {
        match self {
            StoredRunPlan::Bench(_) => true,
            StoredRunPlan::Partial(p) => p.bench,
            StoredRunPlan::Run(_) => false,
        }
    }

    /// The arm the others are compared with (a bench's first backing).
    pub fn baseline(&self) -> usize {
        match self {
            StoredRunPlan::Run(p) => p.plan.baseline,
            StoredRunPlan::Bench(_) => 0,
            StoredRunPlan::Partial(p) => p.baseline,
        }
    }

    pub fn metrics(&self) -> &[crate::model::analysis::MetricDef] {
        match self {
            StoredRunPlan::Run(p) => &p.plan.metrics,
            StoredRunPlan::Bench(p) => &p.metrics,
            StoredRunPlan::Partial(p) => &p.metrics,
        }
    }

    pub fn conditions(&self) -> &[crate::model::arm::condition::Condition] {
        match self {
            StoredRunPlan::Run(p) => &p.plan.conditions,
            StoredRunPlan::Bench(_) => &[],
            StoredRunPlan::Partial(p) => &p.conditions,
        }
    }

    /// How the trials were collected: an unpaired import says so; a plan that stored no
    /// design (a bench, an earlier version) was fixed paired blocks.
    pub fn design(&self) -> crate::model::verdict::Design {
        use crate::model::verdict::Design;
        match self {
            StoredRunPlan::Run(p) => p.plan.design.clone(),
            StoredRunPlan::Bench(_) => Design::default(),
            StoredRunPlan::Partial(p) if p.paired == Some(false) => Design::Unpaired,
            StoredRunPlan::Partial(p) => p.design.clone().unwrap_or_default(),
        }
    }

    /// The run's own decision: its effect and confidence, where it stored them (a bench
    /// decides at its confidence, with no effect).
    pub fn decision(&self) -> (Option<f64>, Option<f64>) {
        match self {
            StoredRunPlan::Run(p) => (Some(p.plan.effect), Some(p.plan.confidence)),
            StoredRunPlan::Bench(p) => (None, Some(p.bench.confidence)),
            StoredRunPlan::Partial(p) => (p.effect, p.confidence),
        }
    }

    /// The arms as planned, where the plan kept them.
    pub fn arms(&self) -> Option<&[crate::model::arm::spec::Arm]> {
        match self {
            StoredRunPlan::Run(p) => Some(&p.plan.arms),
            StoredRunPlan::Bench(_) => None,
            StoredRunPlan::Partial(p) => p.arms.as_deref(),
        }
    }

    /// The server's plan, where it was stored whole in a shape this version reads.
    pub fn server(&self) -> Option<&crate::model::run::ServerPlan> {
        match self {
            StoredRunPlan::Run(p) => p.plan.server.as_ref(),
            StoredRunPlan::Partial(p) => match p.server.as_ref()? {
                ServerHead::Whole(s) => Some(s),
                ServerHead::Part { .. } => None,
            },
            StoredRunPlan::Bench(_) => None,
        }
    }

    /// Whether the run measured a server (its plan's server, whole or in part).
    pub fn served(&self) -> bool {
        match self {
            StoredRunPlan::Partial(p) => p.server.is_some(),
            _ => self.server().is_some(),
        }
    }

    /// The server's preset (`--preset postgres`), where one was used.
    pub fn preset(&self) -> Option<&str> {
        match self {
            StoredRunPlan::Partial(p) => match p.server.as_ref()? {
                ServerHead::Part { preset, .. } => preset.as_deref(),
                ServerHead::Whole(s) => s.preset.as_deref(),
            },
            _ => self.server()?.preset.as_deref(),
        }
    }

    /// Servers per arm at once (1 where the plan did not say).
    pub fn replicas(&self) -> usize {
        let part = match self {
            StoredRunPlan::Partial(p) => match p.server.as_ref() {
                Some(ServerHead::Part { warm, .. }) => warm.as_ref().and_then(|w| w.replicas),
                _ => None,
            },
            _ => None,
        };
        part.or_else(|| self.server()?.warm.as_ref()?.replicas)
            .unwrap_or(1)
    }

    /// Who ran it: a `running` run whose owner is gone was killed outright.
    pub fn owner(&self) -> Option<RunOwner> {
        match self {
            StoredRunPlan::Run(p) => p.owner,
            StoredRunPlan::Bench(_) => None,
            StoredRunPlan::Partial(p) => p.owner,
        }
    }

    /// `hugelab status` as the run started, where it was stored in a shape this version reads.
    pub fn system(&self) -> Option<&crate::model::machine::status::Status> {
        match self {
            StoredRunPlan::Run(p) => p.system.as_ref(),
            StoredRunPlan::Bench(p) => p.system.as_ref(),
            StoredRunPlan::Partial(p) => p.system.as_ref(),
        }
    }

    /// What the run printed before its answer.
    pub fn said(&self) -> &[String] {
        match self {
            StoredRunPlan::Run(p) => &p.said,
            StoredRunPlan::Bench(_) => &[],
            StoredRunPlan::Partial(p) => &p.said,
        }
    }

    /// An import names the file it came from.
    pub fn imported_from(mut self, file: &std::path::Path) -> StoredRunPlan {
        let from = Some(file.display().to_string());
        match &mut self {
            StoredRunPlan::Run(p) => p.imported_from = from,
            StoredRunPlan::Partial(p) => p.imported_from = from,
            StoredRunPlan::Bench(_) => {}
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::unread_fields;
    use serde_json::json;

    #[test]
    fn unread_fields_are_the_stored_parts_the_typed_read_left_out() {
        let stored = json!({
            "kept": 1, "gone": {"a": 1}, "null": null, "empty": [],
            "nested": {"kept": true, "gone": "x"},
            "arms": [{"spec": "a", "old": 1}, {"spec": "b", "old": 2}],
            "dropped": {"shape": "another"}
        });
        let read = json!({
            "kept": 1, "nested": {"kept": true},
            "arms": [{"spec": "a"}, {"spec": "b"}],
            "dropped": null
        });
        assert_eq!(
            unread_fields(&stored, &read),
            ["arms[].old", "dropped", "gone", "nested.gone"]
        );
        assert!(unread_fields(&stored, &stored).is_empty());
    }
}
