//! The command line as a user meets it: help on every option, completions for the shells,
//! the man page, the answer-first output within 100 columns, and README's commands real.

mod common;

use clap::CommandFactory;
use hugelab::cli::Cli;

/// Every subcommand, option and positional argument has help text.
#[test]
fn every_option_and_argument_has_help() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            if sub.get_about().is_none() {
                missing.push(format!("{path} {} (the command)", sub.get_name()));
            }
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&Cli::command(), "hugelab", &mut missing);
    assert!(missing.is_empty(), "without help:\n{}", missing.join("\n"));
}
