#!/usr/bin/env bash
# hugelab's per-trial wall time against hyperfine's on the same short command, interleaved
# in rounds so both see the same machine. Needs hyperfine (apt-get install hyperfine) and a
# release build. Usage: [ROUNDS=3] [HUGELAB_RUN_ARGS=…] scripts/timing-vs-hyperfine.sh [COMMAND...]
# (default: sleep 0.013; each round is 40 hugelab trials then 40 hyperfine runs)
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=("${@:-sleep}"); [ $# -eq 0 ] && cmd=(sleep 0.013)
command -v hyperfine >/dev/null || { echo "hyperfine is not installed (apt-get install hyperfine)"; exit 1; }
bin=target/release/hugelab; [ -x "$bin" ] || cargo build --release -q
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for round in $(seq "${ROUNDS:-3}"); do
  "$bin" run --db "$tmp/h.db" --arm a= --arm b=env.HUGELAB_AA=1 --blocks 20 --warmup 2 --json ${HUGELAB_RUN_ARGS:-} -- "${cmd[@]}" >/dev/null 2>&1
  hyperfine -N -w 3 -r 40 --export-json "$tmp/hf$round.json" "${cmd[*]}" >/dev/null 2>&1
done
python3 - "$tmp" <<'PY'
import json, sqlite3, statistics as st, sys, glob
d = sys.argv[1]
w = [r[0] for r in sqlite3.connect(f"{d}/h.db").execute(
    "select m.value from metrics m join trials t on t.id = m.trial_id where t.block >= 0 and m.name = 'wall_s'")]
h = [t for f in sorted(glob.glob(f"{d}/hf*.json")) for t in json.load(open(f))["results"][0]["times"]]
def iqr(x):
    q = st.quantiles(x, n=4)
    return q[2] - q[0]
hm, hs = st.mean(h), st.stdev(h)
for name, x in (("hugelab  ", w), ("hyperfine", h)):
    print(f"{name} n={len(x)}  median {st.median(x)*1e3:.3f} ms  mean {st.mean(x)*1e3:.3f} ms"
          f"  sd {st.stdev(x)*1e3:.3f} ms  IQR {iqr(x)*1e3:.3f} ms")
print(f"hugelab median / hyperfine mean: {st.median(w)/hm:.3f}   spread ratio: sd {st.stdev(w)/hs:.2f},"
      f" IQR {iqr(w)/iqr(h):.2f}")
PY
