#!/bin/sh
# Boots the minimal guest that build.sh made, with its serial console on stdout:
#
#   examples/vm-guest/qemu.sh DIR [QEMU OPTIONS...]     e.g. qemu.sh target/guest -m 2G
#   examples/vm-guest/qemu.sh --command DIR             prints the QEMU command line instead,
#                                                       for `hugelab run --shell` (docs/vms.md)
#
# The guest RAM option (-m SIZE) is left to the caller, so that hugelab's qemu.backing arms can
# rewrite it. The guest runs /init (chase.c) once and reboots; with -no-reboot QEMU then exits.
#
# CPU: this project's nested emulator gives the guest the host's CPUID feature bits whatever
# -cpu says, but cannot execute some instructions the kernel then patches in, and the guest
# hangs on them: XRSTOR (noxsave), CLAC/STAC (SMAP, clearcpuid 308) and POPCNT (151); the x87
# FNCLEX of the AMD FXSAVE-leak workaround (+xsaveerptr tells the kernel it is not needed).
# ERMS and FSRM (297, 580) are cleared for speed: the kernel then zeroes pages with rep stosq,
# which the emulator runs ~5x faster than rep stosb (measured: even so, the guest's first touch
# of fresh memory costs about 1 ms per 4 KiB page here, so 1 GiB takes ~5 minutes). FSGSBASE,
# INVPCID, PCID, CLFLUSHOPT, CLWB and RDPID (288, 298, 145, 311, 312, 534) are cleared as a
# precaution: the measurements were made so, and a guest with them was not run to the end. On
# real KVM none of this is needed; it changes nothing the experiment compares between backings.
set -eu
print=
if [ "${1:-}" = --command ]; then
    print=1
    shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [--command] DIR [QEMU OPTIONS...]" >&2; exit 2; }
dir=$1
shift
for f in vmlinux initramfs.cpio; do
    [ -f "$dir/$f" ] || { echo "$0: no $dir/$f (run examples/vm-guest/build.sh $dir first)" >&2; exit 2; }
done
dir=$(realpath "$dir")
append="console=ttyS0 loglevel=5 print-fatal-signals=1 panic=1 transparent_hugepage=always noxsave clearcpuid=308,151,297,580,288,298,145,311,312,534"
set -- qemu-system-x86_64 -nodefaults -display none -monitor none -no-reboot \
    -machine q35,accel=kvm -cpu kvm64,+xsaveerptr \
    -kernel "$dir/vmlinux" -initrd "$dir/initramfs.cpio" -append "$append" -serial stdio "$@"
if [ -n "$print" ]; then
    # Words with spaces quoted for sh (no word holds a single quote).
    for w in "$@"; do
        case $w in
            *" "*) printf "'%s' " "$w" ;;
            *) printf '%s ' "$w" ;;
        esac
    done
    echo
else
    exec "$@"
fi
