//! The advice wing: from stored runs and this machine to the settings that put their evidence
//! into effect. It loads each run's evidence (through `stored_runs`, at the run's own decision
//! unless asked otherwise), asks `analyze::advice` to decide for the target, fills in what this
//! machine has now, and checks a machine against an advice file. `hugelab advise` parses, calls
//! it and renders (`render::advice`; each artefact in `artefact`, each rollout engine's node pool
//! in `platform`). It sits above the engines it reads (`stored_runs`); no engine or stage
//! imports it.

pub mod artefact;
mod check;
mod evidence;
pub mod platform;
mod postgres;

pub use check::check;
pub use postgres::Postgres;

use crate::analyze::advice::{self, Advice, Target};
use crate::control::{Settings, SysfsSettings};
use crate::error::UsageError;
use crate::options::Redecide;
use crate::probe::Root;
use crate::store::Store;
use std::path::Path;

/// What to advise from and for.
pub struct Request<'a> {
    /// Stored run ids (empty: every stored run that compares arms and fits the target).
    pub runs: &'a [i64],
    pub target: Target,
    pub db: &'a Path,
    pub decision: &'a Redecide,
    /// `--for postgres`: the data directory to ask for its pool.
    pub postgres: Option<Postgres<'a>>,
}

/// A registry's parser (`--format`, `--platform`): each registered name with its help.
fn possible_values(
    named: impl IntoIterator<Item = (&'static str, &'static str)>,
) -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        named
            .into_iter()
            .map(|(name, help)| clap::builder::PossibleValue::new(name).help(help)),
    )
}

/// The advice for `req.target` from the runs it names, with this machine's current values and
/// what the advised pools take from it.
pub fn advise(req: &Request) -> anyhow::Result<Advice> {
    let store = Store::open_existing(req.db)?;
    let (runs, read_as) = evidence::load(&store, req)?;
    let lines = advice::findings(&runs);
    let mut adv = match req.target {
        Target::Machine => advice::machine::advise(&runs, lines),
        Target::Redis => advice::redis::advise(&runs, lines),
        Target::Jvm => advice::jvm::advise(&runs, lines),
        Target::Kubernetes => advice::kubernetes::advise(&runs, lines),
        Target::Postgres => {
            let pages = req.postgres.as_ref().map(Postgres::pages).transpose()?;
            advice::postgres::advise(&runs, lines, pages)
        }
        Target::Qemu => {
            let nodes = crate::probe::hugetlb::read(&Root::system())
                .ok()
                .and_then(|p| p.first().map(|p| p.nodes.len()))
                .unwrap_or(1);
            advice::qemu::advise(&runs, lines, nodes)
        }
    };
    // Each run is read at its own decision; one read otherwise says so.
    adv.notes.extend(read_as);
    let live = SysfsSettings::new(Root::system());
    advice::fill_now(&mut adv.settings, |k| live.read(k).ok());
    advice::note_memory_thp(&mut adv, crate::probe::program::systemd_version());
    adv.notes.extend(pools_note(&adv));
    Ok(adv)
}

/// What the advised pools take from everything else on this machine.
fn pools_note(adv: &Advice) -> Option<String> {
    let pooled = advice::pool_bytes(&adv.settings);
    let total = mem_total().filter(|_| pooled > 0)?;
    Some(format!(
        "the advised pools reserve {} of this machine's {} MemTotal ({:.0}%): pool pages serve only hugetlb mappings",
        crate::units::Bytes(pooled),
        crate::units::Bytes(total),
        pooled as f64 * 100.0 / total as f64
    ))
}

fn mem_total() -> Option<u64> {
    crate::probe::meminfo::read(&Root::system())
        .ok()
        .flatten()
        .and_then(|m| m.mem_total)
}

/// The memory of one node of a canary pool, and where it came from: `given`, or this
/// machine's MemTotal.
pub fn node_memory(given: Option<u64>) -> Result<(u64, &'static str), UsageError> {
    match given {
        Some(b) => Ok((b, "--node-memory")),
        None => mem_total()
            .map(|m| (m, "this machine's MemTotal; give --node-memory for the pool's machine type"))
            .ok_or_else(|| {
                UsageError("this machine's MemTotal cannot be read: give --node-memory SIZE (one node of the canary pool, e.g. 64G)".into())
            }),
    }
}
