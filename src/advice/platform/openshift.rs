//! `--platform openshift`: a MachineConfigPool of the canary nodes and a Tuned profile the Node
//! Tuning Operator applies to it. Tuned's vm, sysctl, sysfs and bootloader plugins carry every
//! knob: THP, sysctls and sysfs knobs at run time, the pools on the kernel command line.

use super::{NodePool, Platform, header};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};
use crate::render::manifest;

pub struct Openshift;

/// The Tuned profile's name and the MachineConfigPool's role.
const TUNED_PROFILE: &str = "openshift-node-hugelab";

impl Platform for Openshift {
    fn name(&self) -> &'static str {
        "openshift"
    }
    fn help(&self) -> &'static str {
        "An OpenShift Tuned profile and the MachineConfigPool of the canary nodes"
    }
    fn engine(&self) -> &'static str {
        "OpenShift"
    }
    fn carries(&self, _knob: &Knob) -> Result<(), String> {
        Ok(())
    }
    fn needs(&self, _set: &[Setting]) -> Option<super::Need> {
        super::need(
            "OpenShift Container Platform 4.9 or later",
            vec![
                "Tuned spec.recommend[].machineConfigLabels",
                "a MachineConfigPool per role",
            ],
            "OpenShift 4.9's boot-time huge pages procedure, the oldest documentation hugelab checked",
        )
    }
    fn caveats(&self, set: &[Setting]) -> Vec<String> {
        let mut o = vec!["label only nodes in no other custom MachineConfigPool: the Machine Config Operator stops at a node two custom pools select (\"belongs to 2 custom roles\")".to_string()];
        if set.iter().any(|s| s.knob.is_pool()) {
            o.push("the pools go on the kernel command line: the Machine Config Operator drains and reboots the pool's nodes one at a time".into());
        }
        o
    }
    fn boot_pools(&self) -> bool {
        true
    }
    fn write(&self, a: &Advice, np: &NodePool) -> String {
        let (k, v) = &np.label;
        let pool = &np.pool;
        let mut o = header(
            a,
            np,
            &format!(
                "# OpenShift: a MachineConfigPool {pool:?} of the nodes labelled {k}={v} (oc label node\n\
                 # NODE {k}={v}) and a Tuned profile the Node Tuning Operator applies to that pool\n\
                 # only. THP, sysctls and sysfs knobs are set at run time, the pools on the kernel\n\
                 # command line. Removing the label or the Tuned object returns the nodes to the\n\
                 # worker profile.\n"
            ),
        );
        let settings: Vec<&Setting> = np.set.iter().collect();
        let data = format!(
            "[main]\nsummary=Huge page settings advised by hugelab on the {pool} pool\n\
             include=openshift-node\n{}",
            crate::render::advice::tuned_plugins(&settings, true)
        );
        o.push_str(&manifest::document(&manifest::machine_config_pool(
            pool, &np.label,
        )));
        o.push_str(&manifest::document(&manifest::tuned(
            &format!("hugelab-{pool}"),
            TUNED_PROFILE,
            &data,
            pool,
            20,
        )));
        o
    }
}
