//! The Kubernetes API as a pod sees it: one node's status, read through the API server with the
//! pod's service account (its token and CA certificate), so that the applier on a canary node
//! can tell whether the node advertises the huge pages it reserved (`hugepages-2Mi` in
//! `status.capacity`), which the scheduler needs before a pod that requests them can run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Where a pod finds its service account's token and the API server's CA certificate.
pub const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// How the applier restarts its node's kubelet unless told otherwise: in the host's namespaces
/// (its pod runs with hostPID and privileged), through systemd.
pub const RESTART_KUBELET: &str =
    "nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart kubelet";

/// A client of the API server, authenticated as the pod's service account.
pub struct Api {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Api {
    /// The API server at `url`, or, without one, the one a pod reaches
    /// (`https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, trusting the service
    /// account's `ca.crt`); the bearer token is `account/token` where that file exists. `Err`
    /// says why no API server can be reached from here.
    pub fn new(url: Option<&str>, account: &Path) -> Result<Api, String> {
        let token = std::fs::read_to_string(account.join("token"))
            .ok()
            .map(|t| t.trim().to_string());
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false);
        let base = match url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => {
                let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
                let (Some(host), Some(port)) = (
                    var("KUBERNETES_SERVICE_HOST"),
                    var("KUBERNETES_SERVICE_PORT"),
                ) else {
                    return Err("not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST)".into());
                };
                let ca = account.join("ca.crt");
                let pem = std::fs::read(&ca).map_err(|e| format!("{}: {e}", ca.display()))?;
                let cert = ureq::tls::Certificate::from_pem(&pem)
                    .map_err(|e| format!("{}: {e}", ca.display()))?;
                config = config.tls_config(
                    ureq::tls::TlsConfig::builder()
                        .root_certs(ureq::tls::RootCerts::new_with_certs(&[cert]))
                        .build(),
                );
                // An IPv6 service address goes in brackets.
                if host.contains(':') {
                    format!("https://[{host}]:{port}")
                } else {
                    format!("https://{host}:{port}")
                }
            }
        };
        Ok(Api {
            base,
            token,
            agent: config.build().into(),
        })
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// `node`'s `status.capacity` as the API server holds it (quantities as Kubernetes writes
    /// them, `"1200Mi"`). `Err` names the status or the failure.
    pub fn capacity(&self, node: &str) -> Result<BTreeMap<String, String>, String> {
        let url = format!("{}/api/v1/nodes/{node}/status", self.base);
        let mut req = self.agent.get(&url);
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let mut resp = req.call().map_err(|e| format!("GET {url}: {e}"))?;
        let status = resp.status();
        let body = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !status.is_success() {
            let why = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_string))
                .unwrap_or(body);
            return Err(format!("GET {url}: {status}: {why}"));
        }
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("GET {url}: not a Node ({e})"))?;
        let cap = v["status"]["capacity"]
            .as_object()
            .ok_or_else(|| format!("GET {url}: the Node has no status.capacity"))?;
        Ok(cap
            .iter()
            .filter_map(|(k, q)| Some((k.clone(), q.as_str()?.to_string())))
            .collect())
    }
}

/// A Kubernetes quantity of bytes (`"1200Mi"`, `"2Gi"`, `"1G"`, `"1258291200"`), as the API
/// writes a node's huge page capacity; `None` for anything else.
pub fn quantity_bytes(q: &str) -> Option<u64> {
    let q = q.trim();
    let split = q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len());
    let (n, suffix) = q.split_at(split);
    let n: u64 = n.parse().ok()?;
    let unit: u64 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(unit)
}

/// The resource name under which a node advertises its pool of `size`-byte pages
/// (`hugepages-2Mi`, `hugepages-1Gi`).
pub fn hugepages_resource(size: u64) -> String {
    format!(
        "hugepages-{}",
        match size {
            s if s >= 1 << 30 && s % (1 << 30) == 0 => format!("{}Gi", s >> 30),
            s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}Mi", s >> 20),
            s => format!("{}Ki", s >> 10),
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_the_api_writes_them() {
        assert_eq!(quantity_bytes("1200Mi"), Some(1200 << 20));
        assert_eq!(quantity_bytes("2Gi"), Some(2 << 30));
        assert_eq!(quantity_bytes("0"), Some(0));
        assert_eq!(quantity_bytes("1258291200"), Some(1_258_291_200));
        assert_eq!(quantity_bytes("1G"), Some(1_000_000_000));
        assert_eq!(quantity_bytes("1.5Gi"), None);
        assert_eq!(quantity_bytes("Mi"), None);
        assert_eq!(hugepages_resource(2 << 20), "hugepages-2Mi");
        assert_eq!(hugepages_resource(1 << 30), "hugepages-1Gi");
        assert_eq!(hugepages_resource(64 << 10), "hugepages-64Ki");
    }
}
