//! `--format cmdline`: the kernel command line.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Cmdline;

impl Artefact for Cmdline {
    fn name(&self) -> &'static str {
        "cmdline"
    }
    fn help(&self) -> &'static str {
        "Kernel command line parameters (THP mode, boot-time pools)"
    }
    fn what(&self) -> &'static str {
        "the kernel command line"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::cmdline(a)
    }
}
