//! `--format systemd`: a systemd oneshot unit.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Systemd;

impl Artefact for Systemd {
    fn name(&self) -> &'static str {
        "systemd"
    }
    fn help(&self) -> &'static str {
        "A systemd oneshot unit writing the sysfs knobs before the service starts"
    }
    fn what(&self) -> &'static str {
        "a systemd unit"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::systemd(a)
    }
}
