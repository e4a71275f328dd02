//! Perf capability: which counters can be opened here, the event encodings hugelab uses, and
//! a small table of model-specific page-walk events.
//!
//! Many VMs expose no hardware PMU: opening `cycles` then fails with ENOENT (or EOPNOTSUPP).
//! hugelab says so once and measures everything else.

pub use crate::model::machine::pmu::{PerfEvent, PmuCapability};

use super::cpu::Cpu;
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Event, Hardware, Raw, Software};

/// `perf_event_attr` type and config for an event, as the kernel ABI defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoding {
    pub type_: u32,
    pub config: u64,
}

fn attrs_of(e: impl Event) -> Encoding {
    let mut builder = perf_event::Builder::new(e);
    let a = builder.attrs_mut();
    Encoding {
        type_: a.type_,
        config: a.config,
    }
}

/// Raw `(data, instruction)` page-walk-cycle events for Intel cores where `event=0x08,umask=0x10`
/// (DTLB_LOAD_MISSES.WALK_DURATION / WALK_PENDING) and `event=0x85,umask=0x10` (ITLB_MISSES.*)
/// count cycles with a walk in flight: Haswell through Ice Lake server parts (Intel SDM vol. 3B,
/// chapter 19 event tables).
pub fn walk_events(cpu: &Cpu) -> Option<(u64, u64)> {
    const MODELS: &[u32] = &[
        0x3C, 0x3F, 0x45, 0x46, // Haswell
        0x3D, 0x47, 0x4F, 0x56, // Broadwell
        0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5,
        0xA6, // Skylake, Cascade Lake, Kaby/Coffee/Comet Lake
        0x66, 0x6A, 0x6C, 0x7D, 0x7E, // Cannon Lake, Ice Lake
    ];
    let intel = cpu.vendor.as_deref() == Some("GenuineIntel") && cpu.family == Some(6);
    let known = cpu.model.is_some_and(|m| MODELS.contains(&m));
    (intel && known).then_some((0x08 | (0x10 << 8), 0x85 | (0x10 << 8)))
}

/// Explain a perf_event_open failure in terms a user can act on.
pub fn explain_open_error(err: &std::io::Error, paranoid: Option<i64>) -> String {
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            "no hardware PMU is exposed to this system (common in VMs): TLB and cycle counters are unavailable".to_string()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open was refused (kernel.perf_event_paranoid = {}); run as root or `sysctl kernel.perf_event_paranoid=1`",
            paranoid.map_or("unknown".into(), |p| p.to_string())
        ),
        Some(libc::ENOSYS) => "perf_event_open is not supported by this kernel".to_string(),
        _ => format!("perf_event_open failed: {err}"),
    }
}

/// Try to open a counter on this process (closes it again at once).
pub fn try_open(event: PerfEvent, cpu: &Cpu) -> Result<(), std::io::Error> {
    let enc =
        encoding(event, cpu).ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut b = perf_event::Builder::new(Raw::new(enc.config));
    let attrs = b.attrs_mut();
    attrs.type_ = enc.type_;
    attrs.config = enc.config;
    b.observe_self().any_cpu().build().map(drop)
}

pub fn probe(root: &super::Root, cpu: &Cpu) -> PmuCapability {
    let paranoid = root
        .read_opt("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .flatten()
        .and_then(|s| s.trim().parse().ok());
    let software = try_open(PerfEvent::PageFaults, cpu);
    let cycles = try_open(PerfEvent::Cycles, cpu);
    let tlb = try_open(PerfEvent::DtlbLoadMisses, cpu);
    let walk = try_open(PerfEvent::DtlbWalkCycles, cpu).is_ok();
    let reason = match (&cycles, &tlb) {
        (Err(e), _) => Some(explain_open_error(e, paranoid)),
        (Ok(()), Err(e)) => Some(format!(
            "cycles work but dTLB-load-misses does not: {}",
            explain_open_error(e, paranoid)
        )),
        _ => None,
    };
    PmuCapability {
        hardware_counters: cycles.is_ok(),
        tlb_counters: tlb.is_ok(),
        walk_cycle_events: walk,
        software_counters: software.is_ok(),
        reason,
        perf_event_paranoid: paranoid,
    }
}

/// The encoding on this CPU; `None` for a model-specific event with no entry for this model.
pub fn encoding(event: PerfEvent, cpu: &Cpu) -> Option<Encoding> {
    let cache = |which, operation, result| {
        let c = Cache {
            which,
            operation,
            result,
        };
        attrs_of(c)
    };
    Some(match event {
        PerfEvent::PageFaults => attrs_of(Software::PAGE_FAULTS),
        PerfEvent::Cycles => attrs_of(Hardware::CPU_CYCLES),
        PerfEvent::Instructions => attrs_of(Hardware::INSTRUCTIONS),
        PerfEvent::DtlbLoads => cache(CacheId::DTLB, CacheOp::READ, CacheResult::ACCESS),
        PerfEvent::DtlbLoadMisses => cache(CacheId::DTLB, CacheOp::READ, CacheResult::MISS),
        PerfEvent::DtlbStoreMisses => cache(CacheId::DTLB, CacheOp::WRITE, CacheResult::MISS),
        PerfEvent::ItlbLoadMisses => cache(CacheId::ITLB, CacheOp::READ, CacheResult::MISS),
        PerfEvent::DtlbWalkCycles => attrs_of(Raw::new(walk_events(cpu)?.0)),
        PerfEvent::ItlbWalkCycles => attrs_of(Raw::new(walk_events(cpu)?.1)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_events_key_is_its_serde_name() {
        for e in [PerfEvent::PageFaults]
            .into_iter()
            .chain(PerfEvent::HARDWARE)
        {
            assert_eq!(serde_json::to_value(e).unwrap(), e.key(), "{e:?}");
        }
    }

    fn haswell() -> Cpu {
        Cpu {
            vendor: Some("GenuineIntel".into()),
            family: Some(6),
            model: Some(0x3C),
            ..Cpu::default()
        }
    }

    #[test]
    fn generic_encodings_follow_the_abi() {
        let cpu = Cpu::default();
        // PERF_TYPE_HW_CACHE = 3; config = id | op << 8 | result << 16; DTLB = 3, READ = 0, MISS = 1.
        assert_eq!(
            encoding(PerfEvent::DtlbLoadMisses, &cpu),
            Some(Encoding {
                type_: 3,
                config: 3 | (1 << 16)
            })
        );
        assert_eq!(
            encoding(PerfEvent::DtlbStoreMisses, &cpu),
            Some(Encoding {
                type_: 3,
                config: 3 | (1 << 8) | (1 << 16)
            })
        );
        assert_eq!(
            encoding(PerfEvent::ItlbLoadMisses, &cpu),
            Some(Encoding {
                type_: 3,
                config: 4 | (1 << 16)
            })
        );
        // PERF_TYPE_HARDWARE = 0, CPU_CYCLES = 0; PERF_TYPE_SOFTWARE = 1, PAGE_FAULTS = 2.
        assert_eq!(
            encoding(PerfEvent::Cycles, &cpu),
            Some(Encoding {
                type_: 0,
                config: 0
            })
        );
        assert_eq!(
            encoding(PerfEvent::PageFaults, &cpu),
            Some(Encoding {
                type_: 1,
                config: 2
            })
        );
    }

    #[test]
    fn walk_events_are_model_specific() {
        // Haswell's page-walk codes (Intel SDM vol. 3B): event=0x08,umask=0x10 and event=0x85,umask=0x10.
        assert_eq!(
            encoding(PerfEvent::DtlbWalkCycles, &haswell()),
            Some(Encoding {
                type_: 4,
                config: 0x1008
            })
        );
        assert_eq!(
            encoding(PerfEvent::ItlbWalkCycles, &haswell()),
            Some(Encoding {
                type_: 4,
                config: 0x1085
            })
        );
        let amd = Cpu {
            vendor: Some("AuthenticAMD".into()),
            family: Some(25),
            ..Cpu::default()
        };
        assert_eq!(encoding(PerfEvent::DtlbWalkCycles, &amd), None);
    }

    #[test]
    fn errors_are_explained() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(explain_open_error(&e, Some(2)).contains("no hardware PMU"));
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        let m = explain_open_error(&e, Some(3));
        assert!(
            m.contains("perf_event_paranoid = 3") && m.contains("root"),
            "{m}"
        );
    }

    #[test]
    fn software_counters_open_here() {
        // Software events need no PMU; this must work on any Linux that has perf_event_open.
        try_open(PerfEvent::PageFaults, &Cpu::default()).expect("software page-fault counter");
    }
}
