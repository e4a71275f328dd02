//! A stored run as the results database lists it (`store` reads and writes it).

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunMeta {
    pub id: i64,
    pub created: String,
    pub label: Option<String>,
    pub command: Vec<String>,
    pub host: String,
    pub kernel: Option<String>,
    /// `running`, `complete`, `interrupted`, `failed`, `imported`.
    pub status: String,
    /// Plan and options as JSON.
    pub plan: serde_json::Value,
}

/// A `run`'s plan as stored: the plan as it ran (what the engine decided on the way included:
/// the replicas, the schedule, the forecasts), who ran it, the machine's huge-page state at its
/// start and the notes the run printed. Written whole when the run starts and again when it
/// ends; never patched field by field.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StoredPlan {
    #[serde(flatten)]
    pub plan: crate::model::run::Plan,
    /// The process that ran it: a run killed outright is told from one still running by this.
    pub owner: Option<RunOwner>,
    /// `hugelab status` as the run started (None where it could not be read, or an earlier
    /// version's shape).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub system: Option<crate::probe::status::Status>,
    /// What the run printed before its answer (the plan's notes and those made on the way).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub said: Vec<String>,
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

impl RunMeta {
    /// The plan of a `run` as stored, typed; None for a bench, an import, or a run whose plan
    /// this version cannot read (its fields are then read one by one where needed).
    pub fn run_plan(&self) -> Option<StoredPlan> {
        serde_json::from_value(self.plan.clone()).ok()
    }

    /// The hugelab that stored the run (`plan.hugelab_version`; runs stored before versions
    /// were recorded have none).
    pub fn written_by(&self) -> Option<&str> {
        self.plan["hugelab_version"].as_str()
    }

    /// Said when the run was written by another hugelab than this one.
    pub fn other_version(&self) -> Option<String> {
        match self.written_by() {
            Some(v) if v == crate::VERSION => None,
            Some(v) => Some(format!(
                "this run was written by hugelab {v}; this is {}: its evidence is read as this version reads it",
                crate::VERSION
            )),
            None => Some(format!(
                "this run was written by a hugelab that did not record its version (before 0.1.0's packaging); this is {}",
                crate::VERSION
            )),
        }
    }
}
