//! The engines placed and written: what each carries, its limits, releases and caveats, and
//! an engine planted through the registry.

use super::*;
use crate::control::KhugepagedKnob;
use crate::model::advice::Setting;

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

/// An engine planted as a newcomer would add one: a file's worth and a registry line.
pub(super) struct Planted;

impl Platform for Planted {
    fn name(&self) -> &'static str {
        "planted"
    }
    fn help(&self) -> &'static str {
        "A planted engine: the THP mode alone"
    }
    fn engine(&self) -> &'static str {
        "Planted"
    }
    fn carries(&self, knob: &Knob) -> Result<(), String> {
        match knob {
            Knob::ThpEnabled => Ok(()),
            _ => Err("the planted engine sets the THP mode alone".into()),
        }
    }
    fn needs(&self, _set: &[Setting]) -> Option<Need> {
        None
    }
    fn boot_pools(&self) -> bool {
        true
    }
    fn write(&self, _a: &Advice, np: &NodePool) -> String {
        np.set
            .iter()
            .map(|s| format!("planted {} = {}\n", s.knob, s.value))
            .collect()
    }
}

/// The planted engine places and writes through the registry (`commands::advise`'s tests
/// see it in `--help` and parsed by `--platform`), and the plan says what it cannot set.
#[test]
fn a_planted_engine_places_and_writes_through_the_registry() {
    let a = advice(&[(Knob::ThpEnabled, "always"), (POOL_2M, "512")]);
    let p = find("planted").expect("registered");
    let np = place(&a, p, POOL, &label(), 16 << 30, "t").unwrap();
    assert_eq!(p.write(&a, &np), "planted thp.enabled = always\n");
    let plan = plan(&a, &np).join("\n");
    assert!(
        plan.starts_with("Planted canary node pool")
            && plan.contains("cannot set")
            && plan.contains("the planted engine sets the THP mode alone"),
        "{plan}"
    );
    assert!(find("nonesuch").is_none());
    let names: Vec<&str> = registry().iter().map(|p| p.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "{names:?}");
}

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
    let gke = place(&a, &gke::Gke, POOL, &label(), gib, "t").unwrap();
    assert_eq!(names(&gke.set), [Knob::ThpEnabled, POOL_2M]);
    assert_eq!(gke.unset.len(), 2);
    assert!(gke.unset[0].why.contains("GKE"), "{:?}", gke.unset);
    assert_eq!(gke.pooled, 1 << 30);
    let aks = place(&a, &aks::Aks, POOL, &label(), gib, "t").unwrap();
    assert_eq!(names(&aks.set), [Knob::ThpEnabled]);
    assert!(aks.unset.iter().any(|u| u.why.contains("no hugetlb pool")));
    assert_eq!(aks.pooled, 0);
    let br = place(&a, &bottlerocket::Bottlerocket, POOL, &label(), gib, "t").unwrap();
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
    let os = place(&a, &openshift::Openshift, POOL, &label(), gib, "t").unwrap();
    assert_eq!(os.set.len(), 4);
    assert!(os.unset.is_empty());
}

#[test]
fn a_pool_over_gke_s_share_of_the_node_is_refused_with_the_memory_it_needs() {
    // 7 GiB of 2 MiB pages on a 10 GiB node: 70% > 60%.
    let a = advice(&[(POOL_2M, "3584")]);
    let e = place(&a, &gke::Gke, POOL, &label(), 10 << 30, "--node-memory").unwrap_err();
    assert!(
        e.contains("70%") && e.contains("60%") && e.contains("--node-memory"),
        "{e}"
    );
    // The same pool on a 12 GiB node is 58%: within it. Other engines document no share.
    assert!(place(&a, &gke::Gke, POOL, &label(), 12 << 30, "t").is_ok());
    let br = place(
        &a,
        &bottlerocket::Bottlerocket,
        POOL,
        &label(),
        10 << 30,
        "t",
    )
    .unwrap();
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
    let at =
        |a: &Advice, p: &'static dyn Platform| place(a, p, POOL, &label(), 64 << 30, "t").unwrap();
    let gke = at(&thp, &gke::Gke);
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
    let gke = at(&pools, &gke::Gke);
    assert!(gke.needs.is_empty(), "{:?}", gke.needs);
    assert!(
        gke.pool_limit
            .unwrap()
            .1
            .contains("60% of available memory")
    );
    assert!(gke.caveats[0].contains("c3, m2, c2d"), "{:?}", gke.caveats);
    assert_eq!(
        at(&thp, &aks::Aks).needs[0].release,
        "Azure CLI 2.35.0 or later"
    );
    let br = at(&pools, &bottlerocket::Bottlerocket);
    assert_eq!(br.needs[0].release, "Bottlerocket 1.64.0 or later");
    assert_eq!(br.needs[0].fields, ["settings.kernel.hugepages.static"]);
    assert!(
        br.caveats[0].starts_with("essential = true"),
        "{:?}",
        br.caveats
    );
    assert!(at(&thp, &bottlerocket::Bottlerocket).caveats.is_empty());
    // OpenShift: the custom-pool conflict always; the reboots only with pools.
    assert_eq!(at(&thp, &openshift::Openshift).caveats.len(), 1);
    let os = at(&pools, &openshift::Openshift);
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
    let on_bottlerocket =
        |a: &Advice| place(a, &bottlerocket::Bottlerocket, POOL, &label(), 8 << 30, "t").unwrap();
    let per_node = advice(&[(node(0), "300"), (node(1), "300")]);
    let br = on_bottlerocket(&per_node);
    assert_eq!(br.set.len(), 2);
    assert_eq!(br.pooled, 600 << 21);
    let gke = place(&per_node, &gke::Gke, POOL, &label(), 8 << 30, "t").unwrap();
    assert!(gke.set.is_empty() && gke.unset[0].why.contains("NUMA"));
    let both = advice(&[(POOL_2M, "512"), (node(1), "300")]);
    let br = on_bottlerocket(&both);
    assert_eq!(br.set.len(), 1);
    assert!(br.unset[0].why.contains("not both"), "{:?}", br.unset);
}

#[test]
fn pool_names_each_engine_refuses_are_refused_naming_the_rule() {
    let a = advice(&[(Knob::ThpEnabled, "always")]);
    let e = place(&a, &aks::Aks, "huge-canary-1", &label(), 1 << 30, "t").unwrap_err();
    assert!(e.contains("at most 12"), "{e}");
    assert!(place(&a, &gke::Gke, "huge-canary-1", &label(), 1 << 30, "t").is_ok());
    assert!(place(&a, &gke::Gke, "Huge", &label(), 1 << 30, "t").is_err());
    assert!(
        place(
            &a,
            &openshift::Openshift,
            "worker-huge",
            &label(),
            1 << 30,
            "t"
        )
        .is_ok()
    );
}
