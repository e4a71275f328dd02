#!/usr/bin/env bash
# A long system-wide trace of every kind, its RSS sampled every 20 s (root).
# Usage: scripts/trace-rss.sh [DURATION]   (default 10m). Prints the RSS samples, then the
# trace's event count, lost records, CPU time and its /proc/vmstat rows.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
bin=target/release/hugelab; [ -x "$bin" ] || cargo build --release -q
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin" trace --duration "$duration" -e compaction,reclaim,migrate,khugepaged,alloc,tlb,faults --json > "$tmp/trace.json" &
pid=$!
sleep 2
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo "$(date +%T) RSS ${rss} kB"
  sleep 20
done
wait "$pid"
python3 - "$tmp/trace.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); w = v["windows"][0]
print(f"{sum(w['events_seen'].values())} events in {w['seconds']:.0f} s, lost {v['lost']}, hugelab CPU {v['self_cpu_s']:.1f} s")
for k in w["kernel"]:
    print(f"  {k['counter']}: vmstat +{k['vmstat_delta']}, traced {k['traced']}, {'equal' if k['equal'] else 'DIFFERENT'}")
PY
