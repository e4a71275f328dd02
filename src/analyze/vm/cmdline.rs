//! Which process is a hypervisor, and the guest RAM its command line or config declares.

use crate::backing::qemu::parse_memory;
pub use crate::model::vm::{BackendKind, Declared, Hypervisor};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// QEMU's guest RAM when the command line gives no `-m`.
pub const QEMU_DEFAULT_RAM: u64 = 128 << 20;
/// Without a declared size, anonymous/shared/hugetlb mappings at least this large are guest RAM.
pub const UNDECLARED_MIN: u64 = 64 << 20;
/// The id prefix of guest RAM found by size rather than declared.
pub(super) const FOUND: &str = "found-";

/// The hypervisor a process is, from its name (comm, 15 characters) or its program.
pub fn hypervisor(comm: &str, cmdline: &[String]) -> Option<Hypervisor> {
    let prog = cmdline
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or("");
    let is = |n: &str| comm == n || prog == n;
    if comm.starts_with("qemu-system") || prog.starts_with("qemu-system") || is("qemu-kvm") {
        Some(Hypervisor::Qemu)
    } else if is("firecracker") {
        Some(Hypervisor::Firecracker)
    } else if is("cloud-hypervisor") || comm == "cloud-hyperviso" {
        Some(Hypervisor::CloudHypervisor)
    } else {
        None
    }
}

fn opts(s: &str) -> BTreeMap<&str, &str> {
    s.split(',').filter_map(|kv| kv.split_once('=')).collect()
}

fn on(v: Option<&&str>) -> bool {
    matches!(v.copied(), Some("on" | "yes" | "true"))
}

fn size_of(v: Option<&&str>) -> Option<u64> {
    v.and_then(|s| s.parse::<Bytes>().ok()).map(|b| b.0)
}

/// A QEMU `-object` value as key → value, in either syntax: `qom-type,key=value,…` (the type
/// may be bare) or JSON (`{"qom-type":"memory-backend-file","size":4294967296,…}`, as libvirt
/// writes it). JSON numbers become decimal strings, booleans `on`/`off`.
fn object_opts(v: &str) -> Option<BTreeMap<String, String>> {
    if v.trim_start().starts_with('{') {
        let m: serde_json::Map<String, serde_json::Value> = serde_json::from_str(v).ok()?;
        return Some(
            m.into_iter()
                .filter_map(|(k, x)| {
                    let s = match x {
                        serde_json::Value::String(s) => s,
                        serde_json::Value::Number(n) => n.to_string(),
                        serde_json::Value::Bool(b) => if b { "on" } else { "off" }.to_string(),
                        _ => return None,
                    };
                    Some((k, s))
                })
                .collect(),
        );
    }
    let (ty, rest) = v.split_once(',').unwrap_or((v, ""));
    let mut o: BTreeMap<String, String> = opts(rest)
        .into_iter()
        .map(|(k, x)| (k.to_string(), x.to_string()))
        .collect();
    let ty = ty.strip_prefix("qom-type=").unwrap_or(ty);
    o.insert("qom-type".into(), ty.to_string());
    Some(o)
}

/// Firecracker's guest RAM from its `--config-file` JSON: `machine-config.mem_size_mib` and
/// `huge_pages` (`"None"` or `"2M"`, Firecracker 1.7+).
pub fn firecracker_declared(config: &str) -> Vec<Declared> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(config) else {
        return Vec::new();
    };
    let m = &v["machine-config"];
    let Some(mib) = m["mem_size_mib"].as_u64() else {
        return Vec::new();
    };
    let huge = m["huge_pages"].as_str().filter(|h| *h != "None");
    vec![Declared {
        id: "guest-memory".into(),
        kind: BackendKind::Undeclared,
        size: mib << 20,
        hugetlb_page: huge.and_then(|h| h.parse::<Bytes>().ok()).map(|b| b.0),
        hugetlb: huge.is_some(),
        path: None,
        prealloc: false,
    }]
}

/// The guest-RAM backends a hypervisor's command line declares (empty when it declares none
/// that hugelab can read, e.g. Firecracker configured over its API socket).
pub fn declared(hv: Hypervisor, cmdline: &[String]) -> Vec<Declared> {
    let arg = |name: &str| {
        cmdline
            .iter()
            .position(|a| a == name)
            .and_then(|i| cmdline.get(i + 1))
    };
    match hv {
        Hypervisor::Qemu => {
            let mut out = Vec::new();
            let mut prealloc_all = cmdline.iter().any(|a| a == "-mem-prealloc");
            for (i, a) in cmdline.iter().enumerate() {
                let Some(v) = cmdline.get(i + 1) else { break };
                if a == "-overcommit" && v.contains("mem-lock=on") {
                    prealloc_all = true;
                }
                if a != "-object" {
                    continue;
                }
                let Some(o) = object_opts(v) else { continue };
                let kind = match o.get("qom-type").map(String::as_str) {
                    Some("memory-backend-ram") => BackendKind::Ram,
                    Some("memory-backend-memfd") => BackendKind::Memfd,
                    Some("memory-backend-file") => BackendKind::File,
                    _ => continue,
                };
                let get = |k: &str| o.get(k).map(String::as_str);
                let Some(size) = size_of(get("size").as_ref()) else {
                    continue;
                };
                out.push(Declared {
                    id: get("id").unwrap_or("").to_string(),
                    kind,
                    size,
                    hugetlb_page: size_of(get("hugetlbsize").as_ref()),
                    hugetlb: on(get("hugetlb").as_ref()),
                    path: get("mem-path").map(str::to_string),
                    prealloc: on(get("prealloc").as_ref()),
                });
            }
            for d in &mut out {
                d.prealloc |= prealloc_all;
            }
            if out.is_empty() {
                let size = arg("-m")
                    .and_then(|m| parse_memory(m).ok())
                    .unwrap_or(QEMU_DEFAULT_RAM);
                let path = arg("-mem-path").cloned();
                out.push(Declared {
                    id: "pc.ram".into(),
                    kind: if path.is_some() {
                        BackendKind::File
                    } else {
                        BackendKind::Ram
                    },
                    size,
                    hugetlb_page: None,
                    hugetlb: false,
                    path,
                    prealloc: prealloc_all,
                });
            }
            out
        }
        Hypervisor::CloudHypervisor => {
            let Some(m) = arg("--memory") else {
                return Vec::new();
            };
            let o = opts(m);
            let Some(size) = size_of(o.get("size")) else {
                return Vec::new();
            };
            vec![Declared {
                id: "memory".into(),
                kind: BackendKind::Undeclared,
                size,
                hugetlb_page: size_of(o.get("hugepage_size")),
                hugetlb: on(o.get("hugepages")),
                path: None,
                prealloc: on(o.get("prealloc")),
            }]
        }
        // Its size is in --config-file (see `firecracker_declared`) or came over its API socket.
        Hypervisor::Firecracker => Vec::new(),
    }
}
