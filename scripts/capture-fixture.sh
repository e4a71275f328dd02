#!/usr/bin/env bash
# Capture the kernel files hugelab's probes read into a fixture tree, for tests and bug reports:
#   scripts/capture-fixture.sh tests/fixtures/linux-$(uname -r | cut -d. -f1,2)
# Then `hugelab status --root DIR` reads the capture instead of the live system.
set -euo pipefail
out=${1:?usage: capture-fixture.sh OUTDIR}
mkdir -p "$out"
copy() { # copy one readable regular file, keeping its absolute path under $out
  [ -f "$1" ] && [ -r "$1" ] || return 0
  mkdir -p "$out$(dirname "$1")"
  cat "$1" > "$out$1" 2>/dev/null || rm -f "$out$1"
}
for f in /proc/meminfo /proc/vmstat /proc/buddyinfo /proc/mounts /proc/filesystems \
         /proc/sys/kernel/osrelease /proc/sys/kernel/perf_event_paranoid; do copy "$f"; done
# Only the first processor of /proc/cpuinfo: identity and flags are what the probe uses.
mkdir -p "$out/proc"; awk 'BEGIN{RS="";ORS="\n\n"} NR==1' /proc/cpuinfo > "$out/proc/cpuinfo"
find /sys/kernel/mm/transparent_hugepage /sys/kernel/mm/hugepages -type f 2>/dev/null |
  while read -r f; do copy "$f"; done
find /sys/devices/system/node -path '*/hugepages/*' -type f 2>/dev/null |
  while read -r f; do copy "$f"; done
echo "captured into $out"
