//! The host configuration that backs a VM with a chosen page size.

use crate::backing::qemu::QemuBacking;
pub use crate::model::vm::HostAdvice;
use crate::units::Bytes;

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
