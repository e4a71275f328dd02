//! `--format tmpfiles`: /etc/tmpfiles.d lines.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Tmpfiles;

impl Artefact for Tmpfiles {
    fn name(&self) -> &'static str {
        "tmpfiles"
    }
    fn help(&self) -> &'static str {
        "/etc/tmpfiles.d lines writing the sysfs knobs at boot"
    }
    fn what(&self) -> &'static str {
        "tmpfiles.d lines"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::tmpfiles(a)
    }
}
