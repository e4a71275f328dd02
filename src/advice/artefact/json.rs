//! `--format json`: the advice record as JSON (`hugelab.advice`).

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Json;

impl Artefact for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn help(&self) -> &'static str {
        "The advice record (what `advise --check` reads)"
    }
    fn what(&self) -> &'static str {
        "the advice (JSON)"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::json(a)
    }
}
