//! What a cgroup's path says about what runs in it: the Kubernetes pod, its QoS class and the
//! container (kubelet's systemd and cgroupfs drivers; containerd, CRI-O, Docker and Podman
//! scopes), or the systemd unit. Read from the path alone; a path that says none of it has no
//! labels.

/// The labels a path carries; empty fields are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Labels {
    /// The pod's UID, with dashes (the systemd driver writes them as underscores).
    pub pod_uid: Option<String>,
    /// `guaranteed`, `burstable` or `besteffort`.
    pub qos: Option<String>,
    /// The container's id as the runtime names it (hex).
    pub container_id: Option<String>,
    /// The systemd unit (`nginx.service`, `session-3.scope`), when the path is not a pod's.
    pub unit: Option<String>,
}

impl Labels {
    /// Its labels as `(name, value)` pairs, only those present.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        [
            ("pod_uid", &self.pod_uid),
            ("qos", &self.qos),
            ("container_id", &self.container_id),
            ("unit", &self.unit),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }

    /// In words for a table: `pod 1b4e…-… burstable, container 3f2a9c…` or `unit nginx.service`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.pod_uid {
            let qos = self
                .qos
                .as_deref()
                .map(|q| format!(" {q}"))
                .unwrap_or_default();
            parts.push(format!("pod {p}{qos}"));
        } else if let Some(q) = &self.qos {
            parts.push(format!("{q} pods"));
        }
        if let Some(c) = &self.container_id {
            parts.push(format!("container {}", &c[..c.len().min(12)]));
        }
        if let Some(u) = &self.unit {
            parts.push(format!("unit {u}"));
        }
        parts.join(", ")
    }
}

/// Runtimes' scope prefixes under the systemd driver (`cri-containerd-ID.scope`, …).
const SCOPES: [&str; 5] = [
    "cri-containerd-",
    "crio-",
    "docker-",
    "libpod-",
    "containerd-",
];

fn is_id(s: &str) -> bool {
    s.len() >= 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The labels of the cgroup at `path` (`/kubepods.slice/…`, `/system.slice/x.service`).
pub fn of(path: &str) -> Labels {
    let mut l = Labels::default();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let in_pods = segs.iter().any(|s| s.starts_with("kubepods"));
    for (i, s) in segs.iter().enumerate() {
        let name = s.strip_suffix(".slice").unwrap_or(s);
        if in_pods {
            // systemd driver: kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice;
            // cgroupfs driver: kubepods/burstable/pod<uid>/<id>.
            for q in ["burstable", "besteffort"] {
                if name == q || name.starts_with(&format!("kubepods-{q}")) {
                    l.qos = Some(q.into());
                }
            }
            if let Some(uid) = name.rsplit_once("pod").map(|(_, u)| u)
                && (name.starts_with("pod") || name.starts_with("kubepods"))
                && uid.len() >= 32
            {
                l.pod_uid = Some(uid.replace('_', "-"));
                if l.qos.is_none() {
                    l.qos = Some("guaranteed".into());
                }
            }
        }
        let scope = s.strip_suffix(".scope");
        if let Some(id) = scope
            .and_then(|n| SCOPES.iter().find_map(|p| n.strip_prefix(p)))
            .filter(|id| is_id(id))
        {
            l.container_id = Some(id.to_string());
        } else if is_id(s) && (in_pods || segs.get(i.wrapping_sub(1)) == Some(&"docker")) {
            l.container_id = Some(s.to_string());
        } else if !in_pods && (s.ends_with(".service") || scope.is_some()) {
            l.unit = Some(s.to_string());
        }
    }
    if l.container_id.is_some() && !in_pods {
        l.unit = None;
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    const ID: &str = "3f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f";

    #[test]
    fn a_pods_container_under_the_systemd_driver() {
        let p = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope",
            UID.replace('-', "_")
        );
        let l = of(&p);
        assert_eq!(l.pod_uid.as_deref(), Some(UID));
        assert_eq!(l.qos.as_deref(), Some("burstable"));
        assert_eq!(l.container_id.as_deref(), Some(ID));
        assert_eq!(l.unit, None);
        assert_eq!(
            l.describe(),
            format!("pod {UID} burstable, container 3f2a9c0d8e7b")
        );
        // A guaranteed pod sits right under kubepods.slice.
        let g = of(&format!(
            "/kubepods.slice/kubepods-pod{}.slice",
            UID.replace('-', "_")
        ));
        assert_eq!(
            (g.pod_uid.as_deref(), g.qos.as_deref()),
            (Some(UID), Some("guaranteed"))
        );
        assert_eq!(
            of("/kubepods.slice/kubepods-besteffort.slice")
                .qos
                .as_deref(),
            Some("besteffort")
        );
    }

    #[test]
    fn a_pods_container_under_the_cgroupfs_driver_and_plain_docker() {
        let l = of(&format!("/kubepods/besteffort/pod{UID}/{ID}"));
        assert_eq!(
            (
                l.pod_uid.as_deref(),
                l.qos.as_deref(),
                l.container_id.as_deref()
            ),
            (Some(UID), Some("besteffort"), Some(ID))
        );
        let g = of(&format!("/kubepods/pod{UID}/{ID}"));
        assert_eq!(g.qos.as_deref(), Some("guaranteed"));
        assert_eq!(
            of(&format!("/docker/{ID}")).container_id.as_deref(),
            Some(ID)
        );
        let d = of(&format!("/system.slice/docker-{ID}.scope"));
        assert_eq!((d.container_id.as_deref(), d.unit), (Some(ID), None));
    }

    #[test]
    fn a_systemd_unit_and_paths_that_say_nothing() {
        let l = of("/system.slice/postgresql@15-main.service");
        assert_eq!(l.unit.as_deref(), Some("postgresql@15-main.service"));
        assert_eq!(l.pairs(), vec![("unit", "postgresql@15-main.service")]);
        assert_eq!(
            of("/user.slice/user-0.slice/session-3.scope")
                .unit
                .as_deref(),
            Some("session-3.scope")
        );
        assert_eq!(of("/"), Labels::default());
        assert_eq!(
            of("/process_api/d4ff46df73b4919e50a0673d4412f872"),
            Labels::default()
        );
        assert_eq!(of("/hugelab-test").describe(), "");
    }
}
