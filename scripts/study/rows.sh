#!/bin/bash
# Markdown rows of stored runs, for the tables in docs/ that say what a design reached: one row per
# contrast of each run's primary metric, every figure read from `hugelab results show --json` (the
# record the run stored), nothing computed here but rounding.
#   scripts/study/rows.sh RESULTS.db[.xz] [RUN_ID...]   (every run in the file without ids)
# Needs jq and a built hugelab (HUGELAB, default target/release/hugelab).
set -euo pipefail
db=${1:?usage: scripts/study/rows.sh RESULTS.db[.xz] [RUN_ID...]}; shift
if [[ $db == *.xz ]]; then
  t=$(mktemp); trap 'rm -f "$t"' EXIT; xz -dc "$db" > "$t"; db=$t
fi
hl=${HUGELAB:-target/release/hugelab}
[ -x "$hl" ] || { echo "no hugelab at $hl: cargo build --release, or set HUGELAB" >&2; exit 2; }
ids=("$@")
[ ${#ids[@]} -gt 0 ] || mapfile -t ids < <("$hl" results list --db "$db" --json | jq -r '.[].run.id')
echo "| date | machine | run | design | blocks | units | time | contrast (99% unless said) | half-width | forecast after the pilot | at half-way (its resampled 90% range) | at the last sizing |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for id in "${ids[@]}"; do
  "$hl" results show "$id" --db "$db" --json | jq -r --arg id "$id" '
    def num: if fabs >= 1 then . * 10 | round / 10 else . * 100 | round / 100 end;
    def pct: . * 100 | num;
    def signed: if . >= 0 then "+\(num)" else "−\(- . | num)" end;
    .run as $run | .record as $rec | ($run.plan.server.warm // {}) as $w
    | ($rec.report.metrics | map(select(.contrasts | length > 0)) | first) as $m
    | ($w.forecast // {}) as $f
    | $m.contrasts[] as [$arm, $c]
    | "| \($run.created[:10]) | \($run.plan.system.cpu.logical_cpus) CPUs, \($run.plan.system.cpu.model_name) | \($id) | "
      + (if ($rec.replicas // 1) > 1 then "\($w.schedule // "warm"), \($rec.replicas) replicas" else ($w.schedule // "cold") end)
      + (if $w.burst_choice then ", \($w.burst_choice.secs) s bursts" + (if $w.burst_choice.pilot then " (from \($w.burst_choice.pilot.lengths | map("\(.secs) s") | join(" and ")))" else "" end) else "" end)
      + " | \($rec.facts.blocks) | \($m.lifetimes) \(if ($rec.replicas // 1) > 1 then "restarts" else "lifetimes" end) | \($rec.facts.elapsed_s | round) s"
      + " | \($arm) vs \($rec.report.baseline) \($m.metric.name) \($c.percent.point | signed)%"
      + (if $c.percent.lo == null then " (no interval)" else " [\($c.percent.lo | signed), \($c.percent.hi | signed)] @\($c.percent.confidence * 10000 | round / 100)%" end)
      + " \($c.verdict)"
      + " | \(if $c.half_width_percent == null then "—" else "±\($c.half_width_percent | num)%" end)"
      + " | \(if $f.pilot then "±\($f.pilot.half_width | pct)%" + (if $f.pilot.range then " (\($f.pilot.range[0] | pct)–\($f.pilot.range[1] | pct)%)" else "" end) else "—" end)"
      + " | \(if $f.half then "±\($f.half.half_width | pct)%" + (if $f.half.resampled then " (\($f.half.resampled[0] | pct)–\($f.half.resampled[1] | pct)%)" else "" end) else "—" end)"
      + " | \(if $f.last then "±\($f.last.half_width | pct)%" else "—" end) |"'
done
