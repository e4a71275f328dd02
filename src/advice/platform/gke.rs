//! `--platform gke`: a GKE node system configuration (`gcloud container node-pools create
//! --system-config-from-file`). It sets the THP mode and defrag and the 2 MiB and 1 GiB pools
//! at boot, within 60% of the node's memory; its sysctls are a fixed list without the others.

use super::{NodePool, Platform, PoolNames, header, setting};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};
use std::fmt::Write;

pub struct Gke;

/// GKE reserves at most this share of a node's memory for huge pages, as gcloud's reference
/// says ([`POOL_SOURCE`]).
const POOL_SHARE: f64 = 0.6;
const POOL_SOURCE: &str = "`gcloud container node-pools create --help`, --system-config-from-file: \"Allocated hugepage size should not exceed 60% of available memory on the node\"";

impl Platform for Gke {
    fn name(&self) -> &'static str {
        "gke"
    }
    fn help(&self) -> &'static str {
        "GKE node system configuration (`gcloud container node-pools create --system-config-from-file`)"
    }
    fn engine(&self) -> &'static str {
        "GKE"
    }
    fn carries(&self, knob: &Knob) -> Result<(), String> {
        match knob {
            Knob::ThpEnabled | Knob::ThpDefrag => Ok(()),
            Knob::HugetlbPages { size, node } => super::boot_pool(*size, *node, false),
            _ => Err("GKE's node system configuration has no such setting (its sysctls are a fixed list without it)".into()),
        }
    }
    fn pool_names(&self) -> PoolNames {
        PoolNames {
            max: 40,
            inside: "-",
        }
    }
    fn pool_limit(&self) -> Option<(f64, &'static str)> {
        Some((POOL_SHARE, POOL_SOURCE))
    }
    fn needs(&self, set: &[Setting]) -> Option<super::Need> {
        super::need(
            "GKE 1.34.1-gke.3084001 or later and a gcloud that loads them",
            [
                (Knob::ThpEnabled, "transparentHugepageEnabled"),
                (Knob::ThpDefrag, "transparentHugepageDefrag"),
            ]
            .into_iter()
            .filter(|(k, _)| set.iter().any(|s| s.knob == *k))
            .map(|(_, f)| f)
            .collect(),
            "GKE's node system configuration reference; an older gcloud's file loader stops at \"unknown fields\" naming them",
        )
    }
    fn caveats(&self, set: &[Setting]) -> Vec<String> {
        let gib_pool = set
            .iter()
            .any(|s| matches!(s.knob, Knob::HugetlbPages { size, .. } if size == 1 << 30));
        let families = "1 GiB pages exist on the machine families c3, m2, c2d, c3d, h3, m3, a2, a3 and g2 only (gcloud's reference for --system-config-from-file); GKE refuses the node pool on another";
        gib_pool.then(|| families.to_string()).into_iter().collect()
    }
    fn boot_pools(&self) -> bool {
        true
    }
    fn write(&self, a: &Advice, np: &NodePool) -> String {
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
        for (knob, key) in [(Knob::ThpEnabled, "Enabled"), (Knob::ThpDefrag, "Defrag")] {
            if let Some(s) = setting(np, knob) {
                let _ = writeln!(
                    o,
                    "  transparentHugepage{key}: TRANSPARENT_HUGEPAGE_{}_{}",
                    key.to_uppercase(),
                    word(&s.value)
                );
            }
        }
        let pool = |size: u64| {
            setting(np, Knob::HugetlbPages { size, node: None }).map(|s| s.value.as_str())
        };
        let pools = [
            ("hugepage_size2m", pool(2 << 20)),
            ("hugepage_size1g", pool(1 << 30)),
        ];
        if pools.iter().any(|(_, n)| n.is_some()) {
            o.push_str("  hugepageConfig:\n");
            for (key, n) in pools {
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
}

/// GKE's enum word for a THP mode or defrag value (`defer+madvise` → `DEFER_WITH_MADVISE`).
fn word(v: &str) -> String {
    v.replace("+madvise", "_with_madvise").to_uppercase()
}
