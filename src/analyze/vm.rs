//! Virtual machines seen from the host: which mappings of a QEMU, Firecracker or
//! cloud-hypervisor process are guest RAM, on which page sizes they are resident and, when not
//! on huge pages, the reason the evidence supports; and the host configuration (libvirt XML,
//! QEMU options, kernel command line) that backs a VM with a chosen page size.
//! Pure functions over the process's command line, its smaps mappings and the pool state.

use super::experiment::ExperimentReport;
use super::verdict::Verdict;
use crate::backing::qemu::{QemuBacking, parse_memory};
use crate::probe::process::Mapping;
use crate::units::Bytes;
use std::collections::BTreeMap;

/// QEMU's guest RAM when the command line gives no `-m`.
pub const QEMU_DEFAULT_RAM: u64 = 128 << 20;
/// Without a declared size, anonymous/shared/hugetlb mappings at least this large are guest RAM.
pub const UNDECLARED_MIN: u64 = 64 << 20;
/// The id prefix of guest RAM found by size rather than declared.
const FOUND: &str = "found-";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hypervisor {
    Qemu,
    Firecracker,
    CloudHypervisor,
}

impl Hypervisor {
    pub fn name(self) -> &'static str {
        match self {
            Hypervisor::Qemu => "QEMU",
            Hypervisor::Firecracker => "Firecracker",
            Hypervisor::CloudHypervisor => "cloud-hypervisor",
        }
    }
}

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Anonymous private memory (QEMU's default RAM, memory-backend-ram).
    Ram,
    /// memory-backend-memfd (shmem, or hugetlb with hugetlb=on).
    Memfd,
    /// memory-backend-file or `-mem-path`: a file, usually on hugetlbfs.
    File,
    /// Guest RAM found by size (the command line does not declare it).
    Undeclared,
}

/// One guest-RAM backend as the command line declares it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Declared {
    pub id: String,
    pub kind: BackendKind,
    pub size: u64,
    /// hugetlbsize= (memfd) or hugepage_size= (cloud-hypervisor).
    pub hugetlb_page: Option<u64>,
    /// memfd hugetlb=on / cloud-hypervisor hugepages=on.
    pub hugetlb: bool,
    pub path: Option<String>,
    pub prealloc: bool,
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

/// Resident bytes of one mapping by page size, and the reasons it is not on huge pages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub resident: u64,
    pub pages: Vec<PageShare>,
    pub reasons: Vec<String>,
}

/// Bytes resident on one page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageShare {
    pub page_size: u64,
    /// hugetlb pages (rather than THP/mTHP folios of the same size).
    pub hugetlb: bool,
    pub bytes: u64,
}

impl PageShare {
    pub fn label(&self) -> String {
        let (n, unit) = match self.page_size {
            s if s >= 1 << 30 => (s >> 30, "GiB"),
            s if s >= 1 << 20 => (s >> 20, "MiB"),
            s => (s >> 10, "KiB"),
        };
        let kind = match (self.hugetlb, self.page_size) {
            (true, _) => " hugetlb",
            (false, 4096) => "",
            (false, s) if s == 2 << 20 => " THP",
            _ => " mTHP",
        };
        format!("{n} {unit}{kind}")
    }
}

/// Which mapping (index into `maps`) holds each declared backend; for undeclared guest RAM, the
/// large anonymous, shared or hugetlb mappings.
pub fn locate(decl: &[Declared], maps: &[Mapping]) -> Vec<(Declared, Option<usize>)> {
    let mut used = vec![false; maps.len()];
    let fits = |d: &Declared, m: &Mapping| {
        let p = m.path.as_str();
        let kind_ok = match d.kind {
            BackendKind::Ram => p.is_empty() && m.perms.starts_with("rw"),
            BackendKind::Memfd => p.starts_with("/memfd:"),
            BackendKind::File => d.path.as_deref().is_some_and(|dir| p.starts_with(dir)),
            BackendKind::Undeclared => {
                (p.is_empty() || p.starts_with("/memfd:") || m.has_flag("ht"))
                    && m.perms.starts_with("rw")
            }
        };
        // QEMU maps a backend exactly; allow the alignment slack other VMMs add.
        kind_ok && m.size() >= d.size && m.size() <= d.size + (4 << 20)
    };
    let mut out = Vec::new();
    for d in decl {
        let i = (0..maps.len()).find(|&i| !used[i] && fits(d, &maps[i]));
        if let Some(i) = i {
            used[i] = true;
        }
        out.push((d.clone(), i));
    }
    if decl.is_empty() {
        for (i, m) in maps.iter().enumerate() {
            let p = m.path.as_str();
            if m.size() >= UNDECLARED_MIN
                && m.perms.starts_with("rw")
                && (p.is_empty() || p.starts_with("/memfd:") || m.has_flag("ht"))
            {
                out.push((
                    Declared {
                        id: format!("{FOUND}{:x}", m.start),
                        kind: BackendKind::Undeclared,
                        size: m.size(),
                        hugetlb_page: None,
                        hugetlb: m.has_flag("ht"),
                        path: (!p.is_empty()).then(|| p.to_string()),
                        prealloc: false,
                    },
                    Some(i),
                ));
            }
        }
    }
    out
}

/// One backend of a VM's guest RAM as found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuestBackend {
    #[serde(flatten)]
    pub declared: Declared,
    /// The mapping holding it, when found.
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub resident: u64,
    pub pages: Vec<PageShare>,
}

/// A VM's guest RAM: how much is resident, on which page sizes, and why not huge.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuestRam {
    pub hypervisor: Hypervisor,
    /// Declared guest RAM (or, when undeclared, the size of the mappings found).
    pub size: u64,
    pub declared: bool,
    pub backends: Vec<GuestBackend>,
    pub resident: u64,
    /// Resident bytes by page size, largest page first.
    pub pages: Vec<PageShare>,
    /// Share of the guest RAM resident on pages larger than 4 KiB.
    pub huge_share: f64,
    /// "guest RAM 3G: 100% on 1 GiB hugetlb pages".
    pub summary: String,
    pub reasons: Vec<String>,
}

fn merge(into: &mut Vec<PageShare>, from: &[PageShare]) {
    for p in from {
        match into
            .iter_mut()
            .find(|q| q.page_size == p.page_size && q.hugetlb == p.hugetlb)
        {
            Some(q) => q.bytes += p.bytes,
            None => into.push(*p),
        }
    }
    into.retain(|p| p.bytes > 0);
    into.sort_by(|a, b| {
        b.page_size
            .cmp(&a.page_size)
            .then(b.hugetlb.cmp(&a.hugetlb))
    });
}

/// The guest RAM of one VM. `regions[i]` describes `maps[i]`; `pool_free` is free bytes per
/// hugetlb page size (HugePages_Free).
pub fn guest_ram(
    hv: Hypervisor,
    located: Vec<(Declared, Option<usize>)>,
    regions: &[Region],
    pool_free: &BTreeMap<u64, u64>,
) -> GuestRam {
    let declared = located.iter().any(|(d, _)| !d.id.starts_with(FOUND));
    let mut reasons: Vec<String> = Vec::new();
    let mut add = |r: String| {
        if !reasons.contains(&r) {
            reasons.push(r);
        }
    };
    let mut backends = Vec::new();
    let mut pages = Vec::new();
    for (d, i) in located {
        let r = i.and_then(|i| regions.get(i));
        let (resident, p) = r.map_or((0, Vec::new()), |r| (r.resident, r.pages.clone()));
        merge(&mut pages, &p);
        match r {
            None => add(format!(
                "backend {} ({}): no mapping of that size in the process (not yet allocated?)",
                d.id,
                Bytes(d.size)
            )),
            Some(r) => {
                let untouched = d.size.saturating_sub(resident);
                if untouched > d.size / 100 {
                    add(if d.prealloc {
                        format!(
                            "{} of backend {} is not resident although prealloc was requested (still being preallocated: zeroing huge pages takes seconds per GiB, or reclaimed since)",
                            Bytes(untouched),
                            d.id
                        )
                    } else {
                        format!(
                            "{} of guest RAM not yet touched: no preallocation (prealloc=on, -mem-prealloc or libvirt <allocation mode='immediate'/> faults it in at start), and the guest has not used it",
                            Bytes(untouched)
                        )
                    });
                }
                let huge_page = p.iter().find(|s| s.hugetlb).map(|s| s.page_size);
                if let Some(ps) = huge_page.or(d.hugetlb_page.filter(|_| d.hugetlb)) {
                    let free = pool_free.get(&ps).copied().unwrap_or(0);
                    if untouched > free && !d.prealloc {
                        add(format!(
                            "hugetlb pool short: {} not yet touched and {} free in the {} pool; if the mapping is unreserved (reserve=off) the guest gets SIGBUS when it touches the rest",
                            Bytes(untouched),
                            Bytes(free),
                            Bytes(ps)
                        ));
                    }
                }
                for why in &r.reasons {
                    add(why.clone());
                }
            }
        }
        backends.push(GuestBackend {
            start: r.map(|r| r.start),
            end: r.map(|r| r.end),
            resident,
            pages: p,
            declared: d,
        });
    }
    let size: u64 = backends.iter().map(|b| b.declared.size).sum();
    let resident: u64 = backends.iter().map(|b| b.resident).sum();
    let huge: u64 = pages
        .iter()
        .filter(|p| p.page_size > 4096)
        .map(|p| p.bytes)
        .sum();
    let shares: Vec<String> = pages
        .iter()
        .map(|p| {
            format!(
                "{:.0}% on {} pages",
                100.0 * p.bytes as f64 / resident.max(1) as f64,
                p.label()
            )
        })
        .collect();
    let head = if resident + size / 100 >= size {
        format!("guest RAM {}", Bytes(size))
    } else {
        format!("guest RAM {} ({} resident)", Bytes(size), Bytes(resident))
    };
    let summary = if resident == 0 {
        format!("{head}: nothing resident yet")
    } else {
        format!("{head}: {}", shares.join(", "))
    };
    GuestRam {
        hypervisor: hv,
        size,
        declared,
        backends,
        resident,
        huge_share: huge as f64 / size.max(1) as f64,
        pages,
        summary,
        reasons,
    }
}

/// Host configuration that backs a VM of `size` bytes with `backing`, on `nodes` NUMA nodes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostAdvice {
    pub backing: QemuBacking,
    pub size: u64,
    /// hugetlb pages the VM needs (per node when the guest RAM is split across nodes).
    pub pages: Option<u64>,
    pub libvirt: String,
    pub qemu: String,
    /// Kernel command line for a boot-time pool (1 GiB pages are only reliable at boot).
    pub kernel_cmdline: Option<String>,
    /// Commands that size the pool at run time.
    pub runtime: Vec<String>,
    pub notes: Vec<String>,
}

/// The libvirt, QEMU and host-kernel settings for `backing`; `nodes` ≥ 1.
pub fn host_advice(backing: QemuBacking, size: u64, nodes: usize, vms: u64) -> HostAdvice {
    let nodes = nodes.max(1);
    let gib = Bytes(size);
    let mut notes = Vec::new();
    let (libvirt, qemu, pages, cmdline, runtime) = match backing.hugetlb_page() {
        Some(ps) => {
            let per_vm = size.div_ceil(ps);
            let total = per_vm * vms.max(1);
            let (unit, n) = if ps == 1 << 30 { ("G", 1) } else { ("M", 2) };
            let kb = ps / 1024;
            let libvirt = format!(
                "<memoryBacking>\n  <hugepages>\n    <page size='{n}' unit='{unit}'/>\n  </hugepages>\n  <allocation mode='immediate'/>\n</memoryBacking>"
            );
            let qemu = format!(
                "-m {gib} -object memory-backend-memfd,id=ram,size={gib},hugetlb=on,hugetlbsize={},prealloc=on -machine memory-backend=ram",
                Bytes(ps)
            );
            let per_node = total.div_ceil(nodes as u64);
            let cmdline = if nodes == 1 {
                format!("hugepagesz={} hugepages={total}", Bytes(ps))
            } else {
                let list: Vec<String> = (0..nodes).map(|n| format!("{n}:{per_node}")).collect();
                format!("hugepagesz={} hugepages={}", Bytes(ps), list.join(","))
            };
            let runtime = if nodes == 1 {
                vec![format!(
                    "echo {total} > /sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"
                )]
            } else {
                (0..nodes)
                    .map(|n| format!("echo {per_node} > /sys/devices/system/node/node{n}/hugepages/hugepages-{kb}kB/nr_hugepages"))
                    .collect()
            };
            if ps == 1 << 30 {
                notes.push("1 GiB pages need 1 GiB of contiguous free memory each: reserve them on the kernel command line, at run time they succeed only on a freshly booted or well-compacted host".into());
            }
            if nodes > 1 {
                notes.push(format!(
                    "{nodes} NUMA nodes: the pool is split evenly; pin each VM's memory to a node (libvirt <numatune><memory mode='strict' nodeset='N'/></numatune>) and size that node's pool for it"
                ));
            }
            notes.push(format!(
                "the pool ({total} × {}) is taken from the host at once and is not available to anything else, used or not",
                Bytes(ps)
            ));
            (libvirt, qemu, Some(total), Some(cmdline), runtime)
        }
        None if backing == QemuBacking::Thp => (
            "<memoryBacking>\n  <source type='anonymous'/>\n  <allocation mode='immediate'/>\n</memoryBacking>".into(),
            format!("-m {gib} -object memory-backend-ram,id=ram,size={gib},prealloc=on -machine memory-backend=ram"),
            None,
            Some("transparent_hugepage=madvise".into()),
            vec!["echo madvise > /sys/kernel/mm/transparent_hugepage/enabled".into()],
        ),
        None => {
            notes.push("4 KiB guest RAM needs THP off for QEMU only (it madvises guest RAM MADV_HUGEPAGE): start it with THP disabled (prctl PR_SET_THP_DISABLE, e.g. systemd's MemoryTHP=… or a wrapper), or run the host with THP never".into());
            (
                "<memoryBacking>\n  <source type='anonymous'/>\n</memoryBacking>".into(),
                format!("-m {gib} -object memory-backend-ram,id=ram,size={gib} -machine memory-backend=ram"),
                None,
                Some("transparent_hugepage=never".into()),
                Vec::new(),
            )
        }
    };
    HostAdvice {
        backing,
        size,
        pages,
        libvirt,
        qemu,
        kernel_cmdline: cmdline,
        runtime,
        notes,
    }
}

/// Host advice for the backing a run measured best.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VmAdvice {
    /// The arm measured better than the baseline, if one was.
    pub arm: Option<String>,
    /// Its measured effect, or that no arm was measurably better.
    pub because: String,
    pub advice: Option<HostAdvice>,
}

/// The backing to recommend from a run's report: the arm with the largest improvement over the
/// baseline on the primary metric among those whose interval says better (FASTER) and whose
/// trials were never flagged. Without one, no configuration is advised (keeping the baseline is
/// not a measured improvement). `backings[i]` is arm i's QEMU backing.
pub fn advise(
    report: &ExperimentReport,
    backings: &[Option<QemuBacking>],
    guest: u64,
    nodes: usize,
) -> Option<VmAdvice> {
    let primary = report.primary()?;
    let names: Vec<&str> = primary.arms.iter().map(|a| a.arm.as_str()).collect();
    let flagged = |n: &str| report.evidence.iter().any(|e| e.arm == n && e.flagged > 0);
    let best = primary
        .contrasts
        .iter()
        .filter_map(|(n, c)| c.as_ref().map(|c| (n, c)))
        .filter(|(n, c)| c.verdict == Verdict::Faster && !flagged(n))
        .max_by(|a, b| a.1.percent.point.abs().total_cmp(&b.1.percent.point.abs()));
    let Some((arm, c)) = best else {
        return Some(VmAdvice {
            arm: None,
            because: format!(
                "no backing was measurably better than the baseline {} on {} (more blocks narrow the intervals)",
                report.baseline, primary.metric.name
            ),
            advice: None,
        });
    };
    let because = format!(
        "{arm} was better than {} on {}: {:+.1}% [{}, {}] ({} blocks)",
        report.baseline,
        primary.metric.name,
        c.percent.point,
        c.percent.lo.map_or("-".into(), |v| format!("{v:+.1}")),
        c.percent.hi.map_or("-".into(), |v| format!("{v:+.1}")),
        c.blocks
    );
    let i = names.iter().position(|n| *n == arm)?;
    let backing = (*backings.get(i)?)?;
    Some(VmAdvice {
        arm: Some(arm.clone()),
        because,
        advice: Some(host_advice(backing, guest, nodes, 1)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::process::parse_smaps;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// smaps of QEMU 7.2 guest RAM captured on this machine (paused, prealloc=on).
    const MEMFD_2M: &str =
        "7f3c40000000-7f3c60000000 rw-s 00000000 00:01 2064 /memfd:memory-backend-memfd (deleted)
Size:             524288 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
AnonHugePages:         0 kB
Private_Hugetlb:  524288 kB
Shared_Hugetlb:        0 kB
VmFlags: rd wr sh mr mw me ms dc de ht hg
7f3c60000000-7f3c80000000 rw-p 00000000 00:00 0
Size:             524288 kB
KernelPageSize:        4 kB
Rss:                1024 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
";

    #[test]
    fn libvirt_json_objects_and_firecracker_configs() {
        let d = declared(
            Hypervisor::Qemu,
            &[
                "/usr/bin/qemu-system-x86_64".to_string(),
                "-m".into(),
                "size=4194304k".into(),
                "-object".into(),
                r#"{"qom-type":"memory-backend-file","id":"pc.ram","mem-path":"/dev/hugepages/libvirt/qemu/1-vm","x-use-canonical-path-for-ramblock-id":false,"prealloc":true,"size":4294967296}"#.into(),
            ],
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].id.as_str(), d[0].kind, d[0].size, d[0].prealloc),
            ("pc.ram", BackendKind::File, 4 << 30, true)
        );
        assert_eq!(
            d[0].path.as_deref(),
            Some("/dev/hugepages/libvirt/qemu/1-vm")
        );
        let f = firecracker_declared(
            r#"{"boot-source":{},"machine-config":{"vcpu_count":2,"mem_size_mib":1024,"huge_pages":"2M"}}"#,
        );
        assert_eq!(
            (f[0].size, f[0].hugetlb, f[0].hugetlb_page),
            (1 << 30, true, Some(2 << 20))
        );
        let f = firecracker_declared(r#"{"machine-config":{"mem_size_mib":512}}"#);
        assert_eq!((f[0].size, f[0].hugetlb), (512 << 20, false));
        assert!(firecracker_declared("not json").is_empty());
    }

    #[test]
    fn recognises_hypervisors() {
        assert_eq!(hypervisor("qemu-system-x86", &[]), Some(Hypervisor::Qemu));
        assert_eq!(
            hypervisor("CPU 0/KVM", &args("/usr/bin/qemu-system-aarch64 -m 1G")),
            Some(Hypervisor::Qemu)
        );
        assert_eq!(
            hypervisor("firecracker", &[]),
            Some(Hypervisor::Firecracker)
        );
        assert_eq!(
            hypervisor("cloud-hyperviso", &[]),
            Some(Hypervisor::CloudHypervisor)
        );
        assert_eq!(hypervisor("bash", &args("bash")), None);
    }

    #[test]
    fn qemu_declarations() {
        let d = declared(
            Hypervisor::Qemu,
            &args(
                "qemu-system-x86_64 -m 4G -object memory-backend-memfd,id=m0,size=4G,hugetlb=on,hugetlbsize=1G,prealloc=on -machine memory-backend=m0",
            ),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            (
                d[0].kind,
                d[0].size,
                d[0].hugetlb,
                d[0].hugetlb_page,
                d[0].prealloc
            ),
            (BackendKind::Memfd, 4 << 30, true, Some(1 << 30), true)
        );
        let d = declared(
            Hypervisor::Qemu,
            &args("qemu-system-x86_64 -m 2048 -mem-path /dev/hugepages -mem-prealloc"),
        );
        assert_eq!(
            (d[0].kind, d[0].size, d[0].path.as_deref(), d[0].prealloc),
            (BackendKind::File, 2 << 30, Some("/dev/hugepages"), true)
        );
        let d = declared(Hypervisor::Qemu, &args("qemu-system-x86_64 -S"));
        assert_eq!((d[0].kind, d[0].size), (BackendKind::Ram, QEMU_DEFAULT_RAM));
        // Two NUMA nodes, two backends.
        let d = declared(
            Hypervisor::Qemu,
            &args(
                "qemu-system-x86_64 -m 2G -object memory-backend-ram,id=n0,size=1G -object memory-backend-file,id=n1,size=1G,mem-path=/hp -numa node,memdev=n0 -numa node,memdev=n1",
            ),
        );
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].path.as_deref(), Some("/hp"));
        let d = declared(
            Hypervisor::CloudHypervisor,
            &args("cloud-hypervisor --memory size=1G,hugepages=on,hugepage_size=2M"),
        );
        assert_eq!((d[0].size, d[0].hugetlb_page), (1 << 30, Some(2 << 20)));
        assert!(declared(Hypervisor::Firecracker, &args("firecracker --api-sock /s")).is_empty());
    }

    fn region(m: &Mapping, pages: &[(u64, bool, u64)], reasons: &[&str]) -> Region {
        Region {
            start: m.start,
            end: m.end,
            resident: pages.iter().map(|p| p.2).sum(),
            pages: pages
                .iter()
                .map(|&(page_size, hugetlb, bytes)| PageShare {
                    page_size,
                    hugetlb,
                    bytes,
                })
                .collect(),
            reasons: reasons.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn finds_the_memfd_and_reports_it_fully_huge() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let cmd = args(
            "qemu-system-x86_64 -m 512M -object memory-backend-memfd,id=m0,size=512M,hugetlb=on,hugetlbsize=2M,prealloc=on -machine memory-backend=m0",
        );
        let loc = locate(&declared(Hypervisor::Qemu, &cmd), &maps);
        assert_eq!(
            loc[0].1,
            Some(0),
            "the memfd, not the anonymous mapping of the same size"
        );
        let regions = vec![
            region(&maps[0], &[(2 << 20, true, 512 << 20)], &[]),
            region(&maps[1], &[(4096, false, 1 << 20)], &[]),
        ];
        let g = guest_ram(Hypervisor::Qemu, loc, &regions, &BTreeMap::new());
        assert_eq!(g.summary, "guest RAM 512M: 100% on 2 MiB hugetlb pages");
        assert!(g.reasons.is_empty(), "{:?}", g.reasons);
        assert_eq!(g.huge_share, 1.0);
    }

    #[test]
    fn explains_partial_and_untouched_guest_ram() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let cmd = args("qemu-system-x86_64 -m 512M");
        let loc = locate(&declared(Hypervisor::Qemu, &cmd), &maps);
        assert_eq!(
            loc[0].1,
            Some(1),
            "QEMU's default RAM is the anonymous mapping"
        );
        let regions = vec![
            Region::default(),
            region(
                &maps[1],
                &[(2 << 20, false, 192 << 20), (4096, false, 64 << 20)],
                &["THP mode is `madvise` and this range has no MADV_HUGEPAGE (VmFlags lacks hg)"],
            ),
        ];
        let g = guest_ram(Hypervisor::Qemu, loc, &regions, &BTreeMap::new());
        assert_eq!(
            g.summary,
            "guest RAM 512M (256M resident): 75% on 2 MiB THP pages, 25% on 4 KiB pages"
        );
        assert!(
            g.reasons[0].starts_with("256M of guest RAM not yet touched"),
            "{:?}",
            g.reasons
        );
        assert!(g.reasons[1].contains("MADV_HUGEPAGE"));
        assert!((g.huge_share - 0.375).abs() < 1e-9);
    }

    #[test]
    fn a_short_pool_and_a_missing_mapping_are_named() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let d = vec![Declared {
            id: "m0".into(),
            kind: BackendKind::Memfd,
            size: 512 << 20,
            hugetlb_page: Some(2 << 20),
            hugetlb: true,
            path: None,
            prealloc: false,
        }];
        let regions = vec![region(&maps[0], &[(2 << 20, true, 128 << 20)], &[])];
        let free = BTreeMap::from([(2u64 << 20, 64u64 << 20)]);
        let g = guest_ram(Hypervisor::Qemu, locate(&d, &maps), &regions, &free);
        assert!(
            g.reasons
                .iter()
                .any(|r| r.starts_with("hugetlb pool short: 384M not yet touched and 64M free")),
            "{:?}",
            g.reasons
        );
        let mut big = d.clone();
        big[0].size = 8 << 30;
        let g = guest_ram(Hypervisor::Qemu, locate(&big, &maps), &regions, &free);
        assert!(
            g.reasons[0].contains("no mapping of that size"),
            "{:?}",
            g.reasons
        );
        assert_eq!(
            g.summary,
            "guest RAM 8G (0B resident): nothing resident yet"
        );
    }

    #[test]
    fn page_labels() {
        let l = |page_size, hugetlb| {
            PageShare {
                page_size,
                hugetlb,
                bytes: 0,
            }
            .label()
        };
        assert_eq!(l(4096, false), "4 KiB");
        assert_eq!(l(64 << 10, false), "64 KiB mTHP");
        assert_eq!(l(2 << 20, false), "2 MiB THP");
        assert_eq!(l(2 << 20, true), "2 MiB hugetlb");
        assert_eq!(l(1 << 30, true), "1 GiB hugetlb");
    }

    #[test]
    fn undeclared_guest_ram_is_found_by_size() {
        let maps = parse_smaps(MEMFD_2M).unwrap();
        let loc = locate(&[], &maps);
        assert_eq!(loc.len(), 2);
        assert!(loc.iter().all(|(d, _)| d.kind == BackendKind::Undeclared));
        let g = guest_ram(Hypervisor::Firecracker, loc, &[], &BTreeMap::new());
        assert!(!g.declared, "found by size");
        let fc = firecracker_declared(r#"{"machine-config":{"mem_size_mib":512}}"#);
        let g = guest_ram(
            Hypervisor::Firecracker,
            locate(&fc, &maps),
            &[],
            &BTreeMap::new(),
        );
        assert!(g.declared, "from its config file");
    }

    #[test]
    fn advice_follows_the_measured_winner_only() {
        use crate::analyze::experiment::{MetricDef, TrialData, analyse};
        use crate::analyze::verdict::{Better, Design};
        let arms: Vec<String> = ["4k", "thp", "h1g"].map(String::from).to_vec();
        // thp a clear 30% faster than 4k in every block, h1g the same as 4k (± noise).
        let mut trials = Vec::new();
        for b in 0..12 {
            let noise = 1.0 + 0.01 * ((b * 7 % 5) as f64 - 2.0);
            for (arm, t) in [(0, 1.0), (1, 0.7 * noise), (2, noise)] {
                trials.push(TrialData {
                    block: b,
                    arm,
                    ok: true,
                    flagged: None,
                    metrics: BTreeMap::from([("wall_s".to_string(), t)]),
                    coverage_at_peak: None,
                    counters: BTreeMap::new(),
                    noise: BTreeMap::new(),
                });
            }
        }
        let defs = [MetricDef {
            name: "wall_s".into(),
            better: Better::Lower,
        }];
        let backings = [
            Some(QemuBacking::FourK),
            Some(QemuBacking::Thp),
            Some(QemuBacking::Hugetlb1G),
        ];
        let r = analyse(&arms, 0, &trials, &defs, 0.01, 0.99, &Design::Fixed);
        let a = advise(&r, &backings, 4 << 30, 1).unwrap();
        assert_eq!(a.arm.as_deref(), Some("thp"));
        assert!(
            a.because
                .starts_with("thp was better than 4k on wall_s: -30.0%"),
            "{}",
            a.because
        );
        assert_eq!(a.advice.unwrap().backing, QemuBacking::Thp);
        // Only two blocks: nothing is measurably better, nothing is advised.
        trials.retain(|t| t.block < 2);
        let r = analyse(&arms, 0, &trials, &defs, 0.01, 0.99, &Design::Fixed);
        let a = advise(&r, &backings, 4 << 30, 1).unwrap();
        assert!(a.arm.is_none() && a.advice.is_none());
        assert!(
            a.because
                .starts_with("no backing was measurably better than the baseline 4k")
        );
    }

    #[test]
    fn advice_for_each_backing() {
        let a = host_advice(QemuBacking::Hugetlb1G, 4 << 30, 1, 2);
        assert_eq!(a.pages, Some(8));
        assert!(a.libvirt.contains("<page size='1' unit='G'/>"));
        assert!(a.qemu.contains("hugetlbsize=1G,prealloc=on"));
        assert_eq!(
            a.kernel_cmdline.as_deref(),
            Some("hugepagesz=1G hugepages=8")
        );
        assert_eq!(
            a.runtime,
            vec!["echo 8 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"]
        );
        let a = host_advice(QemuBacking::Hugetlb2M, 3 << 30, 2, 1);
        assert_eq!(a.pages, Some(1536));
        assert_eq!(
            a.kernel_cmdline.as_deref(),
            Some("hugepagesz=2M hugepages=0:768,1:768")
        );
        assert!(a.runtime[1].contains("node1/hugepages/hugepages-2048kB"));
        assert!(a.notes.iter().any(|n| n.contains("NUMA")));
        let a = host_advice(QemuBacking::Thp, 1 << 30, 1, 1);
        assert!(a.pages.is_none() && a.libvirt.contains("anonymous"));
        assert!(
            host_advice(QemuBacking::FourK, 1 << 30, 1, 1).notes[0].contains("PR_SET_THP_DISABLE")
        );
    }
}
