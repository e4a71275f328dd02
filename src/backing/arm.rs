//! Arms for `run`: named page configurations (docs/run.md, "Arms"). System-wide keys
//! become allowlisted knob settings applied through the guard between trials; per-process keys
//! configure only the child (prctl before exec, GLIBC_TUNABLES, JAVA_TOOL_OPTIONS, a delayed
//! MADV_COLLAPSE, extra environment).

pub use crate::model::arm::spec::{Arm, Expect, Jvm, Malloc, ProcessConfig};

use super::qemu::{QemuBacking, QemuConfig};
use crate::control::Knob;
use crate::units::{Bytes, parse_duration};

/// Every arm key the parser accepts, as a literal so that `--help` texts can embed it.
#[macro_export]
macro_rules! arm_keys {
    () => {
        "thp, defrag, shmem, mthp.<size>, hugetlb.<size>, khugepaged.<knob> (max_ptes_none, max_ptes_swap, max_ptes_shared, pages_to_scan, scan_sleep_millisecs, alloc_sleep_millisecs, defrag), thp.shrink_underused, thp.use_zero_page, vm.defrag_mode, process.thp, malloc, jvm, jvm.pretouch, jvm.pagesize, collapse, sample, qemu.backing, qemu.prealloc, watch, server.arg, expect, tmpfs.huge, env.<NAME>"
    };
}

pub const ARM_KEYS: &str = arm_keys!();

fn one_of<'a>(key: &str, v: &str, choices: &[&'a str]) -> Result<&'a str, String> {
    choices.iter().find(|c| **c == v).copied().ok_or_else(|| {
        format!(
            "arm key {key}: invalid value {v:?}; valid: {}",
            choices.join(", ")
        )
    })
}

/// Parse `NAME=SPEC` where SPEC is comma-separated `key=value` items (an empty SPEC is the
/// machine as it is).
/// One value per key (`server.arg` adds a word each time): a second one would silently replace
/// the first.
fn given_once<'a>(
    seen: &mut std::collections::BTreeSet<&'a str>,
    key: &'a str,
    arm: &str,
    spec: &str,
) -> Result<(), String> {
    if key != "server.arg" && !seen.insert(key) {
        return Err(format!(
            "arm {arm}: key {key} is given twice in {spec:?}; give each key once"
        ));
    }
    Ok(())
}

pub fn parse_arm(s: &str) -> Result<Arm, String> {
    let (name, spec) = s.split_once('=').ok_or_else(|| {
        format!("arm {s:?}: expected NAME=SPEC, e.g. thp=thp=always or off=process.thp=off")
    })?;
    let name = arm_name(name)?;
    let mut arm = Arm {
        name: name.into(),
        spec: spec.into(),
        system: Vec::new(),
        process: ProcessConfig::default(),
        expect: None,
    };
    let mut prealloc_seen = None;
    let mut seen = std::collections::BTreeSet::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            format!("arm {name}: item {item:?} is not key=value; keys: {ARM_KEYS}")
        })?;
        given_once(&mut seen, k, name, spec)?;
        if let Some(setting) = system_item(name, k, v)? {
            arm.system.push(setting);
            continue;
        }
        match k {
            "expect" => {
                arm.expect = Some(Expect::parse(v).ok_or_else(|| {
                    format!(
                        "arm key expect: invalid value {v:?}; valid: {}",
                        Expect::NAMES
                    )
                })?)
            }
            _ => process_item(&mut arm.process, name, k, v, &mut prealloc_seen)?,
        }
    }
    if let Some(on) = prealloc_seen {
        let q = arm.process.qemu.as_mut().ok_or_else(|| {
            format!("arm {name}: qemu.prealloc needs qemu.backing (e.g. qemu.backing=thp,qemu.prealloc=on)")
        })?;
        q.prealloc = on;
    }
    Ok(arm)
}

/// A key that configures the arm's process (or its server, its VM, its files).
fn process_item(
    p: &mut ProcessConfig,
    name: &str,
    k: &str,
    v: &str,
    prealloc_seen: &mut Option<bool>,
) -> Result<(), String> {
    match k {
        "server.arg" => {
            if v.is_empty() {
                return Err("arm key server.arg: give one word for the server's command line, e.g. server.arg=-L (repeat the key for more words)".into());
            }
            p.server_args.push(v.to_string())
        }
        "process.thp" => {
            let off = one_of(k, v, &["off", "advised"])? == "off";
            p.thp_disable = off;
            p.thp_advised = !off;
        }
        "malloc" => {
            p.malloc = Some(match one_of(k, v, &["thp", "hugetlb", "hugetlb-1G"])? {
                "thp" => Malloc::Thp,
                "hugetlb" => Malloc::Hugetlb,
                _ => Malloc::Hugetlb1G,
            })
        }
        "jvm" => {
            p.jvm = Some(match one_of(k, v, &["off", "thp", "hugetlbfs"])? {
                "off" => Jvm::Off,
                "thp" => Jvm::Thp,
                _ => Jvm::Hugetlbfs,
            })
        }
        "jvm.pretouch" => p.jvm_pretouch = Some(one_of(k, v, &["on", "off"])? == "on"),
        "jvm.pagesize" => {
            p.jvm_pagesize = Some(if one_of(k, v, &["2M", "1G"])? == "2M" {
                2 << 20
            } else {
                1 << 30
            })
        }
        "sample" => {
            p.no_sample = one_of(k, v, &["on", "off"])? == "off";
        }
        "collapse" => {
            let d = v.strip_prefix("after:").ok_or_else(|| {
                format!(
                    "arm key collapse: use after:<duration>, e.g. collapse=after:2s (got {v:?})"
                )
            })?;
            p.collapse_after = Some(parse_duration(d)?);
        }
        "qemu.backing" => {
            let b = QemuBacking::parse(v).ok_or_else(|| {
                format!(
                    "arm key qemu.backing: invalid value {v:?}; valid: {}",
                    QemuBacking::NAMES.join(", ")
                )
            })?;
            p.qemu = Some(QemuConfig {
                backing: b,
                prealloc: false,
            });
            // QEMU madvises all guest RAM MADV_HUGEPAGE; 4 KiB needs THP off for it.
            p.thp_disable |= b == QemuBacking::FourK;
        }
        "qemu.prealloc" => {
            let on = one_of(k, v, &["on", "off"])? == "on";
            *prealloc_seen = Some(on);
        }
        "watch" => {
            if v.is_empty() {
                return Err("arm key watch: give a PID or a process name (comm), e.g. watch=qemu-system-x86".into());
            }
            p.watch = Some(v.to_string());
        }
        "tmpfs.huge" => {
            p.tmpfs_huge = Some(crate::backing::TmpfsHuge::parse(v).ok_or_else(|| {
                format!("arm {name}: tmpfs.huge={v:?}; valid: never, always, within_size, advise")
            })?);
        }
        _ if k.starts_with("env.") && k.len() > 4 => {
            p.env.push((k[4..].to_string(), v.to_string()))
        }
        _ => {
            return Err(format!(
                "arm {name}: unknown key {k:?}; valid keys: {ARM_KEYS}"
            ));
        }
    }
    Ok(())
}

/// An arm's name, checked: letters, digits, '-', '_', '.' or '+'.
fn arm_name(name: &str) -> Result<&str, String> {
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
    {
        return Err(format!(
            "arm name {name:?}: use letters, digits, '-', '_', '.' or '+'"
        ));
    }
    Ok(name)
}

/// A system-wide key of an arm (`thp`, `defrag`, `shmem`, `mthp.<size>`, `hugetlb.<size>`,
/// the khugepaged and THP knobs) as the setting it asks for; `None`: not a system-wide key.
fn system_item(name: &str, k: &str, v: &str) -> Result<Option<(Knob, String)>, String> {
    Ok(match k {
        "thp" => Some((
            Knob::ThpEnabled,
            one_of(k, v, &["always", "madvise", "never"])?.into(),
        )),
        "defrag" => Some((
            Knob::ThpDefrag,
            one_of(
                k,
                v,
                &["always", "defer", "defer+madvise", "madvise", "never"],
            )?
            .into(),
        )),
        "shmem" => Some((
            Knob::ThpShmemEnabled,
            one_of(
                k,
                v,
                &["always", "within_size", "advise", "never", "deny", "force"],
            )?
            .into(),
        )),
        _ if k.starts_with("mthp.") => {
            let size = k[5..].parse::<Bytes>().map_err(|e| e.to_string())?.0;
            Some((
                Knob::MthpEnabled { size },
                one_of(k, v, &["always", "inherit", "madvise", "never"])?.into(),
            ))
        }
        _ if k.starts_with("khugepaged.")
            || k == "thp.shrink_underused"
            || k == "thp.use_zero_page"
            || k == "vm.defrag_mode" =>
        {
            let knob: Knob = k
                .parse()
                .map_err(|_| format!("arm {name}: unknown key {k:?}; valid keys: {ARM_KEYS}"))?;
            knob.validate(v).map_err(|e| format!("arm {name}: {e}"))?;
            Some((knob, v.to_string()))
        }
        _ if k.starts_with("hugetlb.") => {
            let size = k[8..].parse::<Bytes>().map_err(|e| e.to_string())?.0;
            let n: u64 = v
                .parse()
                .map_err(|_| format!("arm key {k}: {v:?} is not a page count"))?;
            Some((Knob::HugetlbPages { size, node: None }, n.to_string()))
        }
        _ => None,
    })
}

pub const PRESETS: &str =
    "thp, thp-profiles, malloc, jvm (and with --server: postgres, redis, memcached, mariadb)";

/// `--preset`: thp (never / madvise / always), thp-profiles (those three with the defrag and
/// khugepaged settings deployments pair them with, and MongoDB 8.0's documented `always`
/// profile; where the kernel has `vm.defrag_mode` (6.15+), every arm names it and one more arm
/// sets it to 1), malloc (process.thp=off / malloc=thp / malloc=hugetlb), jvm (jvm=off /
/// jvm=thp / jvm=hugetlbfs).
pub fn preset(name: &str, defrag_mode: bool) -> Result<Vec<Arm>, String> {
    let specs: &[&str] = match name {
        "thp" => &[
            "never=thp=never",
            "madvise=thp=madvise",
            "always=thp=always",
        ],
        // Every arm names the defrag and max_ptes_none it runs under, so that the arms differ
        // only where their names do (the kernel's defaults: defrag madvise, max_ptes_none 511).
        "thp-profiles" => &[
            "never=thp=never,defrag=madvise,khugepaged.max_ptes_none=511",
            "madvise=thp=madvise,defrag=madvise,khugepaged.max_ptes_none=511",
            "always=thp=always,defrag=madvise,khugepaged.max_ptes_none=511",
            // A value distributions ship: khugepaged collapses a range with up to 409 of its 512
            // pages untouched, and the underused shrinker splits THPs with more zero pages.
            "always+ptes_none409=thp=always,defrag=madvise,khugepaged.max_ptes_none=409",
            "always+defer+madvise+ptes_none0=thp=always,defrag=defer+madvise,khugepaged.max_ptes_none=0",
        ],
        "malloc" => &[
            "off=process.thp=off",
            "thp=malloc=thp",
            "hugetlb=malloc=hugetlb",
        ],
        "jvm" => &["off=jvm=off", "thp=jvm=thp", "hugetlbfs=jvm=hugetlbfs"],
        _ => return Err(format!("unknown preset {name:?}; valid presets: {PRESETS}")),
    };
    let mut specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    if name == "thp-profiles" && defrag_mode {
        // kswapd and kcompactd in whole 2 MiB pageblocks, beside the kernel's default.
        specs
            .iter_mut()
            .for_each(|s| s.push_str(",vm.defrag_mode=0"));
        specs.push(
            "always+defrag_mode=thp=always,defrag=madvise,khugepaged.max_ptes_none=511,vm.defrag_mode=1"
                .into(),
        );
    }
    specs.iter().map(|s| parse_arm(s)).collect()
}

#[cfg(test)]
mod tests;
