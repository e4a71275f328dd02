//! Every arm's server for one replica: the plan's server, arm and load with the placeholders
//! (`{port}`, `{dir}`, `{arm}`, `{replica}`) filled for that arm's slot, its directory and data copy, and
//! the side-by-side settings that make one arm's server differ from the others' (THP off or
//! advised for it alone).

use super::ArmServer;
use crate::backing::arm::Expect;
use crate::backing::services::fill;
use crate::model::run::Plan;
use crate::workload::child::TrialSpec;
use crate::workload::server::dirs::ArmDirs;

/// Per arm the plan, arm and load with placeholders filled, and the run's directories, for
/// `replica` (0: the plan's ports; each further replica gets ports and directories of its own).
pub(super) fn arm_servers(
    plan: &Plan,
    base: &TrialSpec,
    replica: usize,
) -> anyhow::Result<(Vec<ArmServer>, Option<ArmDirs>)> {
    let sp = plan.server.as_ref().expect("a server run");
    let names: Vec<String> = plan
        .arms
        .iter()
        .map(|a| match replica {
            0 => a.name.clone(),
            r => format!("{}-r{}", a.name, r + 1),
        })
        .collect();
    let tmpfs: Vec<_> = plan.arms.iter().map(|a| a.process.tmpfs_huge).collect();
    // A further replica's ports: chosen while the first replica's servers hold theirs.
    let ports = match replica {
        0 => Vec::new(),
        _ => crate::experiment::plan::free_ports(plan.arms.len())?,
    };
    let dirs = if sp.per_arm_load || sp.copy_data.is_some() || tmpfs.iter().any(Option::is_some) {
        Some(
            ArmDirs::new(base.user, &names, sp.copy_data.as_deref(), &tmpfs)
                .map_err(|e| anyhow::anyhow!("each arm's directory for its server: {e}"))?,
        )
    } else {
        None
    };
    let (thp_off, thp_advised): (Vec<usize>, Vec<usize>) = sp
        .warm
        .as_ref()
        .map(|w| {
            (
                w.side_by_side.thp_off.clone(),
                w.side_by_side.thp_advised.clone(),
            )
        })
        .unwrap_or_default();
    let servers = plan
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut slot = sp.slots.get(i).cloned().unwrap_or_default();
            slot.replica = replica;
            if let Some(&p) = ports.get(i).filter(|_| slot.port != 0) {
                slot.port = p;
            }
            if let Some(d) = &dirs {
                slot.dir = d.dirs[i].display().to_string();
            }
            let f = |s: &str| fill(s, &slot);
            let mut p = sp.clone();
            p.argv = sp.argv.iter().map(|w| f(w)).collect();
            p.ready = f(&sp.ready);
            p.warmup = sp.warmup.as_deref().map(f);
            p.pidfile = sp
                .pidfile
                .as_ref()
                .map(|x| f(&x.display().to_string()).into());
            let mut arm = a.clone();
            let wants_madvise = !a
                .system
                .iter()
                .any(|(k, v)| *k == crate::control::Knob::ThpEnabled && v == "never");
            let stand_in = thp_off.contains(&i) && wants_madvise;
            if thp_off.contains(&i) {
                // THP never for this server alone: PR_SET_THP_DISABLE, confirmed by its memory.
                // An arm that asked for nothing in particular must end up on 4 KiB pages.
                let asked = arm.server_expectation();
                arm.process.thp_disable = true;
                if asked.is_none() {
                    arm.expect = Some(Expect::FourK);
                }
            }
            // THP madvise for this server alone under THP always: the advised policy,
            // confirmed per trial by the kernel's THPeligible of its regions.
            arm.process.thp_advised |= thp_advised.contains(&i);
            let mut s = ArmServer {
                plan: p,
                arm,
                load: Vec::new(),
                slot,
                stand_in,
            };
            s.fill_all(&plan.command);
            Ok(s)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((servers, dirs))
}
