//! The applier's last step on a canary node: the pools it set reach the scheduler only once the
//! node advertises them in `status.capacity`, which the kubelet does for pages allocated after
//! boot only when it restarts (Kubernetes documents this). Reads the node through the API
//! server, restarts the kubelet once when asked, checks again, and says loudly what a pod that
//! requests the pages will see.

use crate::collect::kubernetes::{self, Api, hugepages_resource, quantity_bytes};
use crate::control::Knob;
use crate::model::advice::Setting;
use crate::units::Bytes;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `hugelab apply`'s options for a Kubernetes node: where to read whether the node advertises
/// the pools the applier set, and whether to restart its kubelet when it does not.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The Kubernetes node this runs on (default $NODE_NAME): once its pools are set, check
    /// that the node advertises them, through the API server
    #[arg(long = "node")]
    pub name: Option<String>,
    /// The API server (default: the one a pod reaches, with its service account)
    #[arg(long, value_name = "URL")]
    pub api_server: Option<String>,
    /// The service account's folder: its token and the API server's CA certificate (ca.crt)
    #[arg(long, value_name = "DIR", default_value = kubernetes::SERVICE_ACCOUNT)]
    pub service_account: PathBuf,
    /// When the node does not advertise the pools, restart its kubelet once with this command
    /// (default: `systemctl restart kubelet` in the host's namespaces; needs hostPID), then
    /// check again
    #[arg(long, value_name = "CMD", num_args = 0..=1, default_missing_value = kubernetes::RESTART_KUBELET)]
    pub restart_kubelet: Option<String>,
}

/// How often the node is read after its kubelet restarted, and how many times before the
/// applier says it still lags (about two minutes).
const EVERY: Duration = Duration::from_secs(2);
const READS: u32 = 60;

/// The pools `node` does not advertise in full: `hugepages-2Mi 0 of the pool's 16.0 MiB`.
fn lagging(api: &Api, node: &str, pools: &[(u64, u64)]) -> Result<Vec<String>, String> {
    let cap = api.capacity(node)?;
    Ok(pools
        .iter()
        .filter_map(|&(size, bytes)| {
            let name = hugepages_resource(size);
            let q = cap.get(&name);
            let have = q.and_then(|q| quantity_bytes(q)).unwrap_or(0);
            (have < bytes).then(|| {
                format!(
                    "{name} {} of the pool's {}",
                    q.map_or("absent", String::as_str),
                    Bytes(bytes)
                )
            })
        })
        .collect())
}

/// After the applier set `settings`: where they hold pools, whether the node (`args.name`, else
/// `$NODE_NAME`, as the DaemonSet passes it) advertises the kernel's pools of those sizes as they
/// now stand, read through the API server, restarting the kubelet as `args` says. One line a
/// finding; none when no pool was set.
pub fn check(settings: &[Setting], args: &NodeArgs) -> Vec<String> {
    let sizes: Vec<u64> = (settings.iter())
        .filter_map(|s| match s.knob {
            Knob::HugetlbPages { size, .. } => Some(size),
            _ => None,
        })
        .collect();
    if sizes.is_empty() {
        return Vec::new();
    }
    let env = std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty());
    let Some(node) = args.name.clone().or(env) else {
        return vec!["not on a Kubernetes node (no --node or NODE_NAME): whether a kubelet advertises the pools is not checked".into()];
    };
    let pools: Vec<(u64, u64)> = crate::probe::hugetlb::read(&crate::probe::Root::system())
        .unwrap_or_default()
        .iter()
        .filter(|p| sizes.contains(&p.page_size))
        .map(|p| (p.page_size, p.total * p.page_size))
        .collect();
    match Api::new(args.api_server.as_deref(), &args.service_account) {
        Ok(api) => advertise(&api, &node, &pools, args.restart_kubelet.as_deref()),
        Err(why) => vec![format!(
            "WARNING: node {node}'s capacity cannot be checked ({why}): a pod that requests its huge pages stays Pending until the node advertises them, which for pools set at run time takes a kubelet restart"
        )],
    }
}

/// Checks that `node` advertises each pool (`(page size, bytes)` the applier set), through
/// `api`; where it does not and `restart` is given, runs that command once (`sh -c`) and reads
/// the node again until it does, [`READS`] times [`EVERY`] apart. Returns what it found, one line each.
pub fn advertise(
    api: &Api,
    node: &str,
    pools: &[(u64, u64)],
    restart: Option<&str>,
) -> Vec<String> {
    let names: Vec<String> = pools.iter().map(|p| hugepages_resource(p.0)).collect();
    let names = names.join(", ");
    let pending =
        format!("a pod that requests {names} stays Pending until the node advertises them");
    let short = match lagging(api, node, pools) {
        Ok(s) if s.is_empty() => {
            return vec![format!(
                "node {node} advertises {names} as large as the pools: pods that request them can be scheduled"
            )];
        }
        Ok(s) => s.join(", "),
        Err(why) => {
            return vec![format!(
                "WARNING: node {node}'s capacity cannot be read from the API server at {} ({why}): {pending}, which for pools set at run time takes a kubelet restart",
                api.url()
            )];
        }
    };
    let Some(cmd) = restart else {
        return vec![format!(
            "WARNING: node {node} advertises {short}: {pending}; restart its kubelet (`systemctl restart kubelet` on the node) or run the applier with --restart-kubelet"
        )];
    };
    let mut o = vec![format!(
        "node {node} advertises {short}: restarting its kubelet once (`{cmd}`)"
    )];
    let ran = std::process::Command::new("sh").arg("-c").arg(cmd).status();
    match ran {
        Ok(st) if st.success() => {}
        Ok(st) => {
            o.push(format!("WARNING: `{cmd}` failed ({st}): {pending}"));
            return o;
        }
        Err(e) => {
            o.push(format!("WARNING: `{cmd}` cannot run ({e}): {pending}"));
            return o;
        }
    }
    let mut last = short;
    for _ in 0..READS {
        std::thread::sleep(EVERY);
        match lagging(api, node, pools) {
            Ok(s) if s.is_empty() => {
                o.push(format!(
                    "node {node} advertises {names} as large as the pools after its kubelet restarted: pods that request them can be scheduled"
                ));
                return o;
            }
            Ok(s) => last = s.join(", "),
            Err(why) => last = why,
        }
    }
    o.push(format!(
        "WARNING: node {node} still advertises {last} after its kubelet restarted ({READS} reads, {} s apart): {pending}",
        EVERY.as_secs()
    ));
    o
}
