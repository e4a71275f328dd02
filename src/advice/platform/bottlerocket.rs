//! `--platform bottlerocket`: Bottlerocket settings as TOML user data (EKS, Karpenter's
//! EC2NodeClass). They set the THP mode and defrag, the 2 MiB and 1 GiB pools at boot (for the
//! whole node or per NUMA node) and any sysctl; a sysfs-only knob they cannot.

use super::{NodePool, Platform, Unset, header, quoted, setting};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};
use std::fmt::Write;

pub struct Bottlerocket;

impl Platform for Bottlerocket {
    fn name(&self) -> &'static str {
        "bottlerocket"
    }
    fn help(&self) -> &'static str {
        "Bottlerocket settings as user data (EKS, Karpenter's EC2NodeClass)"
    }
    fn engine(&self) -> &'static str {
        "Bottlerocket"
    }
    fn carries(&self, knob: &Knob) -> Result<(), String> {
        match knob {
            Knob::ThpEnabled | Knob::ThpDefrag => Ok(()),
            // A pool per NUMA node too (`count = "0:300,1:300"`).
            Knob::HugetlbPages { size, node } => super::boot_pool(*size, *node, true),
            k if k.sysctl().is_some() => Ok(()),
            _ => Err(
                "Bottlerocket's settings have no such knob (it is a sysfs file, not a sysctl)"
                    .into(),
            ),
        }
    }
    /// One count per size: the whole node's, or per NUMA node, not both.
    fn settle(&self, set: &mut Vec<Setting>, unset: &mut Vec<Unset>) {
        let whole: Vec<u64> = set
            .iter()
            .filter_map(|s| match s.knob {
                Knob::HugetlbPages { size, node: None } => Some(size),
                _ => None,
            })
            .collect();
        let (per_node, rest): (Vec<Setting>, Vec<Setting>) =
            std::mem::take(set).into_iter().partition(|s| {
                matches!(s.knob, Knob::HugetlbPages { size, node: Some(_) } if whole.contains(&size))
            });
        *set = rest;
        unset.extend(per_node.into_iter().map(|setting| Unset {
            setting,
            why: "Bottlerocket takes a size's pool for the whole node or per NUMA node, not both, and the whole node's is set".into(),
        }));
    }
    fn needs(&self, set: &[Setting]) -> Option<super::Need> {
        let has = |k: Knob| set.iter().any(|s| s.knob == k);
        super::need(
            "Bottlerocket 1.64.0 or later",
            [
                (
                    set.iter().any(|s| s.knob.is_pool()),
                    "settings.kernel.hugepages.static",
                ),
                (
                    has(Knob::ThpEnabled) || has(Knob::ThpDefrag),
                    "settings.kernel.hugepages.transparent",
                ),
            ]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect(),
            "the Bottlerocket 1.64.0 release notes: \"Add support for static and transparent hugepages\"",
        )
    }
    fn caveats(&self, set: &[Setting]) -> Vec<String> {
        let essential = "essential = true: a node that cannot reserve the whole pool as it boots fails its boot rather than join short (drop the line to let it join with what it got)";
        set.iter()
            .any(|s| s.knob.is_pool())
            .then(|| essential.to_string())
            .into_iter()
            .collect()
    }
    fn boot_pools(&self) -> bool {
        true
    }
    fn write(&self, a: &Advice, np: &NodePool) -> String {
        let (k, v) = &np.label;
        let mut o = header(
            a,
            np,
            "# Bottlerocket settings (TOML user data), as documented for Bottlerocket 1.65 and 1.66.\n\
             # On EKS with Karpenter: the canary EC2NodeClass's spec.userData (its NodePool's\n\
             # template.metadata.labels carries the label too); with eksctl: the node group's\n\
             # bottlerocket.settings. The pools are reserved at boot: a change takes a new node.\n",
        );
        let _ = writeln!(
            o,
            "[settings.kubernetes.node-labels]\n{} = {}",
            quoted(k),
            quoted(v)
        );
        let thp: Vec<(&str, &Setting)> =
            [("enabled", Knob::ThpEnabled), ("defrag", Knob::ThpDefrag)]
                .into_iter()
                .filter_map(|(key, knob)| Some((key, setting(np, knob)?)))
                .collect();
        if !thp.is_empty() {
            o.push_str("\n[settings.kernel.hugepages.transparent]\n");
            for (key, s) in thp {
                let _ = writeln!(o, "{key} = {}", quoted(&s.value));
            }
        }
        let counts: Vec<(&str, String)> = [("2Mi", 2 << 20), ("1Gi", 1 << 30)]
            .into_iter()
            .filter_map(|(key, size)| Some((key, count(np, size)?)))
            .collect();
        if !counts.is_empty() {
            // essential: a node that cannot reserve the pool fails to boot rather than joining
            // short.
            o.push_str("\n[settings.kernel.hugepages.static]\nessential = true\n");
            for (key, n) in counts {
                let _ = writeln!(o, "{} = {{ count = {} }}", quoted(key), quoted(&n));
            }
        }
        let sysctls: Vec<(&str, &Setting)> = np
            .set
            .iter()
            .filter(|s| !matches!(s.knob, Knob::HugetlbPages { .. }))
            .filter_map(|s| Some((s.knob.sysctl()?, s)))
            .collect();
        if !sysctls.is_empty() {
            o.push_str("\n[settings.kernel.sysctl]\n");
            for (name, s) in sysctls {
                let _ = writeln!(o, "{} = {}", quoted(name), quoted(&s.value));
            }
        }
        o
    }
}

/// The count for the `size` pool: the whole node's, or `N:count` for each NUMA node, joined by
/// commas, as Bottlerocket's settings take them.
fn count(np: &NodePool, size: u64) -> Option<String> {
    let counts: Vec<String> = np
        .set
        .iter()
        .filter(|s| matches!(s.knob, Knob::HugetlbPages { size: z, .. } if z == size))
        .map(|s| match s.knob {
            Knob::HugetlbPages { node: Some(n), .. } => format!("{n}:{}", s.value),
            _ => s.value.clone(),
        })
        .collect();
    (!counts.is_empty()).then(|| counts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numa_node_s_pool_is_written_as_the_settings_take_it() {
        let pool = |node, value: &str| Setting {
            knob: Knob::HugetlbPages {
                size: 2 << 20,
                node,
            },
            value: value.into(),
            now: None,
            why: String::new(),
        };
        let np = |set| NodePool {
            platform: &Bottlerocket,
            pool: "canary".into(),
            label: ("pool".into(), "canary".into()),
            set,
            unset: Vec::new(),
            pooled: 0,
            node_memory: 8 << 30,
            node_memory_from: "t".into(),
            pool_limit: None,
            needs: Vec::new(),
            caveats: Vec::new(),
            runs: Vec::new(),
        };
        let per_node = np(vec![pool(Some(0), "300"), pool(Some(1), "200")]);
        assert_eq!(count(&per_node, 2 << 20).as_deref(), Some("0:300,1:200"));
        assert_eq!(count(&per_node, 1 << 30), None);
        let whole = np(vec![pool(None, "512")]);
        assert_eq!(count(&whole, 2 << 20).as_deref(), Some("512"));
    }
}
