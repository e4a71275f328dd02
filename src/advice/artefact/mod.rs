//! The artefacts `advise --format` writes, one file each, all from one [`Advice`] record. A new
//! artefact is a file here and a line in [`registry`]: its name and help reach `advise --help`
//! and `--format` from there.

mod cmdline;
mod daemonset;
mod json;
mod plan;
mod service;
mod sysctl;
mod systemd;
mod tmpfiles;
mod tuned;

use crate::model::advice::Advice;

/// Where the artefact goes, for those that name it (the DaemonSet's nodes and image).
pub struct Target<'a> {
    pub node_label: &'a (String, String),
    pub image: &'a str,
}

/// An artefact `advise` can write.
pub trait Artefact: Sync {
    /// Its `--format` value.
    fn name(&self) -> &'static str;
    /// One line for `advise --help`.
    fn help(&self) -> &'static str;
    /// What it is, for the line naming the file it went to.
    fn what(&self) -> &'static str;
    /// The artefact, whole.
    fn write(&self, a: &Advice, at: &Target) -> String;
}

/// Every artefact, in the order `--help` lists them; the first is the default.
pub fn registry() -> Vec<&'static dyn Artefact> {
    #[allow(unused_mut)]
    let mut all: Vec<&'static dyn Artefact> = vec![
        &plan::Plan,
        &json::Json,
        &sysctl::Sysctl,
        &tmpfiles::Tmpfiles,
        &systemd::Systemd,
        &cmdline::Cmdline,
        &tuned::Tuned,
        &service::Service,
        &daemonset::Daemonset,
    ];
    #[cfg(test)]
    all.push(&tests::Planted);
    all
}

/// The artefact named `name` (a `--format` value).
pub fn find(name: &str) -> Option<&'static dyn Artefact> {
    registry().into_iter().find(|a| a.name() == name)
}

/// `--format`'s parser: the registry's names, each with its help.
pub fn parser() -> clap::builder::PossibleValuesParser {
    super::possible_values(registry().into_iter().map(|a| (a.name(), a.help())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An artefact planted as a newcomer would add one: a file's worth and a registry line.
    pub(super) struct Planted;

    impl Artefact for Planted {
        fn name(&self) -> &'static str {
            "planted"
        }
        fn help(&self) -> &'static str {
            "A planted artefact: the advice's summary alone"
        }
        fn what(&self) -> &'static str {
            "the planted summary"
        }
        fn write(&self, a: &Advice, _: &Target) -> String {
            format!("planted: {}\n", a.summary)
        }
    }

    /// The planted artefact writes through the registry (`commands::advise`'s tests see it in
    /// `--help` and parsed by `--format`).
    #[test]
    fn a_planted_artefact_writes_through_the_registry() {
        // A real "no change" advice, as the machine target writes it from no runs.
        let adv = crate::analyze::advice::machine::advise(&[], Vec::new());
        let label = ("k".to_string(), "v".to_string());
        let at = Target {
            node_label: &label,
            image: "i",
        };
        let text = find("planted").expect("registered").write(&adv, &at);
        assert_eq!(text, format!("planted: {}\n", adv.summary));
        assert!(find("nonesuch").is_none());
    }

    #[test]
    fn names_are_distinct_and_the_plan_comes_first() {
        let names: Vec<&str> = registry().iter().map(|a| a.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert_eq!(names[0], "plan");
    }
}
