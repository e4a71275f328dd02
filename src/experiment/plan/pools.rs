//! A run's hugetlb pools and knobs, planned before anything runs: the sizes an arm names must
//! exist on this kernel and fit in memory, and the pools a VM, a JVM heap or a service's shared
//! memory needs are grown by what is missing (through the guard, restored afterwards).

use super::RunArgs;
use crate::backing::arm::Arm;
use crate::control::Knob;
use crate::error::UsageError;
use crate::probe::hugetlb::Pool;
use crate::units::Bytes;

/// The pool size (total pages) that leaves `need` pages available, or `None` when the pool
/// already has them free: grown by what is missing, never shrunk under other users' pages.
fn pool_target(pool: &Pool, need: u64) -> Option<u64> {
    let have = pool.available();
    (have < need).then(|| pool.total + need - have)
}

/// `-Xmx` of a JVM command line, bytes (the last one wins, as in the JVM).
pub fn java_max_heap(words: &[String]) -> Option<u64> {
    words
        .iter()
        .flat_map(|w| w.split_whitespace())
        .filter_map(|w| w.strip_prefix("-Xmx"))
        .filter_map(|v| v.parse::<Bytes>().ok())
        .map(|b| b.0)
        .next_back()
}

/// Whether the command is a JMH launcher that forks the measured JVM: `org.openjdk.jmh.Main`
/// named, or `-jar` with the `jmh` load format; not with `-f 0` (JMH then measures in the
/// launcher itself). A forked JVM inherits the launcher's `JAVA_TOOL_OPTIONS`, so both would
/// reserve a large-page heap from a pool sized for one, and the measured fork falls back.
pub fn jmh_forks(words: &[String], jmh_metric: bool) -> bool {
    let named = words.iter().any(|w| w.contains("org.openjdk.jmh.Main"));
    let jar = jmh_metric && words.iter().any(|w| w == "-jar");
    let no_fork = words
        .windows(2)
        .any(|p| (p[0] == "-f" || p[0] == "-forks") && p[1] == "0")
        || words.iter().any(|w| w == "-f0" || w == "-f=0");
    (named || jar) && !no_fork
}

/// Give each `jvm=hugetlbfs` arm without a pool of its own a pool for its heap: `-Xmx` in
/// pages of `jvm.pagesize` (2M by default), plus a sixteenth and 128 pages for the code cache
/// and the rest the JVM maps with large pages. Without it, HotSpot prints "UseLargePages
/// disabled, no large pages configured" and runs on 4 KiB pages.
pub fn size_jvm_pools(
    arms: &mut [Arm],
    words: &[String],
    pools: &[Pool],
    privileged: bool,
) -> Result<(), UsageError> {
    for arm in arms.iter_mut() {
        if arm.process.jvm != Some(crate::backing::arm::Jvm::Hugetlbfs)
            || arm
                .system
                .iter()
                .any(|(k, _)| matches!(k, Knob::HugetlbPages { .. }))
        {
            continue;
        }
        let Some(heap) = java_max_heap(words) else {
            continue; // no -Xmx: the heap size is the JVM's choice; the arm says what it got
        };
        let ps = arm.process.jvm_pagesize.unwrap_or(2 << 20);
        let pages = heap.div_ceil(ps);
        let need = pages + pages / 16 + (256u64 << 20).div_ceil(ps);
        let Some(pool) = pools.iter().find(|p| p.page_size == ps) else {
            return Err(UsageError(format!(
                "arm {}: this kernel has no {} hugetlb pool for the JVM heap",
                arm.name,
                Bytes(ps)
            )));
        };
        let Some(target) = pool_target(pool, need) else {
            continue;
        };
        if !privileged {
            return Err(UsageError(format!(
                "arm {}: the JVM heap (-Xmx {}) needs {need} free {} hugetlb pages and the pool has {}; run as root (run grows the pool and restores it) or: echo {target} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
                arm.name,
                Bytes(heap),
                Bytes(ps),
                pool.available(),
                ps / 1024
            )));
        }
        arm.system.push((
            Knob::HugetlbPages {
                size: ps,
                node: None,
            },
            target.to_string(),
        ));
    }
    Ok(())
}

/// A hugetlb pool an arm asks for must fit in the machine's memory (`MemTotal`).
pub fn check_pools_fit(arms: &[Arm], mem_total: u64) -> Result<(), UsageError> {
    for arm in arms {
        for (k, v) in &arm.system {
            if let Knob::HugetlbPages { size, .. } = k
                && let Ok(n) = v.parse::<u64>()
                && n.checked_mul(*size).is_none_or(|b| b > mem_total)
            {
                return Err(UsageError(format!(
                    "arm {}: hugetlb.{}={n} is {} pages of {} — more than this machine's memory (MemTotal {}); give at most {}",
                    arm.name,
                    Bytes(*size),
                    n,
                    Bytes(*size),
                    Bytes(mem_total),
                    mem_total / size
                )));
            }
        }
    }
    Ok(())
}

/// Every mTHP and hugetlb size an arm sets must be one this kernel offers.
pub fn check_knobs_exist(
    arms: &[Arm],
    thp: &crate::probe::thp::Thp,
    pools: &[Pool],
) -> Result<(), UsageError> {
    let list = |v: Vec<u64>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.into_iter()
                .map(|b| Bytes(b).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    for arm in arms {
        for (k, _) in &arm.system {
            match *k {
                Knob::MthpEnabled { size } if !thp.mthp.iter().any(|m| m.size_bytes == size) => {
                    return Err(UsageError(format!(
                        "arm {}: mthp.{}: this kernel has no such mTHP size (offered: {}; mTHP needs Linux 6.8+)",
                        arm.name,
                        Bytes(size),
                        list(thp.mthp.iter().map(|m| m.size_bytes).collect())
                    )));
                }
                Knob::HugetlbPages { size, .. } if !pools.iter().any(|p| p.page_size == size) => {
                    return Err(UsageError(format!(
                        "arm {}: hugetlb.{}: this kernel has no hugetlb pool of that page size (offered: {})",
                        arm.name,
                        Bytes(size),
                        list(pools.iter().map(|p| p.page_size).collect())
                    )));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Give each `qemu.backing=hugetlb-*` arm the pool its guest RAM needs: a `hugetlb.<size>` knob
/// that grows the pool by what is missing (applied and restored by the guard), unless the pool
/// already has the pages free or the arm sets that pool itself (its value is then kept, so a
/// short pool can be shown failing). The other QEMU arms get the same pool: it stays reserved
/// for the whole run, as on a VM host with a boot-time pool, instead of being released and
/// grown again around every hugetlb trial (which would charge those trials for growing it).
pub fn size_pools(
    arms: &mut [Arm],
    guest: u64,
    pools: &[Pool],
    privileged: bool,
) -> Result<(), UsageError> {
    for arm in arms.iter_mut() {
        let Some(ps) = arm.process.qemu.and_then(|q| q.backing.hugetlb_page()) else {
            continue;
        };
        let knob = Knob::HugetlbPages {
            size: ps,
            node: None,
        };
        if arm
            .system
            .iter()
            .any(|(k, _)| matches!(k, Knob::HugetlbPages { size, .. } if *size == ps))
        {
            continue;
        }
        if !guest.is_multiple_of(ps) {
            return Err(UsageError(format!(
                "arm {}: guest RAM {} is not a whole number of {} pages; give -m a multiple of {}",
                arm.name,
                Bytes(guest),
                Bytes(ps),
                Bytes(ps)
            )));
        }
        let need = guest / ps;
        let Some(pool) = pools.iter().find(|p| p.page_size == ps) else {
            return Err(UsageError(format!(
                "arm {}: this kernel has no {} hugetlb pool (/sys/kernel/mm/hugepages/hugepages-{}kB)",
                arm.name,
                Bytes(ps),
                ps / 1024
            )));
        };
        let Some(target) = pool_target(pool, need) else {
            continue;
        };
        if !privileged {
            return Err(UsageError(format!(
                "arm {}: the guest needs {need} free {} hugetlb pages and the pool has {}; run as root (run grows the pool and restores it) or grow it: echo {target} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
                arm.name,
                Bytes(ps),
                pool.available(),
                ps / 1024
            )));
        }
        arm.system.push((knob, target.to_string()));
    }
    let grown: Vec<(Knob, String)> = arms
        .iter()
        .filter(|x| {
            x.process
                .qemu
                .is_some_and(|q| q.backing.hugetlb_page().is_some())
        })
        .flat_map(|x| x.system.iter().cloned())
        .filter(|(k, _)| matches!(k, Knob::HugetlbPages { .. }))
        .collect();
    for (k, v) in grown {
        for arm in arms.iter_mut().filter(|x| x.process.qemu.is_some()) {
            if !arm.system.iter().any(|(x, _)| *x == k) {
                arm.system.push((k, v.clone()));
            }
        }
    }
    Ok(())
}

/// The 2 MiB pages a service preset's hugetlb arm needs, asked of the server where it can
/// say (PostgreSQL's `-C shared_memory_size_in_huge_pages`, run as `--user`), plus a margin
/// of 2 pages, and grown by what the pool lacks (as for VMs).
pub(super) fn service_pages(
    a: &RunArgs,
    name: &str,
    server: &[String],
) -> Result<Option<u64>, UsageError> {
    let Some(query) = crate::backing::services::pool_query(name, server) else {
        return Ok(None);
    };
    let user = match &a.user {
        Some(u) => Some(crate::probe::user::lookup(u).ok_or_else(|| {
            UsageError(format!(
                "--user {u:?}: no such user on this system (see getent passwd)"
            ))
        })?),
        None => None,
    };
    let spec = crate::workload::child::TrialSpec {
        argv: if a.shell {
            vec![query.join(" ")]
        } else {
            query.clone()
        },
        shell: a.shell,
        cwd: a.cwd.clone(),
        env: a.env.clone(),
        user: user.map(|u| (u.uid, u.gid)),
        ..Default::default()
    };
    let out = crate::workload::child::command(&spec)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            UsageError(format!(
                "--preset {name}: cannot run {:?} to size the hugetlb pool: {e}",
                query.join(" ")
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let need: u64 = match text.trim().parse::<i64>() {
        Ok(n) if out.status.success() && n >= 0 => n as u64,
        _ => {
            return Err(UsageError(format!(
                "--preset {name}: `{}` did not print a page count (the server must be stopped, its data directory initialised, and PostgreSQL 15 or later; as root give --user, e.g. --user postgres): {}",
                query.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    };
    let need = need + 2;
    let pools = crate::probe::hugetlb::read(&crate::probe::Root::system()).unwrap_or_default();
    Ok(Some(match pools.iter().find(|p| p.page_size == 2 << 20) {
        Some(p) => pool_target(p, need).unwrap_or(p.total),
        None => need,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::arm::parse_arm;

    fn pool(page_size: u64, total: u64, free: u64, reserved: u64) -> Pool {
        Pool {
            page_size,
            total,
            free,
            reserved,
            surplus: 0,
            overcommit: 0,
            nodes: Vec::new(),
        }
    }

    fn arms(specs: &[&str]) -> Vec<Arm> {
        specs.iter().map(|s| parse_arm(s).unwrap()).collect()
    }

    #[test]
    fn jvm_hugetlbfs_arms_get_a_pool_for_the_heap() {
        let pools = [pool(2 << 20, 10, 6, 2), pool(1 << 30, 0, 0, 0)];
        let words: Vec<String> = ["java", "-Xms1g", "-Xmx2g", "-jar", "b.jar"]
            .map(String::from)
            .to_vec();
        assert_eq!(java_max_heap(&words), Some(2 << 30));
        let mut a = arms(&[
            "off=jvm=off",
            "h=jvm=hugetlbfs",
            "own=jvm=hugetlbfs,hugetlb.2M=7",
        ]);
        size_jvm_pools(&mut a, &words, &pools, true).unwrap();
        assert!(a[0].system.is_empty());
        // 1024 heap pages + 64 + 128 = 1216 needed, 4 available: 10 + 1212.
        let h = Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        };
        assert_eq!(a[1].system, vec![(h, "1222".to_string())]);
        assert_eq!(
            a[2].system,
            vec![(h, "7".to_string())],
            "the arm's own pool stays"
        );
        let e = size_jvm_pools(&mut arms(&["h=jvm=hugetlbfs"]), &words, &pools, false)
            .unwrap_err()
            .0;
        assert!(
            e.contains("needs 1216 free 2M") && e.contains("echo 1222 >"),
            "{e}"
        );
        // No -Xmx: nothing to size.
        let mut b = arms(&["h=jvm=hugetlbfs"]);
        size_jvm_pools(&mut b, &["java".to_string()], &pools, true).unwrap();
        assert!(b[0].system.is_empty());
    }

    #[test]
    fn qemu_hugetlb_arms_grow_the_pool_by_what_is_missing() {
        let pools = [pool(2 << 20, 10, 6, 2), pool(1 << 30, 0, 0, 0)];
        let mut a = arms(&[
            "t=qemu.backing=thp",
            "h=qemu.backing=hugetlb-2m",
            "g=qemu.backing=hugetlb-1g",
            "keep=qemu.backing=hugetlb-2m,hugetlb.2M=0",
        ]);
        size_pools(&mut a, 1 << 30, &pools, true).unwrap();
        // The pools stay reserved for every QEMU arm of the run.
        let g = Knob::HugetlbPages {
            size: 1 << 30,
            node: None,
        };
        assert_eq!(a[0].system.len(), 2);
        assert!(
            a[0].system.contains(&(g, "1".to_string())),
            "{:?}",
            a[0].system
        );
        // 512 pages needed, 4 available (6 free − 2 reserved): 10 + 508.
        let h = Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        };
        assert_eq!(
            a[1].system,
            vec![(h, "518".to_string()), (g, "1".to_string())]
        );
        assert_eq!(
            a[2].system,
            vec![(g, "1".to_string()), (h, "518".to_string())]
        );
        assert_eq!(
            a[3].system[0],
            (h, "0".to_string()),
            "the arm's own value stays"
        );
        // Enough free pages: nothing to change, no root needed.
        let mut b = arms(&["h=qemu.backing=hugetlb-2m"]);
        size_pools(&mut b, 8 << 20, &pools, false).unwrap();
        assert!(b[0].system.is_empty());
        let e = size_pools(
            &mut arms(&["h=qemu.backing=hugetlb-2m"]),
            1 << 30,
            &pools,
            false,
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("needs 512 free 2M") && e.contains("echo 518 >"),
            "{e}"
        );
        let e = size_pools(
            &mut arms(&["g=qemu.backing=hugetlb-1g"]),
            3 << 29,
            &pools,
            true,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("not a whole number of 1G pages"), "{e}");
        let e = size_pools(
            &mut arms(&["g=qemu.backing=hugetlb-1g"]),
            1 << 30,
            &pools[..1],
            true,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("no 1G hugetlb pool"), "{e}");
    }
}
