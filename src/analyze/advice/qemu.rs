//! `--for qemu` (and libvirt): the guest-RAM backing the better arm measured, as libvirt XML,
//! QEMU options, the host pool and the kernel command line.

use super::{Adopted, Advice, EvidenceLine, RunEvidence, ServiceLine, Setting, Target, begin};
use crate::analyze::vm::host_advice;
use crate::backing::qemu::{QemuBacking, guest_size};
use crate::control::Knob;

/// `nodes`: NUMA nodes of this host (the pool is split across them when the guest is).
pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>, nodes: usize) -> Advice {
    let (mut a, chosen) = begin(
        Target::Qemu,
        runs,
        lines,
        "hugelab inspect $(pgrep -f qemu-system) (guest RAM on the advised page size)",
    );
    let Some(Adopted {
        arm,
        why,
        command,
        shell,
    }) = chosen
    else {
        return a;
    };
    // The pool comes from the guest's size below, not from the arm.
    a.settings.clear();
    let Some(q) = arm.process.qemu else {
        a.notes.push(format!(
            "arm {} has no qemu.backing: nothing VM-specific to advise (see --for machine)",
            arm.name
        ));
        return a;
    };
    let size = match guest_size(&command, shell) {
        Ok(s) => s,
        Err(e) => {
            a.notes.push(format!(
                "the guest size could not be read from the run's command: {e}"
            ));
            return a;
        }
    };
    let h = host_advice(q.backing, size, nodes, 1);
    a.service.push(ServiceLine {
        file: "libvirt domain XML".into(),
        line: h.libvirt.trim().to_string(),
        why: why.clone(),
    });
    a.service.push(ServiceLine {
        file: "QEMU options".into(),
        line: h.qemu.clone(),
        why: why.clone(),
    });
    if let (Some(pages), QemuBacking::Hugetlb2M | QemuBacking::Hugetlb1G) = (h.pages, q.backing) {
        let page = if q.backing == QemuBacking::Hugetlb1G {
            1 << 30
        } else {
            2 << 20
        };
        a.settings.push(Setting {
            knob: Knob::HugetlbPages {
                size: page,
                node: None,
            },
            value: pages.to_string(),
            now: None,
            why: format!(
                "guest RAM {} on {} pages",
                crate::units::Bytes(size),
                crate::units::Bytes(page)
            ),
        });
    }
    if let Some(c) = h.kernel_cmdline {
        a.notes.push(format!(
            "at boot (1 GiB pages are only reliable there): {c}"
        ));
    }
    a.notes.extend(h.notes);
    a
}
