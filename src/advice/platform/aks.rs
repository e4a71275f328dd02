//! `--platform aks`: an AKS custom node configuration (`az aks nodepool add
//! --linux-os-config`). It sets the THP mode and defrag; it reserves no hugetlb pool (the
//! DaemonSet sets those at run time), and its sysctls are a fixed list without the others.

use super::{NodePool, Platform, PoolNames, setting};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};

pub struct Aks;

impl Platform for Aks {
    fn name(&self) -> &'static str {
        "aks"
    }
    fn help(&self) -> &'static str {
        "AKS custom node configuration (`az aks nodepool add --linux-os-config`)"
    }
    fn engine(&self) -> &'static str {
        "AKS"
    }
    fn carries(&self, knob: &Knob) -> Result<(), String> {
        match knob {
            Knob::ThpEnabled | Knob::ThpDefrag => Ok(()),
            Knob::HugetlbPages { .. } => {
                Err("AKS's custom node configuration reserves no hugetlb pool".into())
            }
            _ => Err("AKS's custom node configuration has no such setting (its sysctls are a fixed list without it)".into()),
        }
    }
    fn pool_names(&self) -> PoolNames {
        PoolNames {
            max: 12,
            inside: "",
        }
    }
    fn needs(&self, _set: &[Setting]) -> Option<super::Need> {
        super::need(
            "Azure CLI 2.35.0 or later",
            vec!["az aks nodepool add --linux-os-config"],
            "the Azure CLI 2.35.0 release notes, which add the flag",
        )
    }
    fn boot_pools(&self) -> bool {
        false
    }
    fn apply(&self, np: &NodePool) -> Option<String> {
        let (k, v) = &np.label;
        Some(format!(
            "az aks nodepool add --resource-group GROUP --cluster-name CLUSTER --name {} --labels {k}={v} --linux-os-config FILE",
            np.pool
        ))
    }
    /// JSON, which has no comments: the plan is printed beside it.
    fn write(&self, _a: &Advice, np: &NodePool) -> String {
        let mut m = serde_json::Map::new();
        for (knob, key) in [
            (Knob::ThpEnabled, "transparentHugePageEnabled"),
            (Knob::ThpDefrag, "transparentHugePageDefrag"),
        ] {
            if let Some(s) = setting(np, knob) {
                m.insert(key.into(), s.value.clone().into());
            }
        }
        serde_json::to_string_pretty(&m).unwrap_or_default() + "\n"
    }
}
