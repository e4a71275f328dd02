//! `hugelab advise`: read stored runs and the live machine, decide (analyze::advice) what to set
//! for a target, and write it as a plan or as an artefact; `--check` verifies a machine against
//! an advice file.

use super::UsageError;
use crate::analyze::advice::node_pool;
use crate::analyze::advice::{self, Advice, RunEvidence, Target};
use crate::backing::arm::{Arm, parse_arm};
use crate::control::{Knob, Settings, SysfsSettings};
use crate::model::node_pool::Platform;
use crate::options::{Database, Redecide};
use crate::probe::Root;
use crate::render::advice::Format;
use crate::store::Store;
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
    #[arg(long, value_enum, default_value_t = Format::Plan)]
    pub format: Format,
    /// The advice as JSON (`hugelab.advice`), as every command with a JSON record takes it; the
    /// same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// The canary node pool of a rollout engine instead of --format: the advice in that
    /// engine's node configuration, with what it cannot set and the nearest lever
    #[arg(long, value_enum, conflicts_with_all = ["format", "json", "check"])]
    pub platform: Option<Platform>,
    /// --platform: the canary node pool's name (GKE, AKS node pool; OpenShift
    /// MachineConfigPool)
    #[arg(long, default_value = node_pool::POOL)]
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

/// A stored run as evidence: its planned arms (with the pools the planner sized), the analysis
/// at the asked level, and its stall contrasts.
/// A stored run as evidence, and how it was read when not at its own decision as stored.
fn evidence_of(
    store: &Store,
    id: i64,
    d: &Redecide,
) -> anyhow::Result<Option<(RunEvidence, Option<String>)>> {
    let (meta, arm_rows, trials) = store.load(id)?;
    if meta.status == "imported" || meta.plan.is_bench() || arm_rows.len() < 2 {
        return Ok(None);
    }
    let given = crate::stored_runs::Trials::Given(&trials);
    let recalled = crate::stored_runs::recall(store, &meta, &arm_rows, &given, d)?;
    let note = recalled.notes().first().cloned();
    let crate::stored_runs::Answer::Run(record) = recalled.answer else {
        return Ok(None);
    };
    let record = *record;
    let arms: Vec<Arm> = meta.plan.arms().map_or_else(
        || {
            arm_rows
                .iter()
                .filter_map(|a| parse_arm(&format!("{}={}", a.name, a.spec)).ok())
                .collect()
        },
        <[Arm]>::to_vec,
    );
    let baseline = meta.plan.baseline();
    Ok(Some((
        RunEvidence {
            run_id: id,
            shell: meta.command.len() == 1,
            command: meta.command.clone(),
            arms,
            baseline,
            preset: meta.plan.preset().map(String::from),
            stalls: record.trace_stalls,
            report: record.report,
        },
        note,
    )))
}

/// Whether a run measures what the target is about (for the default choice of runs).
fn fits(target: Target, r: &RunEvidence) -> bool {
    match target {
        Target::Machine | Target::Kubernetes => true,
        Target::Postgres => r.preset.as_deref() == Some("postgres"),
        Target::Redis => r.preset.as_deref() == Some("redis"),
        Target::Jvm => r.arms.iter().any(|a| a.process.jvm.is_some()),
        Target::Qemu => r.arms.iter().any(|a| a.process.qemu.is_some()),
    }
}

/// The 2 MiB pages PostgreSQL says its shared memory needs for this data directory.
fn pg_pages(a: &AdviseArgs, dir: &std::path::Path) -> anyhow::Result<u64> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&a.pg_bin);
    cmd.arg("-D")
        .arg(dir)
        .args(["-C", "shared_memory_size_in_huge_pages"]);
    if let Some(u) = &a.user {
        let ids = crate::probe::user::lookup(u)
            .ok_or_else(|| UsageError(format!("--user {u:?}: no such user on this system")))?;
        cmd.uid(ids.uid).gid(ids.gid);
    }
    let out = cmd.stdin(std::process::Stdio::null()).output().map_err(|e| {
        UsageError(format!(
            "--pg-bin {:?}: cannot run it ({e}); give the path, e.g. /usr/lib/postgresql/15/bin/postgres",
            a.pg_bin
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.trim().parse::<u64>() {
        Ok(n) if out.status.success() => Ok(n),
        _ => Err(UsageError(format!(
            "`{} -D {} -C shared_memory_size_in_huge_pages` printed no page count (PostgreSQL 15+, an initialised data directory, and --user postgres when run as root): {}",
            a.pg_bin,
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into()),
    }
}

pub fn run(a: AdviseArgs) -> anyhow::Result<i32> {
    if let Some(file) = &a.check {
        return check(file);
    }
    let db = a
        .store
        .db
        .clone()
        .unwrap_or_else(crate::store::default_path);
    let store = Store::open_existing(&db)?;
    let ids: Vec<i64> = if a.runs.is_empty() {
        store.runs()?.iter().map(|(m, _)| m.id).collect()
    } else {
        a.runs.clone()
    };
    let mut runs = Vec::new();
    let mut read_as = Vec::new();
    for id in ids {
        match evidence_of(&store, id, &a.decision)? {
            Some((r, how)) if !a.runs.is_empty() || fits(a.target, &r) => {
                read_as.extend(how.map(|h| format!("run {id}: {h}")));
                runs.push(r)
            }
            None if !a.runs.is_empty() => {
                return Err(UsageError(format!(
                    "run {id} compares no arms (a bench, an import or a single arm): `hugelab results list` shows the runs"
                ))
                .into());
            }
            _ => {}
        }
    }
    let lines = advice::findings(&runs);
    let mut adv = match a.target {
        Target::Machine => advice::machine::advise(&runs, lines),
        Target::Redis => advice::redis::advise(&runs, lines),
        Target::Jvm => advice::jvm::advise(&runs, lines),
        Target::Kubernetes => advice::kubernetes::advise(&runs, lines),
        Target::Postgres => {
            let pages = match &a.pg_datadir {
                Some(d) => Some(pg_pages(&a, d)?),
                None => None,
            };
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
    // What the advised pools take from everything else on this machine.
    let pooled = advice::pool_bytes(&adv.settings);
    if let Some(total) = crate::probe::meminfo::read(&Root::system())
        .ok()
        .flatten()
        .and_then(|m| m.mem_total)
        .filter(|_| pooled > 0)
    {
        adv.notes.push(format!(
            "the advised pools reserve {} of this machine's {} MemTotal ({:.0}%): pool pages serve only hugetlb mappings",
            crate::units::Bytes(pooled),
            crate::units::Bytes(total),
            pooled as f64 * 100.0 / total as f64
        ));
    }
    if let Some(platform) = a.platform.filter(|p| *p != Platform::Daemonset) {
        return on_platform(&a, &adv, platform);
    }
    let format = match (a.json, a.platform) {
        (true, _) => Format::Json,
        (_, Some(Platform::Daemonset)) => Format::Daemonset,
        _ => a.format,
    };
    let text = match format {
        Format::Daemonset => crate::render::advice::daemonset(&adv, &a.node_label, &a.image),
        f => crate::render::advice::render(&adv, f),
    };
    write_out(&a, &text, format_name(format))?;
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
fn on_platform(a: &AdviseArgs, adv: &Advice, platform: Platform) -> anyhow::Result<i32> {
    let (memory, from) = match a.node_memory {
        Some(b) => (Some(b.0), "--node-memory"),
        None => (
            crate::probe::meminfo::read(&Root::system())
                .ok()
                .flatten()
                .and_then(|m| m.mem_total),
            "this machine's MemTotal; give --node-memory for the pool's machine type",
        ),
    };
    let memory = memory.ok_or_else(|| {
        UsageError("this machine's MemTotal cannot be read: give --node-memory SIZE (one node of the canary pool, e.g. 64G)".into())
    })?;
    let np = node_pool::place(adv, platform, &a.pool, &a.node_label, memory, from)
        .map_err(UsageError)?;
    let engine = crate::render::node_pool::engine(platform);
    let text = crate::render::node_pool::render(adv, &np);
    write_out(a, &text, &format!("the {engine} node pool configuration"))?;
    for l in crate::render::node_pool::plan(adv, &np) {
        match a.out {
            Some(_) => println!("{l}"),
            None => eprintln!("{l}"),
        }
    }
    Ok(0)
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Plan => "the plan",
        Format::Json => "the advice (JSON)",
        Format::Sysctl => "sysctl.d lines",
        Format::Tmpfiles => "tmpfiles.d lines",
        Format::Systemd => "a systemd unit",
        Format::Cmdline => "the kernel command line",
        Format::Tuned => "a tuned profile",
        Format::Service => "the service's configuration lines",
        Format::Daemonset => "a Kubernetes ConfigMap and DaemonSet",
    }
}

/// One setting of an advice file against the live machine: `None` when it is as advised.
fn differs(knob: &Knob, advised: &str, now: Option<String>) -> Option<String> {
    match now {
        None => Some(format!("{knob}: cannot be read here (advised {advised})")),
        // A pool at least as large as advised follows the advice (others may use it too).
        Some(n) if knob.is_pool() => match (n.parse::<u64>(), advised.parse::<u64>()) {
            (Ok(have), Ok(want)) if have >= want => None,
            _ => Some(format!("{knob}: {n} pages, advised at least {advised}")),
        },
        Some(n) if n == advised => None,
        Some(n) => Some(format!("{knob}: {n}, advised {advised}")),
    }
}

fn check(file: &std::path::Path) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| UsageError(format!("--check {}: {e}", file.display())))?;
    let adv: Advice = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "--check {}: not an advice file ({e}); write one with `hugelab advise --format json -o FILE`",
            file.display()
        ))
    })?;
    let live = SysfsSettings::new(Root::system());
    let mut diffs = Vec::new();
    for s in &adv.settings {
        match differs(&s.knob, &s.value, live.read(&s.knob).ok()) {
            Some(d) => diffs.push(d),
            None => println!("ok       {} = {}", s.knob, s.value),
        }
    }
    for d in &diffs {
        println!("DIFFERS  {d}");
    }
    for s in &adv.service {
        println!(
            "not checked here: {} line `{}` (verify: {})",
            s.file,
            s.line.lines().next().unwrap_or(""),
            adv.verify.first().map_or("-", String::as_str)
        );
    }
    if diffs.is_empty() {
        println!(
            "this machine follows {} ({} settings)",
            file.display(),
            adv.settings.len()
        );
        Ok(0)
    } else {
        println!(
            "this machine does not follow {}: {} of {} settings differ",
            file.display(),
            diffs.len(),
            adv.settings.len()
        );
        Ok(EXIT_DIFFERS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_at_least_and_modes_exactly() {
        let pool = Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        };
        assert_eq!(differs(&pool, "100", Some("120".into())), None);
        assert!(differs(&pool, "100", Some("99".into())).is_some());
        assert_eq!(
            differs(&Knob::ThpEnabled, "always", Some("always".into())),
            None
        );
        assert!(
            differs(&Knob::ThpEnabled, "always", Some("madvise".into()))
                .unwrap()
                .contains("madvise, advised always")
        );
        assert!(differs(&Knob::ThpEnabled, "always", None).is_some());
    }
}
