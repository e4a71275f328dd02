//! `advise --platform`: an advice placed on a rollout engine's canary node pool. Each engine's
//! node configuration carries some knobs and not others (as each documents it): GKE's node
//! system configuration and AKS's custom node configuration set the THP mode and defrag, GKE
//! and Bottlerocket the 2 MiB and 1 GiB pools at boot, Bottlerocket any sysctl, and an
//! OpenShift Tuned profile every knob (its vm, sysctl, sysfs and bootloader plugins). What an
//! engine cannot carry is kept with why, so the artefact and the plan say so and offer the
//! DaemonSet (`hugelab apply` on the same nodes), which carries every knob.

use super::Advice;
use crate::control::Knob;
use crate::model::advice::Setting;
use crate::model::node_pool::{Need, NodePool, Platform, Unset};
use crate::units::Bytes;

/// GKE reserves at most this share of a node's memory for huge pages, as gcloud's reference
/// says ([`GKE_POOL_SOURCE`]).
pub const GKE_POOL_SHARE: f64 = 0.6;
const GKE_POOL_SOURCE: &str = "`gcloud container node-pools create --help`, --system-config-from-file: \"Allocated hugepage size should not exceed 60% of available memory on the node\"";

/// The canary node pool's name when none is given: valid on every engine (AKS allows at most
/// 12 lowercase letters and digits for a Linux node pool).
pub const POOL: &str = "hugecanary";

/// Whether `platform`'s node configuration sets `knob`: `Err` says why not.
fn carries(platform: Platform, knob: &Knob) -> Result<(), String> {
    let boot_pool = |size: u64, node: Option<u32>| {
        // Bottlerocket takes a pool per NUMA node too (`count = "0:300,1:300"`).
        if node.is_some() && platform != Platform::Bottlerocket {
            Err("it sets a pool for the whole node, not one NUMA node's".to_string())
        } else if size != 2 << 20 && size != 1 << 30 {
            Err(format!("it has no {} pool", Bytes(size)))
        } else {
            Ok(())
        }
    };
    match (platform, knob) {
        (Platform::Openshift | Platform::Daemonset, _) => Ok(()),
        (_, Knob::ThpEnabled | Knob::ThpDefrag) => Ok(()),
        (Platform::Gke | Platform::Bottlerocket, Knob::HugetlbPages { size, node }) => {
            boot_pool(*size, *node)
        }
        (Platform::Aks, Knob::HugetlbPages { .. }) => {
            Err("AKS's custom node configuration reserves no hugetlb pool".into())
        }
        (Platform::Bottlerocket, k) if k.sysctl().is_some() => Ok(()),
        (Platform::Gke, _) => {
            Err("GKE's node system configuration has no such setting (its sysctls are a fixed list without it)".into())
        }
        (Platform::Aks, _) => {
            Err("AKS's custom node configuration has no such setting (its sysctls are a fixed list without it)".into())
        }
        (Platform::Bottlerocket, _) => {
            Err("Bottlerocket's settings have no such knob (it is a sysfs file, not a sysctl)".into())
        }
    }
}

/// Whether `name` is a node pool name `platform` accepts.
fn pool_name(platform: Platform, name: &str) -> Result<(), String> {
    let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let starts = name.starts_with(|c: char| c.is_ascii_lowercase());
    let ok = match platform {
        Platform::Aks => starts && name.len() <= 12 && name.chars().all(lower),
        Platform::Gke => {
            starts
                && name.len() <= 40
                && name.chars().all(|c| lower(c) || c == '-')
                && !name.ends_with('-')
        }
        _ => {
            starts
                && name.len() <= 63
                && name.chars().all(|c| lower(c) || c == '-' || c == '.')
                && !name.ends_with(['-', '.'])
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--pool {name:?}: not a node pool name {platform:?} accepts (lowercase letters and digits, starting with a letter{}); e.g. --pool {POOL}",
            match platform {
                Platform::Aks => ", at most 12",
                Platform::Gke => ", '-' inside, at most 40",
                _ => ", '-' and '.' inside, at most 63",
            }
        ))
    }
}

/// The advice on `platform`'s canary pool `pool` of nodes labelled `label`, with the pools
/// checked against `node_memory` bytes (`from` says where that figure came from). `Err` names
/// the value that cannot be and the fix.
pub fn place(
    adv: &Advice,
    platform: Platform,
    pool: &str,
    label: &(String, String),
    node_memory: u64,
    from: &str,
) -> Result<NodePool, String> {
    pool_name(platform, pool)?;
    let (mut set, mut unset) = (Vec::new(), Vec::new());
    for s in &adv.settings {
        match carries(platform, &s.knob) {
            Ok(()) => set.push(s.clone()),
            Err(why) => unset.push(Unset {
                setting: s.clone(),
                why,
            }),
        }
    }
    if platform == Platform::Bottlerocket {
        // One count per size: the whole node's, or per NUMA node, not both.
        let whole: Vec<u64> = set
            .iter()
            .filter_map(|s| match s.knob {
                Knob::HugetlbPages { size, node: None } => Some(size),
                _ => None,
            })
            .collect();
        let (per_node, rest): (Vec<Setting>, Vec<Setting>) = set.into_iter().partition(|s| {
            matches!(s.knob, Knob::HugetlbPages { size, node: Some(_) } if whole.contains(&size))
        });
        set = rest;
        unset.extend(per_node.into_iter().map(|setting| Unset {
            setting,
            why: "Bottlerocket takes a size's pool for the whole node or per NUMA node, not both, and the whole node's is set".into(),
        }));
    }
    let pooled = super::pool_bytes(&set);
    let pool_limit = (platform == Platform::Gke).then_some((GKE_POOL_SHARE, GKE_POOL_SOURCE));
    if let Some((limit, _)) = pool_limit
        && pooled as f64 > limit * node_memory as f64
    {
        return Err(format!(
            "the advised pools take {} of a {} node ({}, {:.0}%): GKE lets huge pages take at most {:.0}% of a node's memory; give --node-memory SIZE for the node pool's machine type, or choose a machine type with at least {}",
            Bytes(pooled),
            Bytes(node_memory),
            from,
            pooled as f64 * 100.0 / node_memory as f64,
            limit * 100.0,
            Bytes((pooled as f64 / limit).ceil() as u64)
        ));
    }
    let mut runs: Vec<i64> = adv.evidence.iter().map(|e| e.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    Ok(NodePool {
        platform,
        pool: pool.to_string(),
        label: label.clone(),
        unset,
        pooled,
        node_memory,
        node_memory_from: from.to_string(),
        pool_limit,
        needs: needs(platform, &set),
        caveats: caveats(platform, &set),
        set,
        runs,
    })
}

/// What `platform`'s artefact for `set` needs of the engine and its client, from each one's
/// documentation or release notes.
fn needs(platform: Platform, set: &[Setting]) -> Vec<Need> {
    let has = |k: Knob| set.iter().any(|s| s.knob == k);
    let pools = set.iter().any(|s| s.knob.is_pool());
    let need = |release, fields: Vec<&'static str>, source| {
        (!fields.is_empty()).then_some(Need {
            release,
            fields,
            source,
        })
    };
    let one = match platform {
        Platform::Gke => need(
            "GKE 1.34.1-gke.3084001 or later and a gcloud that loads them",
            [
                (Knob::ThpEnabled, "transparentHugepageEnabled"),
                (Knob::ThpDefrag, "transparentHugepageDefrag"),
            ]
            .into_iter()
            .filter(|(k, _)| has(*k))
            .map(|(_, f)| f)
            .collect(),
            "GKE's node system configuration reference; an older gcloud's file loader stops at \"unknown fields\" naming them",
        ),
        Platform::Aks => need(
            "Azure CLI 2.35.0 or later",
            vec!["az aks nodepool add --linux-os-config"],
            "the Azure CLI 2.35.0 release notes, which add the flag",
        ),
        Platform::Bottlerocket => need(
            "Bottlerocket 1.64.0 or later",
            [
                (pools, "settings.kernel.hugepages.static"),
                (
                    has(Knob::ThpEnabled) || has(Knob::ThpDefrag),
                    "settings.kernel.hugepages.transparent",
                ),
            ]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect(),
            "the Bottlerocket 1.64.0 release notes: \"Add support for static and transparent hugepages\"",
        ),
        Platform::Openshift => need(
            "OpenShift Container Platform 4.9 or later",
            vec![
                "Tuned spec.recommend[].machineConfigLabels",
                "a MachineConfigPool per role",
            ],
            "OpenShift 4.9's boot-time huge pages procedure, the oldest documentation hugelab checked",
        ),
        // The DaemonSet says what it needs in its own comment (`render::advice::daemonset`).
        Platform::Daemonset => None,
    };
    one.into_iter().collect()
}

/// What applying `platform`'s artefact for `set` does that its user should know first.
fn caveats(platform: Platform, set: &[Setting]) -> Vec<String> {
    let pools = set.iter().any(|s| s.knob.is_pool());
    let gib_pool = set
        .iter()
        .any(|s| matches!(s.knob, Knob::HugetlbPages { size, .. } if size == 1 << 30));
    let mut o = Vec::new();
    match platform {
        Platform::Gke if gib_pool => o.push(
            "1 GiB pages exist on the machine families c3, m2, c2d, c3d, h3, m3, a2, a3 and g2 only (gcloud's reference for --system-config-from-file); GKE refuses the node pool on another".into(),
        ),
        Platform::Bottlerocket if pools => o.push(
            "essential = true: a node that cannot reserve the whole pool as it boots fails its boot rather than join short (drop the line to let it join with what it got)".into(),
        ),
        Platform::Openshift => {
            o.push("label only nodes in no other custom MachineConfigPool: the Machine Config Operator stops at a node two custom pools select (\"belongs to 2 custom roles\")".into());
            if pools {
                o.push("the pools go on the kernel command line: the Machine Config Operator drains and reboots the pool's nodes one at a time".into());
            }
        }
        _ => {}
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::advice::Setting;
    use crate::control::KhugepagedKnob;

    fn advice(settings: &[(Knob, &str)]) -> Advice {
        let mut a = crate::analyze::advice::machine::advise(&[], Vec::new());
        a.settings = settings
            .iter()
            .map(|(k, v)| Setting {
                knob: *k,
                value: v.to_string(),
                now: None,
                why: String::new(),
            })
            .collect();
        a
    }

    fn label() -> (String, String) {
        ("pool".into(), "canary".into())
    }

    const POOL_2M: Knob = Knob::HugetlbPages {
        size: 2 << 20,
        node: None,
    };

    #[test]
    fn each_engine_carries_what_it_documents_and_keeps_the_rest_with_why() {
        let scan = Knob::Khugepaged {
            name: KhugepagedKnob::ScanSleepMillisecs,
        };
        let a = advice(&[
            (Knob::ThpEnabled, "always"),
            (scan, "1000"),
            (POOL_2M, "512"),
            (Knob::CompactionProactiveness, "0"),
        ]);
        let names = |v: &[Setting]| v.iter().map(|s| s.knob).collect::<Vec<_>>();
        let gib = 16 << 30;
        let gke = place(&a, Platform::Gke, POOL, &label(), gib, "t").unwrap();
        assert_eq!(names(&gke.set), [Knob::ThpEnabled, POOL_2M]);
        assert_eq!(gke.unset.len(), 2);
        assert!(gke.unset[0].why.contains("GKE"), "{:?}", gke.unset);
        assert_eq!(gke.pooled, 1 << 30);
        let aks = place(&a, Platform::Aks, POOL, &label(), gib, "t").unwrap();
        assert_eq!(names(&aks.set), [Knob::ThpEnabled]);
        assert!(aks.unset.iter().any(|u| u.why.contains("no hugetlb pool")));
        assert_eq!(aks.pooled, 0);
        let br = place(&a, Platform::Bottlerocket, POOL, &label(), gib, "t").unwrap();
        assert_eq!(
            names(&br.set),
            [Knob::ThpEnabled, POOL_2M, Knob::CompactionProactiveness]
        );
        assert_eq!(
            names(
                &br.unset
                    .iter()
                    .map(|u| u.setting.clone())
                    .collect::<Vec<_>>()
            ),
            [scan]
        );
        let os = place(&a, Platform::Openshift, POOL, &label(), gib, "t").unwrap();
        assert_eq!(os.set.len(), 4);
        assert!(os.unset.is_empty());
    }

    #[test]
    fn a_pool_over_gke_s_share_of_the_node_is_refused_with_the_memory_it_needs() {
        // 7 GiB of 2 MiB pages on a 10 GiB node: 70% > 60%.
        let a = advice(&[(POOL_2M, "3584")]);
        let e = place(&a, Platform::Gke, POOL, &label(), 10 << 30, "--node-memory").unwrap_err();
        assert!(
            e.contains("70%") && e.contains("60%") && e.contains("--node-memory"),
            "{e}"
        );
        // The same pool on a 12 GiB node is 58%: within it. Other engines document no share.
        assert!(place(&a, Platform::Gke, POOL, &label(), 12 << 30, "t").is_ok());
        let br = place(&a, Platform::Bottlerocket, POOL, &label(), 10 << 30, "t").unwrap();
        assert_eq!(br.pool_limit, None);
    }

    #[test]
    fn each_engine_names_the_release_its_fields_need_and_what_applying_costs() {
        let gib_pool = Knob::HugetlbPages {
            size: 1 << 30,
            node: None,
        };
        let thp = advice(&[(Knob::ThpEnabled, "always"), (Knob::ThpDefrag, "defer")]);
        let pools = advice(&[(POOL_2M, "512"), (gib_pool, "2")]);
        let at = |a: &Advice, p| place(a, p, POOL, &label(), 64 << 30, "t").unwrap();
        let gke = at(&thp, Platform::Gke);
        assert_eq!(gke.needs.len(), 1);
        assert!(
            gke.needs[0]
                .release
                .starts_with("GKE 1.34.1-gke.3084001 or later")
        );
        assert_eq!(
            gke.needs[0].fields,
            ["transparentHugepageEnabled", "transparentHugepageDefrag"]
        );
        // A pool alone needs no THP field; its limit names its source, and 1 GiB its families.
        let gke = at(&pools, Platform::Gke);
        assert!(gke.needs.is_empty(), "{:?}", gke.needs);
        assert!(
            gke.pool_limit
                .unwrap()
                .1
                .contains("60% of available memory")
        );
        assert!(gke.caveats[0].contains("c3, m2, c2d"), "{:?}", gke.caveats);
        assert_eq!(
            at(&thp, Platform::Aks).needs[0].release,
            "Azure CLI 2.35.0 or later"
        );
        let br = at(&pools, Platform::Bottlerocket);
        assert_eq!(br.needs[0].release, "Bottlerocket 1.64.0 or later");
        assert_eq!(br.needs[0].fields, ["settings.kernel.hugepages.static"]);
        assert!(
            br.caveats[0].starts_with("essential = true"),
            "{:?}",
            br.caveats
        );
        assert!(at(&thp, Platform::Bottlerocket).caveats.is_empty());
        // OpenShift: the custom-pool conflict always; the reboots only with pools.
        assert_eq!(at(&thp, Platform::Openshift).caveats.len(), 1);
        let os = at(&pools, Platform::Openshift);
        assert!(
            os.caveats[0].contains("belongs to 2 custom roles")
                && os.caveats[1].contains("reboots the pool's nodes"),
            "{:?}",
            os.caveats
        );
    }

    #[test]
    fn bottlerocket_carries_a_numa_node_s_pool_unless_the_whole_node_s_is_set() {
        let node = |n| Knob::HugetlbPages {
            size: 2 << 20,
            node: Some(n),
        };
        let per_node = advice(&[(node(0), "300"), (node(1), "300")]);
        let br = place(
            &per_node,
            Platform::Bottlerocket,
            POOL,
            &label(),
            8 << 30,
            "t",
        )
        .unwrap();
        assert_eq!(br.set.len(), 2);
        assert_eq!(br.pooled, 600 << 21);
        let gke = place(&per_node, Platform::Gke, POOL, &label(), 8 << 30, "t").unwrap();
        assert!(gke.set.is_empty() && gke.unset[0].why.contains("NUMA"));
        let both = advice(&[(POOL_2M, "512"), (node(1), "300")]);
        let br = place(&both, Platform::Bottlerocket, POOL, &label(), 8 << 30, "t").unwrap();
        assert_eq!(br.set.len(), 1);
        assert!(br.unset[0].why.contains("not both"), "{:?}", br.unset);
    }

    #[test]
    fn pool_names_each_engine_refuses_are_refused_naming_the_rule() {
        let a = advice(&[(Knob::ThpEnabled, "always")]);
        let e = place(&a, Platform::Aks, "huge-canary-1", &label(), 1 << 30, "t").unwrap_err();
        assert!(e.contains("at most 12"), "{e}");
        assert!(place(&a, Platform::Gke, "huge-canary-1", &label(), 1 << 30, "t").is_ok());
        assert!(place(&a, Platform::Gke, "Huge", &label(), 1 << 30, "t").is_err());
        assert!(
            place(
                &a,
                Platform::Openshift,
                "worker-huge",
                &label(),
                1 << 30,
                "t"
            )
            .is_ok()
        );
    }
}
