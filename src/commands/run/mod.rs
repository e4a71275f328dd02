//! `hugelab run`: A/B/n experiments of any command under page configurations ("arms").
//! Parse (clap, into the engine's `RunArgs`), plan (`crate::experiment::plan`: arguments + arms +
//! the probed machine → a validated [`Plan`]), hand the plan to the experiment engine
//! (`crate::experiment`: blocks, trials, servers, storage, analysis), render, exit code.

use super::print_json;
use crate::analyze::verdict::Verdict;
use crate::experiment::plan::{EXIT_FAILED, RunArgs};
use crate::experiment::{Outcome, Request};
use crate::model::run::RunResult;

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    // Held until the run has restored everything (the owner) or measured (the reader's lock).
    let (plan, (owner, _reading)) = crate::experiment::plan::plan_owned(&a)?;
    crate::experiment::plan::check_program(&a, &plan)?;
    let db = (!a.no_save).then(|| {
        a.store
            .db
            .clone()
            .unwrap_or_else(crate::store::default_path)
    });
    // A database that cannot be written is bad input, found before anything runs.
    if let Some(path) = &db
        && let Err(e) = crate::store::Store::open(path)
    {
        return Err(super::UsageError(format!(
            "--db {}: {e:#}; give a path in a directory you can write (or --no-save)",
            path.display()
        ))
        .into());
    }
    let req = Request {
        command: &a.command,
        shell: a.shell,
        label: a.label.as_deref(),
        db: db.clone(),
        quiet: a.progress.quiet,
        owner,
        reach: crate::stored_runs::measured_tlb(&a.store.db),
    };
    let done = crate::experiment::conduct(plan, &req)?;
    let res = done.result;
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::run::render(&res, a.verbose));
    }
    Ok(match done.outcome {
        Outcome::Interrupted => 130,
        Outcome::Refused => 2,
        Outcome::Failed => EXIT_FAILED,
        Outcome::Complete if a.fail_on.is_some() && primary_slower(&res) => 3,
        Outcome::Complete => 0,
    })
}

/// Whether any arm is SLOWER on the primary metric (`--fail-on slower`).
fn primary_slower(res: &RunResult) -> bool {
    let primary = &res.plan.primary().name;
    res.report
        .metrics
        .iter()
        .filter(|m| m.metric.name == *primary)
        .flat_map(|m| m.contrasts.iter())
        .any(|(_, c)| c.as_ref().is_some_and(|c| c.verdict == Verdict::Slower))
}
