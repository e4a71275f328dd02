//! The TLB geometry the CPU declares through CPUID, where it declares one: AMD's leaves
//! 0x80000005 (first level), 0x80000006 (second level) and 0x80000019 (1 GiB pages); Intel's
//! leaf 0x18 (deterministic address translation) or, on older parts, leaf 0x2's one-byte
//! descriptors. Hypervisors often hide it (zeros, or leaf 0x2's 0xFE "see leaf 0x18" with
//! leaf 0x18 empty): then there is no geometry, and `bench tlb`'s timing is the only source.
//!
//! The decoders are pure functions of register values; [`read`] executes CPUID.

pub use crate::model::machine::tlb::{TlbGeometry, TlbKind, TlbLevel};

const K4: u64 = 4 << 10;
const M2: u64 = 2 << 20;
const G1: u64 = 1 << 30;

/// AMD's 8-bit first-level associativity: 0xFF fully associative, else the ways.
fn amd_l1_ways(v: u32) -> Option<Option<u32>> {
    match v {
        0 => None,
        0xFF => Some(None),
        w => Some(Some(w)),
    }
}

/// AMD's 4-bit second-level associativity code (APM vol. 3, CPUID Fn8000_0006).
fn amd_l2_ways(code: u32) -> Option<Option<u32>> {
    let ways = match code {
        0 => return None,
        0xF => return Some(None),
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        5 => 6,
        6 => 8,
        8 => 16,
        0xA => 32,
        0xB => 48,
        0xC => 64,
        0xD => 96,
        0xE => 128,
        _ => return None,
    };
    Some(Some(ways))
}

/// AMD: `l1` = Fn8000_0005 (eax: 2M/4M TLB, ebx: 4K TLB), `l2` = Fn8000_0006 (eax: 2M/4M,
/// ebx: 4K), `g1` = Fn8000_0019 (eax: first-level 1G, ebx: second-level 1G). Each register
/// holds a data half (high 16 bits) and an instruction half (low 16 bits).
pub fn decode_amd(l1: [u32; 4], l2: [u32; 4], g1: [u32; 4]) -> Vec<TlbLevel> {
    let mut out = Vec::new();
    let mut first = |reg: u32, page_size: u64| {
        for (kind, half) in [
            (TlbKind::Data, reg >> 16),
            (TlbKind::Instruction, reg & 0xFFFF),
        ] {
            let entries = half & 0xFF;
            if let (Some(ways), true) = (amd_l1_ways(half >> 8), entries > 0) {
                out.push(TlbLevel {
                    level: 1,
                    kind,
                    page_size,
                    entries,
                    ways,
                });
            }
        }
    };
    first(l1[1], K4);
    first(l1[0], M2);
    let mut second = |reg: u32, page_size: u64, level: u8| {
        for (kind, half) in [
            (TlbKind::Data, reg >> 16),
            (TlbKind::Instruction, reg & 0xFFFF),
        ] {
            let entries = half & 0xFFF;
            if let (Some(ways), true) = (amd_l2_ways(half >> 12), entries > 0) {
                out.push(TlbLevel {
                    level,
                    kind,
                    page_size,
                    entries,
                    ways,
                });
            }
        }
    };
    second(l2[1], K4, 2);
    second(l2[0], M2, 2);
    second(g1[0], G1, 1);
    second(g1[1], G1, 2);
    out
}

/// Intel leaf 0x18, one `[eax, ebx, ecx, edx]` per sub-leaf: ebx bits 0–3 the page sizes
/// (4K, 2M, 4M, 1G), 16–31 the ways; ecx the sets; edx bits 0–4 the type (1 data,
/// 2 instruction, 3 unified, 4 load, 5 store), 5–7 the level, bit 8 fully associative.
pub fn decode_intel_18(subleaves: &[[u32; 4]]) -> Vec<TlbLevel> {
    let mut out = Vec::new();
    for r in subleaves {
        let kind = match r[3] & 0x1F {
            1 => TlbKind::Data,
            2 => TlbKind::Instruction,
            3 => TlbKind::Unified,
            4 => TlbKind::Load,
            5 => TlbKind::Store,
            _ => continue,
        };
        let level = ((r[3] >> 5) & 0x7) as u8;
        let ways = r[1] >> 16;
        let entries = ways * r[2];
        let fully = r[3] & (1 << 8) != 0;
        for (bit, page_size) in [(0, K4), (1, M2), (3, G1)] {
            if r[1] & (1 << bit) != 0 && entries > 0 {
                out.push(TlbLevel {
                    level,
                    kind,
                    page_size,
                    entries,
                    ways: (!fully).then_some(ways),
                });
            }
        }
    }
    out
}

/// Intel leaf 0x2's TLB descriptors (SDM vol. 2A, table 3-12), the common ones: (level, kind,
/// page sizes, entries, ways; 0 = fully associative).
fn descriptor(d: u8) -> &'static [(u8, TlbKind, u64, u32, u32)] {
    use TlbKind::*;
    match d {
        0x01 => &[(1, Instruction, K4, 32, 4)],
        0x03 => &[(1, Data, K4, 64, 4)],
        0x04 => &[(1, Data, 4 << 20, 8, 4)],
        0x0B => &[(1, Instruction, 4 << 20, 4, 4)],
        0x4F => &[(1, Instruction, K4, 32, 0)],
        0x50 => &[(1, Instruction, K4, 64, 0), (1, Instruction, M2, 64, 0)],
        0x55 => &[(1, Instruction, M2, 7, 0)],
        0x56 => &[(1, Data, 4 << 20, 16, 4)],
        0x57 => &[(1, Data, K4, 16, 4)],
        0x5A => &[(1, Data, M2, 32, 4)],
        0x5B => &[(1, Data, K4, 64, 0)],
        0x5C => &[(1, Data, K4, 128, 0)],
        0x5D => &[(1, Data, K4, 256, 0)],
        0x61 => &[(1, Instruction, K4, 48, 0)],
        0x63 => &[(1, Data, M2, 32, 4), (1, Data, G1, 4, 4)],
        0x6A => &[(1, Load, K4, 64, 8)],
        0x6B => &[(1, Store, K4, 256, 8)],
        0x6C => &[(2, Unified, M2, 128, 8)],
        0x6D => &[(2, Unified, G1, 16, 0)],
        0x76 => &[(1, Instruction, M2, 8, 0)],
        0xA0 => &[(1, Data, K4, 32, 0)],
        0xB0 => &[(1, Instruction, K4, 128, 4)],
        0xB1 => &[(1, Instruction, M2, 8, 4)],
        0xB2 => &[(1, Instruction, K4, 64, 4)],
        0xB3 => &[(1, Data, K4, 128, 4)],
        0xB4 => &[(1, Data, K4, 256, 4)],
        0xB5 => &[(1, Instruction, K4, 64, 8)],
        0xB6 => &[(1, Instruction, K4, 128, 8)],
        0xBA => &[(1, Data, K4, 64, 4)],
        0xC0 => &[(1, Data, K4, 8, 4)],
        0xC1 => &[(2, Unified, K4, 1024, 8), (2, Unified, M2, 1024, 8)],
        0xC2 => &[(1, Data, K4, 16, 4), (1, Data, M2, 16, 4)],
        0xC3 => &[
            (2, Unified, K4, 1536, 6),
            (2, Unified, M2, 1536, 6),
            (2, Unified, G1, 16, 4),
        ],
        0xC4 => &[(2, Unified, M2, 32, 4)],
        0xCA => &[(2, Unified, K4, 512, 4)],
        _ => &[],
    }
}

/// Intel leaf 0x2: the descriptor bytes of eax (less its low byte, the repeat count), ebx, ecx
/// and edx, each register valid when its bit 31 is clear. Returns the levels and whether 0xFE
/// ("TLB information is in leaf 0x18") was among them.
pub fn decode_intel_2(r: [u32; 4]) -> (Vec<TlbLevel>, bool) {
    let mut out = Vec::new();
    let mut see_18 = false;
    for (i, reg) in r.iter().enumerate() {
        if reg & (1 << 31) != 0 {
            continue;
        }
        for (j, d) in reg.to_le_bytes().iter().enumerate() {
            if i == 0 && j == 0 {
                continue;
            }
            if *d == 0xFE {
                see_18 = true;
            }
            for &(level, kind, page_size, entries, ways) in descriptor(*d) {
                out.push(TlbLevel {
                    level,
                    kind,
                    page_size,
                    entries,
                    ways: (ways > 0).then_some(ways),
                });
            }
        }
    }
    (out, see_18)
}

/// Execute CPUID and decode what this CPU's vendor declares.
#[cfg(target_arch = "x86_64")]
// CPUID's intrinsics are safe functions in newer Rust and unsafe in the oldest it supports.
#[allow(unused_unsafe)]
pub fn read() -> TlbGeometry {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    let regs = |leaf: u32, sub: u32| {
        // SAFETY: CPUID is available on every x86-64 CPU and has no side effects.
        let r = unsafe { __cpuid_count(leaf, sub) };
        [r.eax, r.ebx, r.ecx, r.edx]
    };
    let vendor = {
        // SAFETY: as above.
        let r = unsafe { __cpuid(0) };
        let mut v = Vec::new();
        for x in [r.ebx, r.edx, r.ecx] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        (String::from_utf8_lossy(&v).into_owned(), r.eax)
    };
    let max_ext = regs(0x8000_0000, 0)[0];
    match vendor.0.as_str() {
        "AuthenticAMD" | "HygonGenuine" => {
            let get = |leaf: u32| {
                if max_ext >= leaf {
                    regs(leaf, 0)
                } else {
                    [0; 4]
                }
            };
            let levels = decode_amd(get(0x8000_0005), get(0x8000_0006), get(0x8000_0019));
            let source = if levels.is_empty() {
                "CPUID 0x80000005/6/19 declare no TLB (zeros, as under some hypervisors)".into()
            } else {
                "CPUID 0x80000005, 0x80000006, 0x80000019".into()
            };
            TlbGeometry { levels, source }
        }
        "GenuineIntel" => {
            let max = vendor.1;
            let (mut levels, see_18) = if max >= 2 {
                decode_intel_2(regs(2, 0))
            } else {
                (Vec::new(), false)
            };
            let mut source = "CPUID 0x2".to_string();
            if max >= 0x18 {
                let n = regs(0x18, 0)[0];
                let subs: Vec<[u32; 4]> = (0..=n.min(64)).map(|s| regs(0x18, s)).collect();
                let deterministic = decode_intel_18(&subs);
                if !deterministic.is_empty() {
                    levels = deterministic;
                    source = "CPUID 0x18".into();
                }
            }
            if levels.is_empty() {
                source = if see_18 {
                    "CPUID 0x2 says the TLB is described in leaf 0x18, and leaf 0x18 is empty (as under some hypervisors)".into()
                } else {
                    "CPUID 0x2 and 0x18 declare no TLB".into()
                };
            }
            TlbGeometry { levels, source }
        }
        other => TlbGeometry {
            levels: Vec::new(),
            source: format!("no TLB geometry decoded for CPU vendor {other:?}"),
        },
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn read() -> TlbGeometry {
    TlbGeometry {
        levels: Vec::new(),
        source: "CPUID exists on x86-64 only".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_leaves_of_this_vm_s_epyc_decode_to_72_and_3072_entries() {
        // Captured on this machine (AMD EPYC, family 0x19): 0x80000019 zeroed by the hypervisor.
        let l = decode_amd(
            [0xff48ff40, 0xff48ff40, 0x20080140, 0x20080140],
            [0x5c002200, 0x6c004200, 0x04006140, 0x0a009140],
            [0; 4],
        );
        let g = TlbGeometry {
            levels: l.clone(),
            source: String::new(),
        };
        assert_eq!(g.data_entries(1, K4), Some(72));
        assert_eq!(g.data_entries(1, M2), Some(72));
        assert_eq!(g.data_entries(2, K4), Some(3072));
        assert_eq!(g.data_entries(2, M2), Some(3072));
        let l2 = l
            .iter()
            .find(|x| x.level == 2 && x.page_size == K4 && x.kind == TlbKind::Data)
            .unwrap();
        assert_eq!(l2.ways, Some(8));
        assert_eq!(l2.reach(), 12 << 20);
        let itlb = l
            .iter()
            .find(|x| x.level == 1 && x.page_size == K4 && x.kind == TlbKind::Instruction)
            .unwrap();
        assert_eq!((itlb.entries, itlb.ways), (64, None));
        assert_eq!(g.data_entries(1, G1), None);
    }

    #[test]
    fn intel_leaf_18_and_leaf_2_decode() {
        // A second-level unified TLB: 4K and 2M pages, 12 ways × 128 sets = 1536 entries,
        // level 2, type 3; and a first-level load TLB of 4K, fully associative, 64 entries.
        let subs = [
            [0, 0, 0, 0],
            [0, (12 << 16) | 0b11, 128, (2 << 5) | 3],
            [0, (64 << 16) | 0b1, 1, (1 << 8) | (1 << 5) | 4],
        ];
        let l = decode_intel_18(&subs);
        let g = TlbGeometry {
            levels: l,
            source: String::new(),
        };
        assert_eq!(g.data_entries(2, K4), Some(1536));
        assert_eq!(g.data_entries(2, M2), Some(1536));
        assert_eq!(g.data_entries(1, K4), Some(64));
        assert_eq!(g.levels[2].ways, None);
        // Leaf 0x2: 0x5A and 0x03 in eax (repeat count 0x01 in the low byte), 0xFE in ebx,
        // ecx invalid (bit 31).
        let (l, see) = decode_intel_2([0x005A_0301, 0x0000_00FE, 0x8000_0003, 0]);
        assert!(see);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].entries, l[0].page_size), (64, K4));
        assert_eq!((l[1].entries, l[1].page_size), (32, M2));
        // What a hypervisor can leave: 0xFE alone, leaf 0x18 empty.
        let (l, see) = decode_intel_2([0x0000_FE01, 0, 0, 0]);
        assert!(see && l.is_empty());
        assert!(decode_intel_18(&[[0; 4]; 4]).is_empty());
    }
}
