//! `advise --platform`: an advice placed on a rollout engine's canary node pool, one file per
//! engine. Each engine's node configuration carries some knobs and not others (as each
//! documents it); what it cannot carry is kept with why, so the artefact and the plan say so and
//! offer the DaemonSet (`hugelab apply` on the same nodes), which carries every knob. A new
//! engine is a file here and a line in [`registry`]: its name and help reach `advise --help` and
//! `--platform` from there, and [`place`] and [`plan`] ask it what it carries.

mod aks;
mod bottlerocket;
mod daemonset;
mod gke;
mod openshift;

use crate::control::Knob;
use crate::model::advice::{Advice, Setting};
use crate::units::Bytes;
use std::fmt::Write;

/// The canary node pool's name when none is given: valid on every engine (AKS allows at most
/// 12 lowercase letters and digits for a Linux node pool).
pub const POOL: &str = "hugecanary";

/// A rollout engine whose node configuration carries an advice's settings.
pub trait Platform: Sync {
    /// Its `--platform` value.
    fn name(&self) -> &'static str;
    /// One line for `advise --help`.
    fn help(&self) -> &'static str;
    /// The engine's name as its users say it.
    fn engine(&self) -> &'static str;
    /// Whether its node configuration sets `knob`: `Err` says why not.
    fn carries(&self, knob: &Knob) -> Result<(), String>;
    /// The node pool names it accepts.
    fn pool_names(&self) -> PoolNames {
        PoolNames {
            max: 63,
            inside: "-.",
        }
    }
    /// Moves what it carries but not beside another carried setting from `set` to `unset`.
    fn settle(&self, _set: &mut Vec<Setting>, _unset: &mut Vec<Unset>) {}
    /// The share of a node's memory it lets huge pages take, where it documents one, and where.
    fn pool_limit(&self) -> Option<(f64, &'static str)> {
        None
    }
    /// The release of the engine (or its client) that its artefact for `set` needs.
    fn needs(&self, set: &[Setting]) -> Option<Need>;
    /// What applying its artefact for `set` does that its user should know first.
    fn caveats(&self, _set: &[Setting]) -> Vec<String> {
        Vec::new()
    }
    /// Whether its pools are reserved as the node boots (else the DaemonSet sets them at run
    /// time, and the kubelet must restart to report them).
    fn boot_pools(&self) -> bool;
    /// The command that applies an artefact with no room for comments, for the plan.
    fn apply(&self, _np: &NodePool) -> Option<String> {
        None
    }
    /// The `--format` artefact it is (the DaemonSet), written without a plan.
    fn as_format(&self) -> Option<&'static str> {
        None
    }
    /// The artefact, whole.
    fn write(&self, a: &Advice, np: &NodePool) -> String;
}

impl std::fmt::Debug for dyn Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A node pool name's rule: lowercase letters and digits, starting with a letter, the
/// characters `inside` allowed but not last, at most `max`.
pub struct PoolNames {
    pub max: usize,
    pub inside: &'static str,
}

/// A setting the engine's node configuration cannot carry, and why.
#[derive(Debug, Clone)]
pub struct Unset {
    pub setting: Setting,
    pub why: String,
}

/// A release of an engine or its client that the artefact's fields need, as its documentation
/// or release notes (`source`) say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub release: &'static str,
    pub fields: Vec<&'static str>,
    pub source: &'static str,
}

/// The advice placed on one engine's canary node pool.
#[derive(Debug)]
pub struct NodePool {
    pub platform: &'static dyn Platform,
    /// The node pool's name (GKE and AKS node pool, OpenShift MachineConfigPool).
    pub pool: String,
    /// The label that marks the canary nodes.
    pub label: (String, String),
    /// The settings the engine's configuration carries.
    pub set: Vec<Setting>,
    /// The settings it cannot carry.
    pub unset: Vec<Unset>,
    /// Bytes the advised hugetlb pools reserve on each node.
    pub pooled: u64,
    /// The node memory the pools were checked against, and where that figure came from.
    pub node_memory: u64,
    pub node_memory_from: String,
    /// The share of a node's memory the engine lets huge pages take, where it documents one,
    /// and where it does.
    pub pool_limit: Option<(f64, &'static str)>,
    /// The releases of the engine (or its client) the artefact's fields need.
    pub needs: Vec<Need>,
    /// What applying it does that its user should know first (a reboot, a boot that fails).
    pub caveats: Vec<String>,
    /// The stored runs the advice rests on (for the command that writes the DaemonSet).
    pub runs: Vec<i64>,
}

/// Every engine, in the order `--help` lists them.
pub fn registry() -> Vec<&'static dyn Platform> {
    #[allow(unused_mut)]
    let mut all: Vec<&'static dyn Platform> = vec![
        &gke::Gke,
        &aks::Aks,
        &bottlerocket::Bottlerocket,
        &openshift::Openshift,
        &daemonset::Daemonset,
    ];
    #[cfg(test)]
    all.push(&tests::Planted);
    all
}

/// The engine named `name` (a `--platform` value).
pub fn find(name: &str) -> Option<&'static dyn Platform> {
    registry().into_iter().find(|p| p.name() == name)
}

/// `--platform`'s parser: the registry's names, each with its help.
pub fn parser() -> clap::builder::PossibleValuesParser {
    super::possible_values(registry().into_iter().map(|p| (p.name(), p.help())))
}

/// Whether `name` is a node pool name `platform` accepts.
fn pool_name(platform: &dyn Platform, name: &str) -> Result<(), String> {
    let rule = platform.pool_names();
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.len() <= rule.max
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || rule.inside.contains(c))
        && !name.ends_with(|c| rule.inside.contains(c));
    if ok {
        return Ok(());
    }
    let inside: Vec<String> = rule.inside.chars().map(|c| format!("'{c}'")).collect();
    Err(format!(
        "--pool {name:?}: not a node pool name {} accepts (lowercase letters and digits, starting with a letter{}, at most {}); e.g. --pool {POOL}",
        platform.engine(),
        if inside.is_empty() {
            String::new()
        } else {
            format!(", {} inside", inside.join(" and "))
        },
        rule.max
    ))
}

/// Whether a boot-time pool of `size` (for NUMA node `node`) is one GKE's or Bottlerocket's
/// configuration reserves; `per_node`: it takes one NUMA node's pool too.
fn boot_pool(size: u64, node: Option<u32>, per_node: bool) -> Result<(), String> {
    if node.is_some() && !per_node {
        Err("it sets a pool for the whole node, not one NUMA node's".to_string())
    } else if size != 2 << 20 && size != 1 << 30 {
        Err(format!("it has no {} pool", Bytes(size)))
    } else {
        Ok(())
    }
}

/// A release `fields` need, unless there are none.
fn need(release: &'static str, fields: Vec<&'static str>, source: &'static str) -> Option<Need> {
    (!fields.is_empty()).then_some(Need {
        release,
        fields,
        source,
    })
}

/// The advice on `platform`'s canary pool `pool` of nodes labelled `label`, with the pools
/// checked against `node_memory` bytes (`from` says where that figure came from). `Err` names
/// the value that cannot be and the fix.
pub fn place(
    adv: &Advice,
    platform: &'static dyn Platform,
    pool: &str,
    label: &(String, String),
    node_memory: u64,
    from: &str,
) -> Result<NodePool, String> {
    pool_name(platform, pool)?;
    let (mut set, mut unset) = (Vec::new(), Vec::new());
    for s in &adv.settings {
        match platform.carries(&s.knob) {
            Ok(()) => set.push(s.clone()),
            Err(why) => unset.push(Unset {
                setting: s.clone(),
                why,
            }),
        }
    }
    platform.settle(&mut set, &mut unset);
    let pooled = crate::analyze::advice::pool_bytes(&set);
    let pool_limit = platform.pool_limit();
    if let Some((limit, _)) = pool_limit
        && pooled as f64 > limit * node_memory as f64
    {
        return Err(format!(
            "the advised pools take {} of a {} node ({}, {:.0}%): {} lets huge pages take at most {:.0}% of a node's memory; give --node-memory SIZE for the node pool's machine type, or choose a machine type with at least {}",
            Bytes(pooled),
            Bytes(node_memory),
            from,
            pooled as f64 * 100.0 / node_memory as f64,
            platform.engine(),
            limit * 100.0,
            Bytes((pooled as f64 / limit).ceil() as u64)
        ));
    }
    let mut runs: Vec<i64> = adv.evidence.iter().map(|e| e.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    Ok(NodePool {
        platform,
        pool: pool.to_string(),
        label: label.clone(),
        unset,
        pooled,
        node_memory,
        node_memory_from: from.to_string(),
        pool_limit,
        needs: platform.needs(&set).into_iter().collect(),
        caveats: platform.caveats(&set),
        set,
        runs,
    })
}

/// The lines every form of the artefact says: where it goes, what it sets, what it cannot set
/// and the lever for that, and the pools against the node's memory. The plan printed beside an
/// artefact that has no comments (AKS's JSON), and the comment of those that do.
pub fn plan(a: &Advice, np: &NodePool) -> Vec<String> {
    use crate::render::advice::{RUN_TIME_POOLS, sets_pools, target_name};
    let (k, v) = &np.label;
    let engine = np.platform.engine();
    let mut o = vec![format!(
        "{engine} canary node pool {:?}, nodes labelled {k}={v}:",
        np.pool
    )];
    for s in &np.set {
        o.push(format!("  sets {} = {}", s.knob, s.value));
    }
    match (np.set.is_empty(), np.unset.is_empty()) {
        (true, true) => o.push("  sets nothing: the advice changes no setting".into()),
        (true, false) => {
            o.push("  sets nothing (no advised setting is one this engine carries)".into())
        }
        _ => {}
    }
    for u in &np.unset {
        o.push(format!(
            "  cannot set {} = {}: {}",
            u.setting.knob, u.setting.value, u.why
        ));
    }
    let runs: Vec<String> = np.runs.iter().map(i64::to_string).collect();
    if !np.unset.is_empty() {
        o.push(format!(
            "  the nearest lever for those: `hugelab advise {} --format daemonset --node-label {k}={v}` holds every advised setting on the same nodes",
            runs.join(" ")
        ));
    }
    if !a.service.is_empty() {
        o.push(format!(
            "  not in it: the service's own lines (`hugelab advise {} --for {} --format service`)",
            runs.join(" "),
            target_name(a)
        ));
    }
    if sets_pools(a) {
        o.push(if np.platform.boot_pools() {
            "  the pools are reserved as the node boots, so its kubelet reports hugepages-2Mi/1Gi from the start and pods that request them are scheduled".into()
        } else {
            format!("  with the DaemonSet, {RUN_TIME_POOLS}")
        });
    }
    if let Some(apply) = np.platform.apply(np) {
        o.push(format!("  apply: {apply}"));
    }
    if np.pooled > 0 {
        let share = np.pooled as f64 * 100.0 / np.node_memory as f64;
        o.push(format!(
            "  the pools reserve {} per node: {share:.0}% of {} ({}){}",
            Bytes(np.pooled),
            Bytes(np.node_memory),
            np.node_memory_from,
            np.pool_limit.map_or(String::new(), |(l, source)| format!(
                "; {engine} allows at most {:.0}% ({source})",
                l * 100.0
            ))
        ));
    }
    for n in &np.needs {
        o.push(format!(
            "  needs {}: {} ({})",
            n.release,
            n.fields.join(", "),
            n.source
        ));
    }
    for c in &np.caveats {
        o.push(format!("  mind: {c}"));
    }
    o
}

/// An artefact's opening comment: the advice's, how to apply it (`how`), and the plan.
fn header(a: &Advice, np: &NodePool, how: &str) -> String {
    let mut o = crate::render::advice::comments(a, "#");
    o.push_str(how);
    for l in plan(a, np) {
        let _ = writeln!(o, "# {l}");
    }
    o
}

/// The setting of `knob` the pool carries.
fn setting(np: &NodePool, knob: Knob) -> Option<&Setting> {
    np.set.iter().find(|s| s.knob == knob)
}

/// A TOML or YAML string: JSON's quoting, which both read.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests;
