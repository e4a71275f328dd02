//! The machine's whole page-size state in one record: what `hugelab status` shows.

pub use crate::model::machine::status::{Compaction, Status, Tracing};

use super::Root;
use super::buddyinfo::{self};
use super::cpu::{self};
use super::hugetlb::{self};
use super::meminfo::{self};
use super::mounts::{self};
use super::pmu::{self};
use super::thp::{self};
use crate::error::ProbeError;

/// Version of the `status --json` schema (docs/json.md). Bump on incompatible change.
pub const SCHEMA: &str = "hugelab.status/1";

fn tracing(root: &Root) -> Tracing {
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if root.exists(format!("{p}/events")) {
            return Tracing {
                available: true,
                path: Some(p.into()),
                mountable: true,
                note: None,
            };
        }
    }
    let mountable = super::tracefs::in_kernel(root);
    let note = if mountable {
        "tracefs is not mounted: `mount -t tracefs nodev /sys/kernel/tracing` (as root) enables tracepoints"
    } else {
        "this kernel has no tracefs: kernel latency tracing is unavailable"
    };
    Tracing {
        available: false,
        path: None,
        mountable,
        note: Some(note.into()),
    }
}

/// Keep going past a section that needs root; other errors (malformed files) stop the probe.
fn or_note<T: Default>(
    r: Result<T, ProbeError>,
    unreadable: &mut Vec<String>,
) -> Result<T, ProbeError> {
    match r {
        Ok(v) => Ok(v),
        Err(ProbeError::Permission { path }) => {
            unreadable.push(format!("{} (needs root)", path.display()));
            Ok(T::default())
        }
        Err(e) => Err(e),
    }
}

pub fn probe(root: &Root) -> Result<Status, ProbeError> {
    let mut unreadable = Vec::new();
    let cpu = or_note(cpu::read(root), &mut unreadable)?;
    let base_page_size = cpu::base_page_size();
    let thp = or_note(thp::read(root), &mut unreadable)?;
    let memory = or_note(
        root.parse_opt("/proc/meminfo", meminfo::parse)
            .map(Option::unwrap_or_default),
        &mut unreadable,
    )?;
    let zones = or_note(
        root.parse_opt("/proc/buddyinfo", buddyinfo::parse)
            .map(Option::unwrap_or_default),
        &mut unreadable,
    )?;
    let pmd = thp.hpage_pmd_size.unwrap_or(2 << 20);
    let order = (pmd / base_page_size).max(1).trailing_zeros() as usize;
    let fragmentation = (!zones.is_empty()).then(|| buddyinfo::fragmentation(&zones, order));
    let vmstat = or_note(thp::read_vmstat(root), &mut unreadable)?;
    Ok(Status {
        schema: SCHEMA.into(),
        kernel: or_note(cpu::kernel_release(root), &mut unreadable)?,
        base_page_size,
        cpu_page_sizes: cpu.page_sizes(base_page_size),
        // perf_event_open probes this process's kernel: meaningless for a captured tree.
        pmu: if root.is_system() {
            pmu::probe(root, &cpu)
        } else {
            pmu::PmuCapability {
                hardware_counters: false,
                tlb_counters: false,
                walk_cycle_events: false,
                software_counters: false,
                reason: Some(
                    "not probed: reading a captured tree (--root), not this machine".into(),
                ),
                perf_event_paranoid: None,
            }
        },
        tracing: tracing(root),
        hugetlb: or_note(hugetlb::read(root), &mut unreadable)?,
        hugetlbfs_mounts: or_note(
            root.parse_opt("/proc/mounts", mounts::parse_hugetlbfs)
                .map(Option::unwrap_or_default),
            &mut unreadable,
        )?,
        counters: thp::huge_counters(&vmstat),
        compaction: Compaction {
            proactiveness: or_note(
                root.read_u64("/proc/sys/vm/compaction_proactiveness"),
                &mut unreadable,
            )?,
            defrag_mode: or_note(root.read_u64("/proc/sys/vm/defrag_mode"), &mut unreadable)?,
        },
        cpu,
        thp,
        memory,
        zones,
        fragmentation,
        // SAFETY: geteuid has no preconditions.
        is_root: unsafe { libc::geteuid() } == 0,
        unreadable,
    })
}

/// Whether this kernel has `vm.defrag_mode` (Linux 6.15+).
pub fn has_defrag_mode(root: &Root) -> bool {
    root.path("/proc/sys/vm/defrag_mode").exists()
}
