//! Where an advice's settings go on a rollout engine's canary node pool: which of them the
//! engine's own node configuration sets, which it cannot (and why), and the pools against the
//! node's memory. `analyze::advice::node_pool` decides it; `render::node_pool` writes it.
use crate::model::advice::Setting;

/// The engine whose node configuration carries the settings (`advise --platform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Platform {
    /// GKE node system configuration (`gcloud container node-pools create
    /// --system-config-from-file`)
    Gke,
    /// AKS custom node configuration (`az aks nodepool add --linux-os-config`)
    Aks,
    /// Bottlerocket settings as user data (EKS, Karpenter's EC2NodeClass)
    Bottlerocket,
    /// An OpenShift Tuned profile and the MachineConfigPool of the canary nodes
    Openshift,
    /// Any Kubernetes: a ConfigMap and a DaemonSet running `hugelab apply` (the same as
    /// --format daemonset)
    Daemonset,
}

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

/// A setting the engine's node configuration cannot carry, and why.
#[derive(Debug, Clone)]
pub struct Unset {
    pub setting: Setting,
    pub why: String,
}

/// A release of an engine or its client that the artefact's fields need, as its documentation
/// or release notes (`source`) say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub release: &'static str,
    pub fields: Vec<&'static str>,
    pub source: &'static str,
}

/// The advice placed on one engine's canary node pool.
#[derive(Debug, Clone)]
pub struct NodePool {
    pub platform: Platform,
    /// The node pool's name (GKE and AKS node pool, OpenShift MachineConfigPool).
    pub pool: String,
    /// The label that marks the canary nodes.
    pub label: (String, String),
    /// The settings the engine's configuration carries.
    pub set: Vec<Setting>,
    /// The settings it cannot carry.
    pub unset: Vec<Unset>,
    /// Bytes the advised hugetlb pools reserve on each node.
    pub pooled: u64,
    /// The node memory the pools were checked against, and where that figure came from.
    pub node_memory: u64,
    pub node_memory_from: String,
    /// The share of a node's memory the engine lets huge pages take, where it documents one,
    /// and where it does.
    pub pool_limit: Option<(f64, &'static str)>,
    /// The releases of the engine (or its client) the artefact's fields need.
    pub needs: Vec<Need>,
    /// What applying it does that its user should know first (a reboot, a boot that fails).
    pub caveats: Vec<String>,
    /// The stored runs the advice rests on (for the command that writes the DaemonSet).
    pub runs: Vec<i64>,
}
