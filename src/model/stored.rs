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

impl RunMeta {
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
