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
