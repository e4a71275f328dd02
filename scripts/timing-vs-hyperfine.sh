#!/usr/bin/env bash
# hugelab's per-trial wall time against hyperfine's on the same short command, interleaved
# in rounds so both see the same machine. Needs hyperfine (apt-get install hyperfine) and a
# release build. Usage: scripts/timing-vs-hyperfine.sh [COMMAND...]   (default: sleep 0.013)
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=("${@:-sleep}"); [ $# -eq 0 ] && cmd=(sleep 0.013)
command -v hyperfine >/dev/null || { echo "hyperfine is not installed (apt-get install hyperfine)"; exit 1; }
bin=target/release/hugelab; [ -x "$bin" ] || cargo build --release -q
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for round in 1 2 3; do
  "$bin" run --db "$tmp/h.db" --arm a= --arm b=env.HUGELAB_AA=1 --blocks 20 --warmup 2 --json -- "${cmd[@]}" >/dev/null 2>&1
  hyperfine -N -w 3 -r 40 --export-json "$tmp/hf$round.json" "${cmd[*]}" >/dev/null 2>&1
done
python3 - "$tmp" <<'PY'
import json, sqlite3, statistics as st, sys, glob
d = sys.argv[1]
w = [r[0] for r in sqlite3.connect(f"{d}/h.db").execute(
    "select m.value from metrics m join trials t on t.id = m.trial_id where t.block >= 0 and m.name = 'wall_s'")]
h = [t for f in sorted(glob.glob(f"{d}/hf*.json")) for t in json.load(open(f))["results"][0]["times"]]
hm, hs = st.mean(h), st.stdev(h)
print(f"hugelab   n={len(w)}  median {st.median(w)*1e3:.3f} ms  mean {st.mean(w)*1e3:.3f} ms  sd {st.stdev(w)*1e3:.3f} ms")
print(f"hyperfine n={len(h)}  median {st.median(h)*1e3:.3f} ms  mean {hm*1e3:.3f} ms  sd {hs*1e3:.3f} ms")
print(f"hugelab median / hyperfine mean: {st.median(w)/hm:.3f}   spread ratio (sd): {st.stdev(w)/hs:.2f}")
PY
