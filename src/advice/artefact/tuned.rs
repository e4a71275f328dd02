//! `--format tuned`: a tuned profile.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Tuned;

impl Artefact for Tuned {
    fn name(&self) -> &'static str {
        "tuned"
    }
    fn help(&self) -> &'static str {
        "A tuned profile (tuned.conf)"
    }
    fn what(&self) -> &'static str {
        "a tuned profile"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::tuned(a)
    }
}
