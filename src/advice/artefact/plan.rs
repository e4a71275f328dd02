//! `--format plan`: the readable plan.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Plan;

impl Artefact for Plan {
    fn name(&self) -> &'static str {
        "plan"
    }
    fn help(&self) -> &'static str {
        "What to set, why (run, effect, interval, coverage, stalls), what was not measured"
    }
    fn what(&self) -> &'static str {
        "the plan"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::plan(a)
    }
}
