#!/bin/bash
# How far `bench tlb`'s reach moves between runs on one host (docs/bench.md): runs of
# `hugelab bench tlb -q` stored in RESULTS.db, then one row per stored run, printed from what it
# stored (`results show --json`: the headline sweep's located range, as the bench printed it),
# and every range checked against every other. Nothing is computed here but that check.
#   scripts/study/tlb.sh measure RESULTS.db [RUNS [GAP]]  as root: RUNS (1) runs, GAP (0, in
#                                                         sleep's units) apart, then the rows
#   scripts/study/tlb.sh rows RESULTS.db[.xz]             the rows of every bench tlb stored there
# Needs jq and a built hugelab (HUGELAB, default target/release/hugelab).
set -euo pipefail
usage="usage: scripts/study/tlb.sh measure RESULTS.db [RUNS [GAP]] | rows RESULTS.db[.xz]"
mode=${1:?$usage}; db=${2:?$usage}
hl=${HUGELAB:-target/release/hugelab}
[ -x "$hl" ] || { echo "no hugelab at $hl: cargo build --release, or set HUGELAB" >&2; exit 2; }
case $mode in
  measure)
    runs=${3:-1}; gap=${4:-0}
    for i in $(seq "$runs"); do
      [ "$i" -gt 1 ] && sleep "$gap"
      "$hl" bench tlb --db "$db" -q >/dev/null
    done ;;
  rows) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
if [[ $db == *.xz ]]; then
  t=$(mktemp); trap 'rm -f "$t"' EXIT; xz -dc "$db" > "$t"; db=$t
fi
mapfile -t ids < <("$hl" results list --db "$db" --json \
  | jq -r '.[] | select(.run.plan.bench.workloads == ["tlb"]) | .run.id')
[ "${#ids[@]}" -gt 0 ] || { echo "$db: no bench tlb runs" >&2; exit 1; }
for id in "${ids[@]}"; do
  "$hl" results show "$id" --db "$db" --json \
    | jq -c '{created: .run.created, cpu: .bench.cpu, kernel: .bench.kernel,
              sweep: .bench.tlb.sweeps[.bench.tlb.headline]}'
done | jq -rs '
  def thousands: tostring | until(test("^[0-9]{4}") | not; sub("(?<a>[0-9])(?<b>[0-9]{3})(?<c>,|$)"; "\(.a),\(.b)\(.c)"));
  def range: "\(.[0] | thousands)–\(.[1] | thousands)";
  def pct: . * 1000 | round / 10 | tostring | sub("\\.0$"; "");
  map(.sweep.located as $l | . + {between: $l.between, level: $l.confidence, resolved: $l.resolved,
                                  no_knee: $l.no_knee, resamples: $l.resamples})
  | to_entries as $runs
  | "| \(.[0].cpu) (\(.[0].kernel)) | started (UTC) | 4k against | reach, entries of 4 KiB | located at | resolved |",
    "|---|---|---|---|---|---|",
    ($runs[] | .key as $i | .value
      | "| \($i + 1) | \(.created[:16] | sub("T"; " ")) | \(.sweep.backing) | \(.between | range) | \(.level | pct)% | "
        + (if .resolved then "yes" else "no" end)
        + (if .no_knee > 0 then " (\(.no_knee) of \(.resamples) resamples find no knee)" else "" end) + " |"),
    (([$runs[].value.between[0]] | max) as $lo | ([$runs[].value.between[1]] | min) as $hi
      | if $lo <= $hi then
          "Every range overlaps every other: all \($runs | length) hold \([$lo, $hi] | range) entries."
        else
          "Ranges that miss another: "
          + ([$runs[] | .key as $i | .value.between as $a
              | [$runs[] | select(.value.between[1] < $a[0] or .value.between[0] > $a[1]) | .key + 1] as $m
              | select($m | length > 0) | "\($i + 1) misses \($m | map(tostring) | join(", "))"] | join("; "))
          + " (of \($runs | length) runs)."
        end)'
