//! `--format sysctl`: /etc/sysctl.d lines.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Sysctl;

impl Artefact for Sysctl {
    fn name(&self) -> &'static str {
        "sysctl"
    }
    fn help(&self) -> &'static str {
        "/etc/sysctl.d lines (the default-size hugetlb pool)"
    }
    fn what(&self) -> &'static str {
        "sysctl.d lines"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::sysctl(a)
    }
}
