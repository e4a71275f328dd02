//! `--platform daemonset`: any Kubernetes, through a ConfigMap and a DaemonSet running `hugelab
//! apply` on the canary nodes; the same as `--format daemonset`. It carries every knob and sets
//! the pools at run time.

use super::{NodePool, Platform};
use crate::control::Knob;
use crate::model::advice::{Advice, Setting};

pub struct Daemonset;

impl Platform for Daemonset {
    fn name(&self) -> &'static str {
        "daemonset"
    }
    fn help(&self) -> &'static str {
        "Any Kubernetes: a ConfigMap and a DaemonSet running `hugelab apply` (the same as --format daemonset)"
    }
    fn engine(&self) -> &'static str {
        "Kubernetes (DaemonSet)"
    }
    fn carries(&self, _knob: &Knob) -> Result<(), String> {
        Ok(())
    }
    /// The DaemonSet says what it needs in its own comment (`render::advice::daemonset`).
    fn needs(&self, _set: &[Setting]) -> Option<super::Need> {
        None
    }
    fn boot_pools(&self) -> bool {
        false
    }
    fn as_format(&self) -> Option<&'static str> {
        Some("daemonset")
    }
    fn write(&self, a: &Advice, np: &NodePool) -> String {
        crate::render::advice::daemonset(a, &np.label, crate::render::advice::IMAGE)
    }
}
