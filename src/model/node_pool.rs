//! A pod's toleration of a rollout engine's canary node pool: what `judge --placement` writes
//! into the rollout's pod template beside the node selector.

/// A pod's toleration of the canary pool's taint (Kubernetes' `Toleration`): `Equal` with a
/// value, `Exists` without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// The effects a Kubernetes taint has.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl serde::Serialize for Toleration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("key", &self.key)?;
        match &self.value {
            Some(v) => {
                m.serialize_entry("operator", "Equal")?;
                m.serialize_entry("value", v)?;
            }
            None => m.serialize_entry("operator", "Exists")?,
        }
        m.serialize_entry("effect", &self.effect)?;
        m.end()
    }
}
