//! `advise --platform`: an advice placed on a rollout engine's canary node pool
//! ([`NodePool`]) written in that engine's own format — a GKE node system configuration, an AKS
//! custom node configuration, Bottlerocket settings (TOML user data), an OpenShift Tuned profile
//! with its MachineConfigPool — each saying how to apply it, what it cannot set and the nearest
//! lever for that. Prints what the placement holds and computes nothing.

use super::advice::{comments, tuned_plugins};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};
use crate::model::node_pool::{NodePool, Platform};
use crate::units::Bytes;
use std::fmt::Write;

/// The engine's name as its users say it.
pub fn engine(p: Platform) -> &'static str {
    match p {
        Platform::Gke => "GKE",
        Platform::Aks => "AKS",
        Platform::Bottlerocket => "Bottlerocket",
        Platform::Openshift => "OpenShift",
        Platform::Daemonset => "Kubernetes (DaemonSet)",
    }
}

/// How an advice's pools reach the scheduler on `platform`: reserved as the node boots, or set
/// at run time by the DaemonSet (AKS reserves none: its lever is the DaemonSet).
fn pool_path(platform: Platform) -> String {
    match platform {
        Platform::Gke | Platform::Bottlerocket | Platform::Openshift => "the pools are reserved as the node boots, so its kubelet reports hugepages-2Mi/1Gi from the start and pods that request them are scheduled".into(),
        Platform::Aks | Platform::Daemonset => format!("with the DaemonSet, {}", super::advice::RUN_TIME_POOLS),
    }
}

/// The lines every form of the artefact says: where it goes, what it sets, what it cannot set
/// and the lever for that, and the pools against the node's memory. The plan printed beside an
/// artefact that has no comments (AKS's JSON), and the comment of those that do.
pub fn plan(a: &Advice, np: &NodePool) -> Vec<String> {
    let (k, v) = &np.label;
    let mut o = vec![format!(
        "{} canary node pool {:?}, nodes labelled {k}={v}:",
        engine(np.platform),
        np.pool
    )];
    for s in &np.set {
        o.push(format!("  sets {} = {}", s.knob, s.value));
    }
    match (np.set.is_empty(), np.unset.is_empty()) {
        (true, true) => o.push("  sets nothing: the advice changes no setting".into()),
        (true, false) => {
            o.push("  sets nothing (no advised setting is one this engine carries)".into())
        }
        _ => {}
    }
    for u in &np.unset {
        o.push(format!(
            "  cannot set {} = {}: {}",
            u.setting.knob, u.setting.value, u.why
        ));
    }
    if !np.unset.is_empty() {
        let runs: Vec<String> = np.runs.iter().map(i64::to_string).collect();
        o.push(format!(
            "  the nearest lever for those: `hugelab advise {} --format daemonset --node-label {k}={v}` holds every advised setting on the same nodes",
            runs.join(" ")
        ));
    }
    if !a.service.is_empty() {
        let runs: Vec<String> = np.runs.iter().map(i64::to_string).collect();
        o.push(format!(
            "  not in it: the service's own lines (`hugelab advise {} --for {} --format service`)",
            runs.join(" "),
            super::advice::target_name(a)
        ));
    }
    if super::advice::sets_pools(a) {
        o.push(format!("  {}", pool_path(np.platform)));
    }
    if np.platform == Platform::Aks {
        o.push(format!(
            "  apply: az aks nodepool add --resource-group GROUP --cluster-name CLUSTER --name {} --labels {k}={v} --linux-os-config FILE",
            np.pool
        ));
    }
    if np.pooled > 0 {
        let share = np.pooled as f64 * 100.0 / np.node_memory as f64;
        o.push(format!(
            "  the pools reserve {} per node: {share:.0}% of {} ({}){}",
            Bytes(np.pooled),
            Bytes(np.node_memory),
            np.node_memory_from,
            np.pool_limit.map_or(String::new(), |(l, source)| format!(
                "; {} allows at most {:.0}% ({source})",
                engine(np.platform),
                l * 100.0
            ))
        ));
    }
    for n in &np.needs {
        o.push(format!(
            "  needs {}: {} ({})",
            n.release,
            n.fields.join(", "),
            n.source
        ));
    }
    for c in &np.caveats {
        o.push(format!("  mind: {c}"));
    }
    o
}

fn header(a: &Advice, np: &NodePool, how: &str) -> String {
    let mut o = comments(a, "#");
    o.push_str(how);
    for l in plan(a, np) {
        let _ = writeln!(o, "# {l}");
    }
    o
}

fn find(np: &NodePool, knob: Knob) -> Option<&Setting> {
    np.set.iter().find(|s| s.knob == knob)
}

/// The 2 MiB and 1 GiB pools' page counts.
fn pools(np: &NodePool) -> (Option<&str>, Option<&str>) {
    let of =
        |size: u64| find(np, Knob::HugetlbPages { size, node: None }).map(|s| s.value.as_str());
    (of(2 << 20), of(1 << 30))
}

/// Bottlerocket's count for the `size` pool: the whole node's, or `N:count` for each NUMA
/// node, joined by commas, as its settings take them.
fn bottlerocket_count(np: &NodePool, size: u64) -> Option<String> {
    let of = |s: &&Setting| matches!(s.knob, Knob::HugetlbPages { size: z, .. } if z == size);
    let counts: Vec<String> = np
        .set
        .iter()
        .filter(of)
        .map(|s| match s.knob {
            Knob::HugetlbPages { node: Some(n), .. } => format!("{n}:{}", s.value),
            _ => s.value.clone(),
        })
        .collect();
    (!counts.is_empty()).then(|| counts.join(","))
}

/// GKE's enum word for a THP mode or defrag value (`defer+madvise` → `DEFER_WITH_MADVISE`).
fn gke_word(v: &str) -> String {
    v.replace("+madvise", "_with_madvise").to_uppercase()
}

pub fn render(a: &Advice, np: &NodePool) -> String {
    match np.platform {
        Platform::Gke => gke(a, np),
        Platform::Aks => aks(np),
        Platform::Bottlerocket => bottlerocket(a, np),
        Platform::Openshift => openshift(a, np),
        Platform::Daemonset => super::advice::daemonset(a, &np.label, super::advice::IMAGE),
    }
}

fn gke(a: &Advice, np: &NodePool) -> String {
    let (k, v) = &np.label;
    let mut o = header(
        a,
        np,
        &format!(
            "# GKE node system configuration. Create the canary node pool with it:\n\
             #   gcloud container node-pools create {} --cluster CLUSTER \\\n\
             #       --node-labels={k}={v} --system-config-from-file=FILE\n\
             # (on an existing pool, `gcloud container node-pools update` with the same file\n\
             # recreates its nodes when the pools change).\n",
            np.pool
        ),
    );
    o.push_str("linuxConfig:\n");
    if let Some(s) = find(np, Knob::ThpEnabled) {
        let _ = writeln!(
            o,
            "  transparentHugepageEnabled: TRANSPARENT_HUGEPAGE_ENABLED_{}",
            gke_word(&s.value)
        );
    }
    if let Some(s) = find(np, Knob::ThpDefrag) {
        let _ = writeln!(
            o,
            "  transparentHugepageDefrag: TRANSPARENT_HUGEPAGE_DEFRAG_{}",
            gke_word(&s.value)
        );
    }
    if let (None, None) = pools(np) {
    } else {
        o.push_str("  hugepageConfig:\n");
        let (two, one) = pools(np);
        for (key, n) in [("hugepage_size2m", two), ("hugepage_size1g", one)] {
            if let Some(n) = n {
                let _ = writeln!(o, "    {key}: {n}");
            }
        }
    }
    if np.set.is_empty() {
        o.push_str("  {}\n");
    }
    o
}

/// AKS's custom node configuration is JSON, which has no comments: the plan is printed beside
/// it.
fn aks(np: &NodePool) -> String {
    let mut m = serde_json::Map::new();
    for (knob, key) in [
        (Knob::ThpEnabled, "transparentHugePageEnabled"),
        (Knob::ThpDefrag, "transparentHugePageDefrag"),
    ] {
        if let Some(s) = find(np, knob) {
            m.insert(key.into(), s.value.clone().into());
        }
    }
    serde_json::to_string_pretty(&m).unwrap_or_default() + "\n"
}

fn bottlerocket(a: &Advice, np: &NodePool) -> String {
    let (k, v) = &np.label;
    let mut o = header(
        a,
        np,
        "# Bottlerocket settings (TOML user data), as documented for Bottlerocket 1.65 and 1.66.\n\
         # On EKS with Karpenter: the canary EC2NodeClass's spec.userData (its NodePool's\n\
         # template.metadata.labels carries the label too); with eksctl: the node group's\n\
         # bottlerocket.settings. The pools are reserved at boot: a change takes a new node.\n",
    );
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let _ = writeln!(o, "[settings.kubernetes.node-labels]\n{} = {}", q(k), q(v));
    let thp: Vec<(&str, &Setting)> = [("enabled", Knob::ThpEnabled), ("defrag", Knob::ThpDefrag)]
        .into_iter()
        .filter_map(|(key, knob)| Some((key, find(np, knob)?)))
        .collect();
    if !thp.is_empty() {
        o.push_str("\n[settings.kernel.hugepages.transparent]\n");
        for (key, s) in thp {
            let _ = writeln!(o, "{key} = {}", q(&s.value));
        }
    }
    let counts: Vec<(&str, String)> = [("2Mi", 2 << 20), ("1Gi", 1 << 30)]
        .into_iter()
        .filter_map(|(key, size)| Some((key, bottlerocket_count(np, size)?)))
        .collect();
    if !counts.is_empty() {
        // essential: a node that cannot reserve the pool fails to boot rather than joining short.
        o.push_str("\n[settings.kernel.hugepages.static]\nessential = true\n");
        for (key, n) in counts {
            let _ = writeln!(o, "{} = {{ count = {} }}", q(key), q(&n));
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
            let _ = writeln!(o, "{} = {}", q(name), q(&s.value));
        }
    }
    o
}

/// The Tuned profile's name and the MachineConfigPool's role.
const TUNED_PROFILE: &str = "openshift-node-hugelab";

fn openshift(a: &Advice, np: &NodePool) -> String {
    let (k, v) = &np.label;
    let mut o = header(
        a,
        np,
        &format!(
            "# OpenShift: a MachineConfigPool {pool:?} of the nodes labelled {k}={v} (oc label node\n\
             # NODE {k}={v}) and a Tuned profile the Node Tuning Operator applies to that pool\n\
             # only. THP, sysctls and sysfs knobs are set at run time, the pools on the kernel\n\
             # command line. Removing the label or the Tuned object returns the nodes to the\n\
             # worker profile.\n",
            pool = np.pool
        ),
    );
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let settings: Vec<&Setting> = np.set.iter().collect();
    let _ = writeln!(
        o,
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: {pool}\n  labels:\n    machineconfiguration.openshift.io/role: {pool}\nspec:\n  machineConfigSelector:\n    matchExpressions:\n      - key: machineconfiguration.openshift.io/role\n        operator: In\n        values: [worker, {pool}]\n  nodeSelector:\n    matchLabels:\n      {}: {}\n---\napiVersion: tuned.openshift.io/v1\nkind: Tuned\nmetadata:\n  name: hugelab-{pool}\n  namespace: openshift-cluster-node-tuning-operator\nspec:\n  profile:\n    - name: {TUNED_PROFILE}\n      data: |\n        [main]\n        summary=Huge page settings advised by hugelab on the {pool} pool\n        include=openshift-node",
        q(k),
        q(v),
        pool = np.pool
    );
    for l in tuned_plugins(&settings, true).lines() {
        if l.is_empty() {
            continue;
        }
        let _ = writeln!(o, "        {l}");
    }
    let _ = write!(
        o,
        "  recommend:\n    - machineConfigLabels:\n        machineconfiguration.openshift.io/role: {pool}\n      priority: 20\n      profile: {TUNED_PROFILE}\n",
        pool = np.pool
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bottlerocket_writes_a_numa_node_s_pool_as_its_settings_take_it() {
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
            platform: Platform::Bottlerocket,
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
        assert_eq!(
            bottlerocket_count(&per_node, 2 << 20).as_deref(),
            Some("0:300,1:200")
        );
        assert_eq!(bottlerocket_count(&per_node, 1 << 30), None);
        let whole = np(vec![pool(None, "512")]);
        assert_eq!(bottlerocket_count(&whole, 2 << 20).as_deref(), Some("512"));
    }
}
