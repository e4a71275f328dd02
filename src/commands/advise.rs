//! `hugelab advise`: the advice wing (`advice`) decides what to set for a target from stored
//! runs and the live machine; this writes it as a plan or as an artefact. `--check` verifies a
//! machine against an advice file.

use super::UsageError;
use crate::advice::platform;
use crate::advice::{Postgres, Request};
use crate::analyze::advice::{Advice, Target};
use crate::options::{Database, Redecide};
use crate::units::Bytes;
use clap::Args;
use std::path::PathBuf;

/// Exit code of `advise --check` when the machine does not follow the advice.
pub const EXIT_DIFFERS: i32 = 3;

#[derive(Debug, Args)]
#[command(
    after_help = "A setting is advised only from an arm that was FASTER by at least --effect on the run's primary metric and never FLAGGED; \
anything else gives \"no change\" with what was reached. Exit codes: 0 advice written (or --check: the machine follows it); \
1 an error; 2 bad input; 3 --check: the machine differs (each difference printed)."
)]
pub struct AdviseArgs {
    /// Stored run ids to advise from (default: every stored run that compares arms and fits
    /// the target: a --server run of that preset for postgres and redis, JVM arms for jvm,
    /// qemu.backing arms for qemu)
    pub runs: Vec<i64>,
    /// What the advice is for
    #[arg(long = "for", value_enum, default_value_t = Target::Machine)]
    pub target: Target,
    /// What to write: a readable plan, or an artefact to install
    #[arg(long, value_parser = crate::advice::artefact::parser(), default_value = "plan")]
    pub format: String,
    /// The advice as JSON (`hugelab.advice`), as every command with a JSON record takes it; the
    /// same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// The canary node pool of a rollout engine instead of --format: the advice in that
    /// engine's node configuration, with what it cannot set and the nearest lever
    #[arg(long, value_parser = platform::parser(), conflicts_with_all = ["format", "json", "check"])]
    pub platform: Option<String>,
    /// --platform: the canary node pool's name (GKE, AKS node pool; OpenShift
    /// MachineConfigPool)
    #[arg(long, default_value = platform::POOL)]
    pub pool: String,
    /// --platform: the memory of one node of the canary pool, to check the pools against
    /// (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    pub node_memory: Option<Bytes>,
    /// --format daemonset, --platform: the label of the canary nodes the settings go on
    #[arg(long, value_name = "KEY=VALUE", default_value = crate::render::advice::CANARY_LABEL, value_parser = crate::options::parse_label)]
    pub node_label: (String, String),
    /// --format daemonset, --platform daemonset: the hugelab image the applier runs (deploy/container/Dockerfile)
    #[arg(long, value_name = "IMAGE", default_value = crate::render::advice::IMAGE)]
    pub image: String,
    /// Write the artefact to this file instead of stdout
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Check this machine against an advice file (written with --format json): exit 0 when
    /// every setting is as advised, 3 with the differences
    #[arg(long, value_name = "ADVICE.json", conflicts_with_all = ["runs", "out"])]
    pub check: Option<PathBuf>,
    /// --for postgres: the data directory, so PostgreSQL computes the pool it needs
    /// (`postgres -D DIR -C shared_memory_size_in_huge_pages`, PostgreSQL 15+; the server may run)
    #[arg(long, value_name = "DIR")]
    pub pg_datadir: Option<PathBuf>,
    /// --for postgres: the postgres binary
    #[arg(long, value_name = "PATH", default_value = "postgres")]
    pub pg_bin: String,
    /// --for postgres: run the postgres binary as this user (PostgreSQL refuses root)
    #[arg(long)]
    pub user: Option<String>,
    #[command(flatten)]
    pub decision: Redecide,
    #[command(flatten)]
    pub store: Database,
}

pub fn run(a: AdviseArgs) -> anyhow::Result<i32> {
    if let Some(file) = &a.check {
        let checked = crate::advice::check(file)?;
        print!("{}", crate::render::advice::checked(&checked));
        return Ok(if checked.differing() == 0 {
            0
        } else {
            EXIT_DIFFERS
        });
    }
    let db = a
        .store
        .db
        .clone()
        .unwrap_or_else(crate::store::default_path);
    let adv = crate::advice::advise(&Request {
        runs: &a.runs,
        target: a.target,
        db: &db,
        decision: &a.decision,
        postgres: a.pg_datadir.as_deref().map(|d| Postgres {
            datadir: d,
            bin: &a.pg_bin,
            user: a.user.as_deref(),
        }),
    })?;
    let platform = match &a.platform {
        Some(name) => Some(platform::find(name).ok_or_else(|| {
            UsageError(format!("--platform {name}: no such engine (see --help)"))
        })?),
        None => None,
    };
    let format = match (a.json, platform.map(|p| (p, p.as_format()))) {
        (true, _) => "json",
        (_, Some((_, Some(format)))) => format,
        (_, Some((p, None))) => return on_platform(&a, &adv, p),
        _ => a.format.as_str(),
    };
    let artefact = crate::advice::artefact::find(format)
        .ok_or_else(|| UsageError(format!("--format {format}: no such artefact (see --help)")))?;
    let at = crate::advice::artefact::Target {
        node_label: &a.node_label,
        image: &a.image,
    };
    let text = artefact.write(&adv, &at);
    write_out(&a, &text, artefact.what())?;
    Ok(0)
}

/// The artefact on stdout, or in --out with a line saying so.
fn write_out(a: &AdviseArgs, text: &str, what: &str) -> anyhow::Result<()> {
    match &a.out {
        Some(p) => {
            std::fs::write(p, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
            println!("{what} written to {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `--platform`: the advice on the engine's canary node pool. The plan (what it sets, what it
/// cannot and the lever for that) goes beside the artefact: on stdout after the line naming the
/// file, or on stderr when the artefact itself is on stdout.
fn on_platform(
    a: &AdviseArgs,
    adv: &Advice,
    platform: &'static dyn platform::Platform,
) -> anyhow::Result<i32> {
    let (memory, from) = crate::advice::node_memory(a.node_memory.map(|b| b.0))?;
    let np =
        platform::place(adv, platform, &a.pool, &a.node_label, memory, from).map_err(UsageError)?;
    let text = platform.write(adv, &np);
    let what = format!("the {} node pool configuration", platform.engine());
    write_out(a, &text, &what)?;
    for l in platform::plan(adv, &np) {
        match a.out {
            Some(_) => println!("{l}"),
            None => eprintln!("{l}"),
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new artefact is a file and a registry line: the one planted in the registry's tests
    /// reaches `advise --help` with its help, and `--format` takes it.
    #[test]
    fn a_planted_artefact_reaches_the_help_and_format() {
        let mut cmd = AdviseArgs::augment_args(clap::Command::new("advise"));
        let help = cmd.render_long_help().to_string();
        assert!(
            help.contains("- planted:")
                && help.contains("A planted artefact: the advice's summary alone"),
            "{help}"
        );
        for a in crate::advice::artefact::registry() {
            assert!(
                help.contains(&format!("- {}:", a.name())),
                "{} not in --help",
                a.name()
            );
        }
        let m = cmd.try_get_matches_from(["advise", "--format", "planted"]);
        assert_eq!(
            m.expect("--format planted parses")
                .get_one::<String>("format")
                .map(String::as_str),
            Some("planted")
        );
        let bad = AdviseArgs::augment_args(clap::Command::new("advise"))
            .try_get_matches_from(["advise", "--format", "nonesuch"]);
        assert!(bad.is_err());
    }

    /// A new engine is a file and a registry line: the one planted in the platform registry's
    /// tests reaches `advise --help` with its help, and `--platform` takes it.
    #[test]
    fn a_planted_engine_reaches_the_help_and_platform() {
        let mut cmd = AdviseArgs::augment_args(clap::Command::new("advise"));
        let help = cmd.render_long_help().to_string();
        assert!(
            help.contains("- planted:") && help.contains("A planted engine: the THP mode alone"),
            "{help}"
        );
        for p in platform::registry() {
            assert!(help.contains(&format!("- {}:", p.name())), "{}", p.name());
        }
        let m = cmd.try_get_matches_from(["advise", "--platform", "planted"]);
        assert_eq!(
            m.expect("--platform planted parses")
                .get_one::<String>("platform")
                .map(String::as_str),
            Some("planted")
        );
    }
}
