#!/bin/sh
# Builds a minimal x86-64 guest for the in-guest huge-page experiment (docs/vms.md):
# a Linux 6.1 kernel with a tiny configuration (serial console, initramfs, THP, no modules) and
# an initramfs whose /init is chase.c, a 1 GiB random pointer chase that leaves its results in
# registers; the guest kernel prints them on the serial console when init dies, then reboots
# (and QEMU, with -no-reboot, exits). qemu.sh boots it.
#
#   examples/vm-guest/build.sh [OUT]        # OUT defaults to target/guest
#
# Kernel sources: $KERNEL_SRC (a 6.1 tarball, or a tree, which is changed and built in place),
# else Debian's linux-source-6.1 package
# (/usr/src/linux-source-6.1.tar.xz; `apt-get install linux-source-6.1 bc flex bison
# libelf-dev cpio gcc make`). NESTED=1 (the default) applies three one-line changes that let
# the kernel boot under a nested emulator that implements neither the int3 self-test's trap
# path nor x87/SSE control instructions in the kernel's FPU code; they are harmless on real KVM.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-target/guest}")
src_arg=${KERNEL_SRC:-/usr/src/linux-source-6.1.tar.xz}
nested=${NESTED:-1}
jobs=${JOBS:-$(nproc)}

die() { echo "build.sh: $*" >&2; exit 1; }
for tool in gcc make flex bison bc cpio; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install linux-source-6.1 bc flex bison libelf-dev cpio gcc make)"
done

mkdir -p "$out"
tree="$out/linux"
if [ -d "$src_arg" ]; then
    tree=$(realpath "$src_arg")
elif [ -f "$src_arg" ]; then
    if [ ! -f "$tree/Makefile" ]; then
        echo "unpacking $src_arg"
        mkdir -p "$tree"
        tar -xf "$src_arg" -C "$tree" --strip-components=1
    fi
else
    die "no kernel sources at $src_arg (set KERNEL_SRC to a Linux 6.1 tree or tarball, or apt-get install linux-source-6.1)"
fi

# patch FILE FROM TO: replace one exact line, or find it already replaced.
patch_line() {
    if grep -qxF "$3" "$tree/$1"; then return; fi
    [ "$(grep -cxF "$2" "$tree/$1")" = 1 ] || die "$1: expected exactly one line '$2' (is this Linux 6.1?)"
    # ENVIRON, not awk -v: -v would turn the "\n" of a C string into a newline.
    FROM=$2 TO=$3 awk '$0 == ENVIRON["FROM"] { print ENVIRON["TO"]; next } { print }' "$tree/$1" > "$tree/$1.new"
    mv "$tree/$1.new" "$tree/$1"
    grep -qxF "$3" "$tree/$1" || die "$1: the change to '$3' did not apply"
}
if [ "$nested" = 1 ]; then
    tab=$(printf '\t')
    patch_line arch/x86/kernel/alternative.c "${tab}int3_selftest();" "${tab}/* int3_selftest(); skipped: nested emulator */"
    patch_line arch/x86/kernel/fpu/core.c "${tab}${tab}asm volatile(\"1: fwait\\n\"" "${tab}${tab}asm volatile(\"1: nop\\n\""
    patch_line arch/x86/kernel/fpu/core.c "${tab}${tab}ldmxcsr(MXCSR_DEFAULT);" "${tab}${tab};"
fi

cd "$tree"
make -s tinyconfig
./scripts/config -e 64BIT -e PRINTK -e PRINTK_TIME -e TTY -e SERIAL_8250 -e SERIAL_8250_CONSOLE \
    -e BLK_DEV_INITRD -e BINFMT_ELF -e IA32_EMULATION -e TRANSPARENT_HUGEPAGE \
    -e TRANSPARENT_HUGEPAGE_ALWAYS -e EARLY_PRINTK -e X86_VERBOSE_BOOTUP -e HYPERVISOR_GUEST \
    -e PVH -d KERNEL_XZ -e KERNEL_LZ4 -d SERIO_I8042 -d KEYBOARD_ATKBD
make -s olddefconfig
echo "building the kernel ($jobs jobs; a few minutes)"
make -s -j"$jobs" bzImage
cp arch/x86/boot/bzImage "$out/bzImage"
cp vmlinux "$out/vmlinux"

cd "$out"
gcc -O2 -mgeneral-regs-only -static -nostdlib -fno-stack-protector -fno-pic -no-pie -o init "$here/chase.c"
echo init | cpio --quiet -o -H newc > initramfs.cpio
echo "built $out/bzImage, $out/vmlinux (PVH) and $out/initramfs.cpio"
