//! Which design measures a service (`run --server`): warm — every arm's server up at once,
//! each block one load burst per arm (all at once, or one after another in random order: the
//! burst schedule), all restarted every lifetime — wherever the arms can run side by side, else
//! a fresh server per trial, with the reason. The planner calls [`choose`]; the schedule each
//! design runs is in `crate::experiment::servers`.

use super::{RunArgs, UNBOUNDED_BLOCKS};
use crate::analyze::sequential::ConfidenceSequence;
use crate::analyze::verdict::{self, Design};
use crate::backing::arm::Arm;
use crate::backing::services::{self, Slot};
use crate::backing::side_by_side::side_by_side;
use crate::control::Knob;
use crate::error::UsageError;
use crate::model::run::{BurstSchedule, ServerPlan, ServiceDesign, WarmPlan};
use crate::units::Bytes;

/// `n` free TCP ports on loopback now, all different (the kernel's choice: each held until all
/// are chosen, so a port released at once is not handed out twice; then released).
pub fn free_ports(n: usize) -> Result<Vec<u16>, UsageError> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .and_then(|ls| {
            ls.iter()
                .map(|l| l.local_addr().map(|a| a.port()))
                .collect::<std::io::Result<Vec<u16>>>()
        });
    held.map_err(|e| {
        UsageError(format!(
            "no free port on 127.0.0.1 for the arms' servers: {e}"
        ))
    })
}

/// The machine's value of a THP knob now (what an arm that does not set it runs under).
fn current(k: &Knob) -> Option<String> {
    let t = crate::probe::thp::read(&crate::probe::Root::system()).ok()?;
    let sel = match k {
        Knob::ThpEnabled => t.enabled,
        Knob::ThpDefrag => t.defrag,
        Knob::ThpShmemEnabled => t.shmem_enabled,
        Knob::MthpEnabled { size } => {
            return t
                .mthp
                .iter()
                .find(|m| m.size_bytes == *size)
                .and_then(|m| m.enabled.clone())
                .map(|s| s.selected);
        }
        _ => None,
    }?;
    Some(sel.selected)
}

fn words(w: &[String], shell: bool) -> Vec<String> {
    if shell {
        w.join(" ").split_whitespace().map(String::from).collect()
    } else {
        w.to_vec()
    }
}

fn unwords(w: Vec<String>, shell: bool) -> Vec<String> {
    if shell { vec![w.join(" ")] } else { w }
}

/// Why the arms cannot run side by side, if they cannot; else what to run per arm.
fn warm_form(
    a: &RunArgs,
    schedule: (BurstSchedule, String),
    sp: &ServerPlan,
    arms: &[Arm],
    command: &[String],
) -> Result<(WarmPlan, Option<services::PerArm>), String> {
    let sbs = side_by_side(arms, &current, crate::sys::thp_advised_supported())?;
    let server = words(&sp.argv, a.shell);
    let load = words(command, a.shell);
    let user_addresses = services::has_address_placeholder(&server);
    let bursts_given = load.iter().any(|w| w.contains("{burst}"));
    let per_arm = match &sp.preset {
        Some(p) if !user_addresses => {
            let burst = load.first().is_some_and(|p| p.ends_with("pgbench"))
                && crate::backing::services::option(&load, Some("-T"), "--time").is_some();
            Some(services::per_arm(
                p,
                &server,
                &load,
                sp.warmup.as_deref(),
                burst,
            )?)
        }
        _ if user_addresses => None,
        _ => {
            return Err(
                "the server command names one address for every arm; write {port} (and {dir}) in --server and the load so each arm's server has its own"
                    .into(),
            );
        }
    };
    let bursts = bursts_given
        || per_arm
            .as_ref()
            .is_some_and(|p| p.load.iter().any(|w| w.contains("{burst}")));
    let (schedule, schedule_reason) = schedule;
    let schedule_asked = a.schedule.is_some();
    let replicas = a.replicas.map(|n| n as usize);
    let mut sbs = sbs;
    if let Some(n) = replicas.filter(|n| *n > 1) {
        pools_for_replicas(&mut sbs, n);
    }
    Ok((
        WarmPlan {
            schedule,
            schedule_reason,
            schedule_asked,
            lifetime_blocks: a.lifetime_blocks.map(|n| n as usize),
            lifetime_max: a.lifetime_max,
            replicas,
            replicas_shared: None,
            burst: a
                .burst
                .map(|b| std::time::Duration::from_secs(b.as_secs_f64().ceil().max(1.0) as u64)),
            bursts,
            side_by_side: sbs,
            burst_choice: None,
            forecast: Default::default(),
        },
        per_arm,
    ))
}

/// A preset's server and load rewritten for one address per arm, with its warm-up, data copy
/// and readiness probe.
fn with_per_arm(
    a: &RunArgs,
    sp: &mut ServerPlan,
    command: &mut Vec<String>,
    p: services::PerArm,
) -> Result<(), UsageError> {
    let program = p.server.first().cloned().unwrap_or_default();
    sp.argv = unwords(p.server, a.shell);
    *command = unwords(p.load, a.shell);
    sp.warmup = p.warmup;
    if sp.preset.as_deref() == Some("postgres") {
        clients_beside(&program, command, &mut sp.warmup, a.shell)?;
    }
    if p.copy_data.is_some() {
        if a.server_data.is_some() {
            return Err(UsageError(
                "--server-data: the preset copies the server's own -D data directory into each server's {dir} already; leave --server-data out".into(),
            ));
        }
        sp.copy_data = p.copy_data;
    }
    if let Some(r) = p.ready.filter(|_| a.ready.is_none()) {
        sp.ready = r;
    }
    Ok(())
}

/// `--replicas N`: every hugetlb pool the run sets holds N servers per arm, not one.
fn pools_for_replicas(sbs: &mut crate::backing::side_by_side::SideBySide, n: usize) {
    for (k, v) in &mut sbs.system {
        if let (crate::control::Knob::HugetlbPages { .. }, Ok(p)) = (k, v.parse::<u64>()) {
            *v = (p * n as u64).to_string();
        }
    }
}

/// PostgreSQL's clients found where the server is (`probe::program::find_client`): the
/// preset's psql warm-up and a bare `pgbench` load get the full path of the ones beside the
/// server when PATH has none; a psql found nowhere is bad input before anything starts.
fn clients_beside(
    server: &str,
    command: &mut [String],
    warmup: &mut Option<String>,
    shell: bool,
) -> Result<(), UsageError> {
    use crate::probe::program::{find_client, find_program};
    if let Some(w) = warmup.as_mut()
        && let Some(rest) = w.strip_prefix("psql ")
    {
        let psql = find_client(server, "psql").ok_or_else(|| {
            UsageError(format!(
                "the postgres preset warms each server with psql (pg_prewarm), and psql is neither beside {server} nor on PATH: install PostgreSQL's client (apt-get install postgresql-client), or give --server-warmup 'COMMAND'"
            ))
        })?;
        *w = format!("{} {rest}", psql.display());
    }
    if !shell
        && let Some(first) = command.first_mut()
        && first == "pgbench"
        && find_program("pgbench").is_none()
        && let Some(p) = find_client(server, "pgbench")
    {
        *first = p.display().to_string();
    }
    Ok(())
}

/// When a block's bursts run: duet unless asked otherwise or unless the run needs one arm's
/// burst at a time (a trace window, an operator event), with the reason.
fn burst_schedule(a: &RunArgs) -> Result<(BurstSchedule, String), UsageError> {
    let alone = if !a.trace.is_empty() {
        Some("--trace: a trial's trace window holds one arm's burst")
    } else if a.during.is_some() {
        Some("--during: one arm's event must not disturb another arm's burst")
    } else {
        None
    };
    if a.replicas.is_some_and(|n| n > 1) {
        if let Some(why) = alone {
            return Err(UsageError(format!(
                "--replicas runs every replica's burst at once, but {why}; leave --replicas out"
            )));
        }
        if a.schedule == Some(BurstSchedule::Alternating) {
            return Err(UsageError(
                "--replicas runs every replica's burst of a block at once (duet), and --schedule alternating runs one at a time; give one or the other".into(),
            ));
        }
    }
    Ok(match (a.schedule, alone) {
        (Some(BurstSchedule::Duet), Some(why)) => {
            return Err(UsageError(format!(
                "--schedule duet runs every arm's burst at once, but {why}; use --schedule alternating"
            )));
        }
        (Some(s), _) => (s, "as asked (--schedule)".into()),
        (None, Some(why)) => (BurstSchedule::Alternating, why.into()),
        (None, None) => (BurstSchedule::Duet, DUET_REASON.into()),
    })
}

/// Why duet is the default, from its measurement on the development VM (docs/services.md); a
/// machine too small for every arm's burst at once alternates instead (`servers.rs`).
const DUET_REASON: &str = "the default: the machine's changing noise hits every arm's burst alike, and one arm's burst alone left room for all of them";

/// Memory all arms' servers need at once against MemAvailable: each PostgreSQL server's shared
/// memory (`pages` 2 MiB pages, from `postgres -C`) and 32 MiB of processes per server.
fn check_memory(servers: usize, pages: Option<u64>) -> Result<(), UsageError> {
    let Some(pages) = pages else { return Ok(()) };
    let need = servers as u64 * (pages * (2 << 20) + (32 << 20));
    let avail = crate::probe::meminfo::read(&crate::probe::Root::system())
        .ok()
        .flatten()
        .and_then(|m| m.mem_available);
    match avail {
        Some(av) if need > av => Err(UsageError(format!(
            "the warm design keeps {servers} servers up at once (every arm's, times --replicas): about {} of shared memory and processes, but MemAvailable is {}; give fewer arms or replicas, or --design restart",
            Bytes(need),
            Bytes(av)
        ))),
        _ => Ok(()),
    }
}

/// A path the replicas of one arm would share (its server's words, its pidfile or its load,
/// filled as two replicas would be): an error under `--replicas N`, otherwise the reason the run
/// keeps one replica, in words — decided before any server starts.
fn replicas_shared(
    a: &RunArgs,
    sp: &ServerPlan,
    arms: &[Arm],
    command: &[String],
) -> Result<Option<String>, UsageError> {
    let filled = |x: &Arm, slot: &Slot, replica: usize| -> Vec<String> {
        let slot = Slot {
            replica,
            // Each replica has a directory and (where the arm has one) a port of its own.
            dir: format!("{}/replica-{replica}", slot.dir),
            port: slot.port.wrapping_add(replica as u16),
            ..slot.clone()
        };
        let mut w: Vec<String> = words(&sp.argv, a.shell);
        w.extend(x.process.server_args.iter().cloned());
        w.extend(sp.pidfile.iter().map(|p| p.display().to_string()));
        w.extend(words(command, a.shell));
        w.iter().map(|w| services::fill(w, &slot)).collect()
    };
    let per_arm: Vec<(String, Vec<String>, Vec<String>)> = arms
        .iter()
        .zip(&sp.slots)
        .map(|(x, slot)| (x.name.clone(), filled(x, slot, 0), filled(x, slot, 1)))
        .collect();
    let Some((arm, word)) = services::replica_collision(&per_arm) else {
        return Ok(None);
    };
    let why = format!(
        "arm {arm}'s server or load names {word} for every replica (a path built from {{arm}} alone), so two of its servers at once would share it"
    );
    match a.replicas {
        Some(n) if n > 1 => Err(UsageError(format!(
            "--replicas {n}: {why}; write {{replica}} or {{dir}} in it (e.g. /tmp/pgw/{{arm}}-{{replica}}), or leave --replicas out"
        ))),
        _ => Ok(Some(format!(
            "replicas 1: {why} (write {{replica}} or {{dir}} in it to run several at once)"
        ))),
    }
}

/// Choose the design for `sp` and rewrite the server and load for it (placeholders per arm).
pub(super) fn choose(
    a: &RunArgs,
    sp: &mut ServerPlan,
    arms: &[Arm],
    command: &mut Vec<String>,
    pages: Option<u64>,
) -> Result<(), UsageError> {
    let slots = |with_ports: bool| -> Result<Vec<Slot>, UsageError> {
        let ports = match with_ports {
            true => free_ports(arms.len())?,
            false => vec![0; arms.len()],
        };
        Ok(arms
            .iter()
            .zip(ports)
            .map(|(x, port)| Slot {
                arm: x.name.clone(),
                port,
                host: "127.0.0.1".into(),
                dir: String::new(),
                burst: None,
                replica: 0,
            })
            .collect())
    };
    let placeholders = |w: &[String]| {
        w.iter()
            .any(|x| services::PLACEHOLDERS.iter().any(|p| x.contains(p)))
    };
    let wanted = a.design;
    let form = match wanted {
        Some(ServiceDesign::Restart) => Err("--design restart".to_string()),
        _ => warm_form(a, burst_schedule(a)?, sp, arms, command),
    };
    match form {
        Ok((mut warm, per_arm)) => {
            check_memory(arms.len() * a.replicas.unwrap_or(1) as usize, pages)?;
            if let Some(p) = per_arm {
                with_per_arm(a, sp, command, p)?;
            }
            sp.design = ServiceDesign::Warm;
            sp.design_reason = if warm.side_by_side.instead.is_empty() {
                "every arm's server can run side by side".into()
            } else {
                format!(
                    "the arms run side by side: {}",
                    warm.side_by_side.instead.join("; ")
                )
            };
            // A tcp:/unix: probe names one address: each arm's server must have its own.
            let own = sp.ready.contains("{dir}") || sp.ready.contains("{port}");
            if !sp.ready.starts_with("log:") && !sp.ready.starts_with("cmd:") && !own {
                return Err(UsageError(format!(
                    "--ready {:?} names one address for every arm's server; write {{port}} or {{dir}} in it (e.g. tcp:127.0.0.1:{{port}}), or --design restart",
                    sp.ready
                )));
            }
            sp.per_arm_load = true;
            sp.slots = slots(true)?;
            // Servers that would share a literal port collide as soon as the second starts.
            let per_arm: Vec<(String, Vec<String>)> = arms
                .iter()
                .zip(&sp.slots)
                .map(|(x, slot)| {
                    let mut w: Vec<String> = words(&sp.argv, a.shell)
                        .iter()
                        .map(|w| services::fill(w, slot))
                        .collect();
                    w.extend(x.process.server_args.iter().cloned());
                    (x.name.clone(), w)
                })
                .collect();
            if let Some((first, second, port)) = services::port_collision(&per_arm) {
                return Err(UsageError(format!(
                    "arms {first} and {second} would both listen on port {port} (a literal port in --server, and the arms' servers run at once): write {{port}} in its place so each arm's server gets its own, or --design restart"
                )));
            }
            warm.replicas_shared = replicas_shared(a, sp, arms, command)?;
            sp.warm = Some(warm);
        }
        Err(why) if wanted == Some(ServiceDesign::Warm) => {
            return Err(UsageError(format!(
                "--design warm: the arms cannot run side by side: {why}; use --design restart"
            )));
        }
        Err(why) => {
            if a.burst.is_some()
                || a.lifetime_blocks.is_some()
                || a.schedule.is_some()
                || a.replicas.is_some()
            {
                return Err(UsageError(format!(
                    "--burst, --lifetime-blocks, --schedule and --replicas are for the warm design, which this run cannot use: {why}"
                )));
            }
            sp.design = ServiceDesign::Restart;
            sp.design_reason = if wanted.is_some() {
                "--design restart".into()
            } else {
                format!("a fresh server per trial: {why}")
            };
            let any = placeholders(&sp.argv)
                || placeholders(command)
                || placeholders(std::slice::from_ref(&sp.ready));
            sp.per_arm_load = any;
            sp.slots = slots(any)?;
        }
    }
    Ok(())
}

/// `tmpfs.huge=`: a tmpfs per arm needs root (the mount); it holds the command's files, named
/// `{tmpfs}`, so a command that names it needs it on every arm; a server's files are placed by
/// its own data directory (not by this key yet).
pub(super) fn check_tmpfs(
    a: &RunArgs,
    arms: &[Arm],
    privileged: bool,
    service: bool,
) -> Result<(), UsageError> {
    let with: Vec<&str> = arms
        .iter()
        .filter(|x| x.process.tmpfs_huge.is_some())
        .map(|x| x.name.as_str())
        .collect();
    let named = a.command.iter().any(|w| w.contains("{tmpfs}"));
    if with.is_empty() {
        return match named {
            true => Err(UsageError(
                "the command names {tmpfs}, but no arm sets tmpfs.huge=never|always|within_size|advise to mount one".into(),
            )),
            false => Ok(()),
        };
    }
    // With a server, the arm's directory ({dir}: its socket, its data copy) is the tmpfs.
    let server_dir = a.server.as_deref().is_some_and(|s| s.contains("{dir}"));
    if service && !server_dir && a.preset.is_none() {
        return Err(UsageError(format!(
            "arm {}: with --server, tmpfs.huge mounts the arm's directory {{dir}} (its socket and data copy): name {{dir}} in --server (e.g. redis-server --dir {{dir}}), or use a preset that keeps its data there",
            with[0]
        )));
    }
    if !privileged {
        return Err(UsageError(format!(
            "arm {}: tmpfs.huge mounts a tmpfs for the arm, which needs root",
            with[0]
        )));
    }
    if named && with.len() < arms.len() {
        let without: Vec<&str> = arms
            .iter()
            .filter(|x| x.process.tmpfs_huge.is_none())
            .map(|x| x.name.as_str())
            .collect();
        return Err(UsageError(format!(
            "the command names {{tmpfs}}, but arm {} has no tmpfs.huge: give every arm one (tmpfs.huge=never for 4 KiB pages)",
            without.join(", ")
        )));
    }
    Ok(())
}

/// The number of blocks and the design (fixed, sequential, group-sequential).
pub(super) fn plan_blocks(a: &RunArgs, warm_default: bool) -> Result<(usize, Design), UsageError> {
    // --target-halfwidth looks after every block: the sequential design's confidence sequence.
    let sequential = a.sequential || a.target_halfwidth.is_some();
    let open_ended = sequential || a.calibrate.is_some();
    let blocks = a.blocks.unwrap_or(if open_ended || warm_default {
        UNBOUNDED_BLOCKS
    } else {
        10
    });
    if blocks < 2 {
        return Err(UsageError("--blocks must be at least 2".into()));
    }
    if sequential && blocks < ConfidenceSequence::MIN_BLOCKS {
        return Err(UsageError(format!(
            "--sequential needs --blocks of at least {} (the confidence sequence starts there)",
            ConfidenceSequence::MIN_BLOCKS
        )));
    }
    let design = match (sequential, a.looks) {
        (true, _) => Design::Sequential {
            n_opt: verdict::SEQUENTIAL_N_OPT,
        },
        (false, Some(k)) => {
            let Some(max) = a.blocks else {
                return Err(UsageError(
                    "--looks needs --blocks N, the planned maximum (plan it from a pilot: `hugelab run --calibrate 2m` prints the blocks δ needs)".into(),
                ));
            };
            if max < 2 * k as usize {
                return Err(UsageError(format!(
                    "--looks {k} needs --blocks of at least {} (two blocks per look)",
                    2 * k
                )));
            }
            Design::GroupSequential {
                looks: k as usize,
                max_blocks: max,
            }
        }
        _ => Design::Fixed,
    };
    Ok((blocks, design))
}
