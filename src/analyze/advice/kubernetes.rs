//! `--for kubernetes`: a pod's hugepages resources (requests equal to limits) and the node pool
//! for the arm measured better on hugetlb; THP has no per-pod setting, so it stays a node one.

use super::{Advice, EvidenceLine, RunEvidence, ServiceLine, Target, begin};
use crate::control::Knob;

pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>) -> Advice {
    let (mut a, chosen) = begin(
        Target::Kubernetes,
        runs,
        lines,
        "kubectl describe node NODE (Capacity and Allocatable list the hugepages resource)",
    );
    if chosen.is_none() {
        return a;
    }
    for s in a.settings.clone() {
        let Knob::HugetlbPages { size, .. } = s.knob else {
            continue;
        };
        let pages: u64 = s.value.parse().unwrap_or(0);
        let mib = pages * size / (1 << 20);
        a.service.push(ServiceLine {
            file: "pod spec".into(),
            line: format!(
                "resources:\n  requests:\n    {r}: {mib}Mi\n  limits:\n    {r}: {mib}Mi",
                r = crate::collect::kubernetes::hugepages_resource(size)
            ),
            why: format!("the pool the measured arm had ({pages} pages); requests must equal limits for hugepages"),
        });
    }
    if a.service.is_empty() {
        a.notes.push("the arm measured better uses THP, which Kubernetes cannot set per pod: set it on the node (the settings above): `--platform gke|aks|bottlerocket|openshift|daemonset` writes them for a canary node pool".into());
    } else {
        a.notes.push("the node's pool must be allocated before the kubelet starts (kernel command line or a unit ordered before kubelet.service) so the node advertises it; `--platform gke|bottlerocket|openshift` reserves it at boot on a canary node pool".into());
    }
    a
}

#[cfg(test)]
mod tests {
    use super::super::findings;
    use super::super::tests::run;
    use super::*;
    use crate::analyze::verdict::Verdict;

    #[test]
    fn a_hugetlb_arm_becomes_pod_resources_with_requests_equal_to_limits() {
        let r = run(
            6,
            &["4k=", "h=hugetlb.2M=512,malloc=hugetlb"],
            &[(9.0, 4.0, 14.0, Verdict::Faster, 0)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert_eq!(
            a.service[0].line,
            "resources:\n  requests:\n    hugepages-2Mi: 1024Mi\n  limits:\n    hugepages-2Mi: 1024Mi"
        );
        assert!(
            a.notes[0..]
                .iter()
                .any(|n| n.contains("before the kubelet starts"))
        );
    }

    #[test]
    fn a_thp_arm_stays_a_node_setting() {
        let r = run(
            7,
            &["never=thp=never", "always=thp=always"],
            &[(9.0, 4.0, 14.0, Verdict::Faster, 0)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert!(a.service.is_empty());
        assert!(
            a.notes.iter().any(|n| n.contains("cannot set per pod")),
            "{:?}",
            a.notes
        );
    }
}
