//! `advise --platform`: an advice placed on a rollout engine's canary node pool. Each engine's
//! node configuration carries some knobs and not others (as each documents it): GKE's node
//! system configuration and AKS's custom node configuration set the THP mode and defrag, GKE
//! and Bottlerocket the 2 MiB and 1 GiB pools at boot, Bottlerocket any sysctl, and an
//! OpenShift Tuned profile every knob (its vm, sysctl, sysfs and bootloader plugins). What an
//! engine cannot carry is kept with why, so the artefact and the plan say so and offer the
//! DaemonSet (`hugelab apply` on the same nodes), which carries every knob.

use super::Advice;
use crate::control::Knob;
use crate::model::node_pool::{NodePool, Platform, Unset};
use crate::units::Bytes;

/// GKE reserves at most this share of a node's memory for huge pages.
pub const GKE_POOL_SHARE: f64 = 0.6;

/// The canary node pool's name when none is given: valid on every engine (AKS allows at most
/// 12 lowercase letters and digits for a Linux node pool).
pub const POOL: &str = "hugecanary";

/// Whether `platform`'s node configuration sets `knob`: `Err` says why not.
fn carries(platform: Platform, knob: &Knob) -> Result<(), String> {
    let boot_pool = |size: u64, node: Option<u32>| {
        if node.is_some() {
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
    let pooled = super::pool_bytes(&set);
    let pool_limit = (platform == Platform::Gke).then_some(GKE_POOL_SHARE);
    if let Some(limit) = pool_limit
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
        set,
        unset,
        pooled,
        node_memory,
        node_memory_from: from.to_string(),
        pool_limit,
        runs,
    })
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
