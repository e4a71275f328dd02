//! `--format daemonset`: a Kubernetes ConfigMap and DaemonSet (`hugelab apply` on the canary nodes).

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Daemonset;

impl Artefact for Daemonset {
    fn name(&self) -> &'static str {
        "daemonset"
    }
    fn help(&self) -> &'static str {
        "A Kubernetes ConfigMap and DaemonSet that hold the settings on the nodes with --node-label through `hugelab apply`, restored when it is removed"
    }
    fn what(&self) -> &'static str {
        "a Kubernetes ConfigMap and DaemonSet"
    }
    fn write(&self, a: &Advice, at: &Target) -> String {
        crate::render::advice::daemonset(a, at.node_label, at.image)
    }
}
