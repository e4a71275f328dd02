//! The `hugelab` binary: parse, recover any interrupted run, dispatch, map errors to exit codes.

use clap::{CommandFactory, Parser};
use hugelab::cli::{Cli, Command};
use hugelab::commands;

fn main() {
    let cli = Cli::parse();
    // Commands that only print (no child, no socket, no settings to restore) end quietly when
    // their reader goes away (`hugelab results show 1 | head`), as Unix tools do; the others
    // keep Rust's ignored SIGPIPE so a closed pipe is an error they handle.
    if matches!(
        cli.command,
        Command::Status(_)
            | Command::Results(_)
            | Command::Compare(_)
            | Command::Advise(_)
            | Command::Inspect(_)
            | Command::Top(_)
            | Command::Completions(_)
            | Command::Man(_)
    ) {
        // SAFETY: restoring the default disposition of one signal before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let restoring = matches!(
        cli.command,
        Command::Restore(_) | Command::Completions(_) | Command::Man(_)
    );
    if !restoring {
        commands::restore::recover_before_command();
    }
    let result = match cli.command {
        Command::Status(a) => commands::status::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Run(a) => commands::run::run(*a),
        Command::Results(a) => commands::results::run(a),
        Command::Import(a) => commands::import::run(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Advise(a) => commands::advise::run(a),
        Command::Apply(a) => commands::apply::run(a),
        Command::Judge(a) => commands::judge::run(*a),
        Command::Inspect(a) => commands::inspect::run(a),
        Command::Top(a) => commands::top::run(a),
        Command::Exporter(a) => commands::exporter::run(a),
        Command::Trace(a) => commands::trace::run(a),
        Command::Collapse(a) => commands::collapse::run(a),
        Command::HoldMemory(a) => commands::hold_memory::run(a),
        Command::Restore(a) => commands::restore::run(a),
        Command::Completions(a) => commands::completions::completions(a, Cli::command()),
        Command::Man(a) => commands::completions::man(a, Cli::command()),
        Command::Hold(a) => commands::restore::hold(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let top = e.to_string();
            hugelab::eprintln_safe!("hugelab: error: {top}");
            // A cause whose words the lines above already carry (an error that quotes its
            // source) is not printed again.
            let mut said = top;
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !said.contains(&c) {
                    hugelab::eprintln_safe!("  caused by: {c}");
                    said.push_str(&c);
                }
            }
            // Bad input, and another hugelab owning the settings, are both found before
            // anything ran or changed.
            let busy = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<hugelab::error::ControlError>(),
                    Some(hugelab::error::ControlError::Busy { .. })
                )
            });
            std::process::exit(
                if busy || e.downcast_ref::<commands::UsageError>().is_some() {
                    2
                } else {
                    1
                },
            );
        }
    }
}
