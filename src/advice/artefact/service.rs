//! `--format service`: the service's own configuration lines.

use super::{Artefact, Target};
use crate::model::advice::Advice;

pub struct Service;

impl Artefact for Service {
    fn name(&self) -> &'static str {
        "service"
    }
    fn help(&self) -> &'static str {
        "The service's own configuration lines (postgresql.conf, redis.conf, JVM options, libvirt XML, pod spec)"
    }
    fn what(&self) -> &'static str {
        "the service's configuration lines"
    }
    fn write(&self, a: &Advice, _: &Target) -> String {
        crate::render::advice::service(a)
    }
}
