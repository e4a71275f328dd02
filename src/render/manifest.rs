//! Kubernetes objects, typed and written in one place: every manifest hugelab writes (the
//! applier's ConfigMap, node-status reader and DaemonSet; the judge's Job, Deployment and
//! Service; the custom resources of Argo Rollouts and OpenShift around them) is built here from
//! the `k8s-openapi` types and serialised here. A field hugelab sets is then one the API
//! defines, spelt and typed as it types it, and no renderer spells an object of its own.
//!
//! Each object is written as a JSON document: YAML's own subset, which `kubectl` and every YAML
//! reader take, with every string quoted. A YAML serializer leaves `on`, `yes` or `n` bare,
//! and Kubernetes' YAML reader (YAML 1.1) takes those for booleans, so a node label `pool=on`
//! would become a selector the API server refuses.

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, Deployment, DeploymentSpec};
use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use std::collections::BTreeMap;

/// The label every object of one hugelab component carries, and its selectors match.
const NAME_LABEL: &str = "app.kubernetes.io/name";

/// One document, after the `---` that separates it from the one before: a file of them is what
/// `kubectl apply -f` reads.
pub fn document(object: &impl Serialize) -> String {
    let json = serde_json::to_string_pretty(object).expect("a Kubernetes object serialises");
    format!("---\n{json}\n")
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(NAME_LABEL.to_string(), name.to_string())])
}

/// An object's metadata: its name, its namespace (none for a cluster-scoped object) and the
/// component's label.
fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        labels: Some(labels(name)),
        ..Default::default()
    }
}

/// The priority class of a pod every node runs (an agent of the node itself).
const NODE_CRITICAL: &str = "system-node-critical";

/// A node agent runs on every node it is scheduled to, whatever its taints.
fn tolerate_every_taint() -> Vec<core::Toleration> {
    vec![core::Toleration {
        operator: Some("Exists".into()),
        ..Default::default()
    }]
}

/// The node's directory `path` as the pod's volume `name` (`type_`: what the kubelet checks or
/// makes there).
fn host_volume(name: &str, path: &str, type_: &str) -> core::Volume {
    core::Volume {
        name: name.into(),
        host_path: Some(core::HostPathVolumeSource {
            path: path.into(),
            type_: Some(type_.into()),
        }),
        ..Default::default()
    }
}

/// A ConfigMap holding one file (`key`), in `namespace`.
pub fn config_map(name: &str, namespace: &str, key: &str, text: &str) -> core::ConfigMap {
    core::ConfigMap {
        metadata: meta(name, Some(namespace)),
        data: Some(BTreeMap::from([(key.to_string(), text.to_string())])),
        ..Default::default()
    }
}

/// The ServiceAccount `name` in `namespace`, bound to a ClusterRole that may get nodes/status
/// and nothing else: how a pod reads whether its node advertises a resource.
pub fn node_status_reader(name: &str, namespace: &str) -> String {
    let role = format!("{name}-node-reader");
    let account = core::ServiceAccount {
        metadata: meta(name, Some(namespace)),
        ..Default::default()
    };
    let cluster_role = ClusterRole {
        metadata: meta(&role, None),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["nodes/status".into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let binding = ClusterRoleBinding {
        metadata: meta(&role, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: name.into(),
            namespace: Some(namespace.into()),
            ..Default::default()
        }]),
    };
    [
        document(&account),
        document(&cluster_role),
        document(&binding),
    ]
    .concat()
}

/// The node-side agent: a DaemonSet `name` in `namespace` on the nodes labelled `node_label`
/// (every taint tolerated), whose privileged container runs `args` in `image`, with `config`
/// (a ConfigMap of the same name) at /etc/hugelab and the node's /run/hugelab for its journal.
pub struct Agent<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub node_label: &'a (String, String),
    pub image: &'a str,
    pub args: Vec<String>,
    /// The ServiceAccount it runs as, with the host's PID namespace and its node's name in
    /// `NODE_NAME` (it reads its node's status and restarts the host's kubelet); `None`: neither.
    pub node_reader: Option<&'a str>,
}

pub fn daemon_set(a: &Agent) -> DaemonSet {
    let (key, value) = a.node_label;
    let node_name = core::EnvVar {
        name: "NODE_NAME".into(),
        value_from: Some(core::EnvVarSource {
            field_ref: Some(core::ObjectFieldSelector {
                field_path: "spec.nodeName".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let container = core::Container {
        name: "apply".into(),
        image: Some(a.image.into()),
        args: Some(a.args.clone()),
        env: a.node_reader.map(|_| vec![node_name]),
        security_context: Some(core::SecurityContext {
            privileged: Some(true),
            ..Default::default()
        }),
        resources: Some(core::ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("1m".into())),
                ("memory".to_string(), Quantity("8Mi".into())),
            ])),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            core::VolumeMount {
                name: "advice".into(),
                mount_path: "/etc/hugelab".into(),
                read_only: Some(true),
                ..Default::default()
            },
            core::VolumeMount {
                name: "journal".into(),
                mount_path: "/run/hugelab".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let pod = core::PodSpec {
        service_account_name: a.node_reader.map(Into::into),
        host_pid: a.node_reader.map(|_| true),
        node_selector: Some(BTreeMap::from([(key.clone(), value.clone())])),
        priority_class_name: Some(NODE_CRITICAL.into()),
        termination_grace_period_seconds: Some(30),
        tolerations: Some(tolerate_every_taint()),
        containers: vec![container],
        volumes: Some(vec![
            core::Volume {
                name: "advice".into(),
                config_map: Some(core::ConfigMapVolumeSource {
                    name: a.name.into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            host_volume("journal", "/run/hugelab", "DirectoryOrCreate"),
        ]),
        ..Default::default()
    };
    DaemonSet {
        metadata: meta(a.name, Some(a.namespace)),
        spec: Some(DaemonSetSpec {
            selector: selector(a.name),
            template: template(a.name, pod),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels(name)),
        ..Default::default()
    }
}

fn template(name: &str, spec: core::PodSpec) -> core::PodTemplateSpec {
    core::PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(name)),
            ..Default::default()
        }),
        spec: Some(spec),
    }
}

/// The container running `hugelab` with `args` in `image`.
fn hugelab(name: &str, image: &str, args: &[String]) -> core::Container {
    core::Container {
        name: name.into(),
        image: Some(image.into()),
        args: Some(args.to_vec()),
        ..Default::default()
    }
}

/// The name of every judge object, and the label their selectors match.
const JUDGE: &str = "hugelab-judge";

/// A Job's spec that runs `hugelab` with `args` in `image` once: never restarted, never
/// retried, so its exit code is the one run's.
pub fn run_once(image: &str, args: &[String]) -> JobSpec {
    JobSpec {
        backoff_limit: Some(0),
        template: core::PodTemplateSpec {
            metadata: None,
            spec: Some(core::PodSpec {
                restart_policy: Some("Never".into()),
                containers: vec![hugelab("judge", image, args)],
                ..Default::default()
            }),
        },
        ..Default::default()
    }
}

/// An Argo Rollouts AnalysisTemplate (`argoproj.io/v1alpha1`, a custom resource the API types
/// do not have) whose one metric is the Job `job`, once per analysis run, failing the step when
/// the Job fails.
pub fn analysis_template(job: JobSpec) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": ObjectMeta { name: Some(JUDGE.into()), ..Default::default() },
        "spec": {
            "metrics": [{
                "name": JUDGE,
                "count": 1,
                "failureLimit": 0,
                "provider": { "job": {
                    "metadata": ObjectMeta { labels: Some(labels(JUDGE)), ..Default::default() },
                    "spec": job,
                }},
            }],
        },
    })
}

/// The judge served over HTTP: a Deployment of one pod running `hugelab` with `args` in
/// `image`, ready once `/healthz` answers on `port`, and the Service in front of it.
pub fn served(image: &str, args: &[String], port: u16) -> String {
    let http = || IntOrString::String("http".into());
    let container = core::Container {
        ports: Some(vec![core::ContainerPort {
            name: Some("http".into()),
            container_port: i32::from(port),
            ..Default::default()
        }]),
        readiness_probe: Some(core::Probe {
            http_get: Some(core::HTTPGetAction {
                path: Some("/healthz".into()),
                port: http(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..hugelab("judge", image, args)
    };
    let deployment = Deployment {
        metadata: meta(JUDGE, None),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: selector(JUDGE),
            template: template(
                JUDGE,
                core::PodSpec {
                    containers: vec![container],
                    ..Default::default()
                },
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let service = core::Service {
        metadata: meta(JUDGE, None),
        spec: Some(core::ServiceSpec {
            selector: Some(labels(JUDGE)),
            ports: Some(vec![core::ServicePort {
                name: Some("http".into()),
                port: i32::from(port),
                target_port: Some(http()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    [document(&deployment), document(&service)].concat()
}

/// An OpenShift MachineConfigPool `pool` of the nodes labelled `node_label`, taking the
/// worker's machine configs and its own (a custom resource of the Machine Config Operator).
pub fn machine_config_pool(pool: &str, node_label: &(String, String)) -> serde_json::Value {
    const ROLE: &str = "machineconfiguration.openshift.io/role";
    let (key, value) = node_label;
    serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": ObjectMeta {
            name: Some(pool.into()),
            labels: Some(BTreeMap::from([(ROLE.to_string(), pool.to_string())])),
            ..Default::default()
        },
        "spec": {
            "machineConfigSelector": {
                "matchExpressions": [{ "key": ROLE, "operator": "In", "values": ["worker", pool] }],
            },
            "nodeSelector": LabelSelector {
                match_labels: Some(BTreeMap::from([(key.clone(), value.clone())])),
                ..Default::default()
            },
        },
    })
}

/// An OpenShift Tuned object (the Node Tuning Operator's custom resource) holding the profile
/// `profile` (tuned's own ini text, `data`) and applying it, at `priority`, to the nodes of the
/// MachineConfigPool `pool`.
pub fn tuned(
    name: &str,
    profile: &str,
    data: &str,
    pool: &str,
    priority: u32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "tuned.openshift.io/v1",
        "kind": "Tuned",
        "metadata": ObjectMeta {
            name: Some(name.into()),
            namespace: Some("openshift-cluster-node-tuning-operator".into()),
            ..Default::default()
        },
        "spec": {
            "profile": [{ "name": profile, "data": data }],
            "recommend": [{
                "machineConfigLabels": { "machineconfiguration.openshift.io/role": pool },
                "priority": priority,
                "profile": profile,
            }],
        },
    })
}

/// Where the exporter's DaemonSet runs, beside the cluster's Prometheus.
const EXPORTER_NAMESPACE: &str = "monitoring";

/// `hugelab exporter --manifest`: the exporter on every node of a cluster, a DaemonSet running
/// `args` (an `exporter` command line serving on `port`) in `image`, after a comment saying what
/// it needs from the node and why.
pub fn exporter(image: &str, args: &[String], port: u16) -> String {
    const NAME: &str = "hugelab-exporter";
    let metrics = || IntOrString::String("metrics".into());
    let container = core::Container {
        ports: Some(vec![core::ContainerPort {
            name: Some("metrics".into()),
            container_port: i32::from(port),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        readiness_probe: Some(core::Probe {
            http_get: Some(core::HTTPGetAction {
                path: Some("/metrics".into()),
                port: metrics(),
                ..Default::default()
            }),
            period_seconds: Some(30),
            ..Default::default()
        }),
        resources: Some(core::ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("10m".into())),
                ("memory".to_string(), Quantity("32Mi".into())),
            ])),
            limits: Some(BTreeMap::from([(
                "memory".to_string(),
                Quantity("64Mi".into()),
            )])),
            ..Default::default()
        }),
        security_context: Some(core::SecurityContext {
            run_as_user: Some(0),
            read_only_root_filesystem: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(core::Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: Some(
                    ["SYS_PTRACE", "SYS_ADMIN", "DAC_READ_SEARCH"]
                        .map(String::from)
                        .into(),
                ),
            }),
            ..Default::default()
        }),
        volume_mounts: Some(vec![core::VolumeMount {
            name: "sys".into(),
            mount_path: "/sys".into(),
            read_only: Some(true),
            ..Default::default()
        }]),
        ..hugelab("exporter", image, args)
    };
    let pod = core::PodSpec {
        host_pid: Some(true),
        priority_class_name: Some(NODE_CRITICAL.into()),
        tolerations: Some(tolerate_every_taint()),
        containers: vec![container],
        volumes: Some(vec![host_volume("sys", "/sys", "Directory")]),
        ..Default::default()
    };
    let mut template = template(NAME, pod);
    if let Some(m) = template.metadata.as_mut() {
        m.annotations = Some(BTreeMap::from([
            ("prometheus.io/scrape".to_string(), "true".to_string()),
            ("prometheus.io/port".to_string(), port.to_string()),
            ("prometheus.io/path".to_string(), "/metrics".to_string()),
        ]));
    }
    let daemon_set = DaemonSet {
        metadata: meta(NAME, Some(EXPORTER_NAMESPACE)),
        spec: Some(DaemonSetSpec {
            selector: selector(NAME),
            template,
            update_strategy: Some(k8s_openapi::api::apps::v1::DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let command = args.join(" ");
    format!(
        "# hugelab's exporter on every node of a cluster: per-host hugetlb pools, THP/mTHP counters,
# compaction, and the huge-page coverage of the node's largest processes, for Prometheus (and
# for `hugelab judge`, which reads a canary node pool's coverage as its evidence).
#
# Build and push the image first (deploy/container/Dockerfile):
#   docker build -f deploy/container/Dockerfile -t {image} . && docker push {image}
#   kubectl apply -f THIS-FILE
#
# What it needs from the node, and why:
# - hostPID: the container's /proc then lists the node's processes (the exporter reads
#   /proc/PID/smaps_rollup, status and, for folio sizes, pagemap + /proc/kpageflags).
# - /sys read-only from the node: THP/mTHP settings and stats, hugetlb pools per node, and the
#   node's cgroups under /sys/fs/cgroup for the per-pod series (hugelab_cgroup_*, labelled
#   pod_uid, qos, container_id; --cgroups N, the largest by memory, --cgroup-depth 4 reaches
#   kubelet's containers).
# - root with CAP_SYS_PTRACE (smaps of other users' processes) and CAP_SYS_ADMIN (page frame
#   numbers in pagemap, /proc/kpageflags); without them the folio metrics are left out and said
#   so in hugelab_exporter_errors_total. It writes nothing: the root file system is read-only.
# Scraped through the prometheus.io annotations; with the Prometheus Operator, point a
# PodMonitor at the label app.kubernetes.io/name={NAME}, port \"metrics\".
# Written by `hugelab {command} --image {image} --manifest FILE`.
{}",
        document(&daemon_set)
    )
}
