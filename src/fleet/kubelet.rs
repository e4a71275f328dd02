//! The applier's last step on a canary node: the pools it set reach the scheduler only once the
//! node advertises them in `status.capacity`, which the kubelet does for pages allocated after
//! boot only when it restarts (Kubernetes documents this). Reads the node through the API
//! server, restarts the kubelet once when asked, checks again, and says loudly what a pod that
//! requests the pages will see.

use crate::collect::kubernetes::{Api, hugepages_resource, quantity_bytes};
use crate::units::Bytes;
use std::time::{Duration, Instant};

/// How long the node may take to advertise the pools after its kubelet restarted, and how
/// often it is read meanwhile.
const SETTLE: Duration = Duration::from_secs(120);
const EVERY: Duration = Duration::from_secs(2);

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

/// After the applier set pools of `sizes` (bytes a page): whether `node` (else `$NODE_NAME`, as
/// the DaemonSet passes it) advertises the kernel's pools of those sizes as they now stand, read
/// through the API server at `api_server` (else the one a pod reaches) with the service account
/// in `account`, restarting the kubelet with `restart` when given. One line a finding.
pub fn check(
    sizes: &[u64],
    node: Option<String>,
    api_server: Option<&str>,
    account: &std::path::Path,
    restart: Option<&str>,
) -> Vec<String> {
    let Some(node) = node.or_else(|| std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()))
    else {
        return vec!["not on a Kubernetes node (no --node or NODE_NAME): whether a kubelet advertises the pools is not checked".into()];
    };
    let pools: Vec<(u64, u64)> = crate::probe::hugetlb::read(&crate::probe::Root::system())
        .unwrap_or_default()
        .iter()
        .filter(|p| sizes.contains(&p.page_size))
        .map(|p| (p.page_size, p.total * p.page_size))
        .collect();
    match Api::new(api_server, account) {
        Ok(api) => advertise(&api, &node, &pools, restart),
        Err(why) => vec![format!(
            "WARNING: node {node}'s capacity cannot be checked ({why}): a pod that requests its huge pages stays Pending until the node advertises them, which for pools set at run time takes a kubelet restart"
        )],
    }
}

/// Checks that `node` advertises each pool (`(page size, bytes)` the applier set), through
/// `api`; where it does not and `restart` is given, runs that command once (`sh -c`) and reads
/// the node again until it does or [`SETTLE`] has passed. Returns what it found, one line each.
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
    let t = Instant::now();
    let mut last = short;
    while t.elapsed() < SETTLE {
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
        "WARNING: node {node} still advertises {last} {}s after its kubelet restarted: {pending}",
        SETTLE.as_secs()
    ));
    o
}
