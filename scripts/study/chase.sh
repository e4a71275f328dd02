#!/bin/bash
# The TLB model against `bench chase` (docs/measurements.md): `bench tlb` places the reach of the
# 4 KiB TLB, `bench chase` measures THP and hugetlb-2m against 4k at region sizes around it, both
# stored; the table's rows are printed from the stored results (`hugelab results show --json`:
# each bench's whole result as it printed it). Nothing is computed here but rounding and the
# model's word for each size against the reach the timing placed.
#   scripts/study/chase.sh measure RESULTS.db    as root: both benches into RESULTS.db, then rows
#   scripts/study/chase.sh rows RESULTS.db[.xz]  the rows of the last two such benches stored there
# Needs jq and a built hugelab (HUGELAB, default target/release/hugelab).
set -euo pipefail
usage="usage: scripts/study/chase.sh measure|rows RESULTS.db[.xz]"
mode=${1:?$usage}; db=${2:?$usage}
hl=${HUGELAB:-target/release/hugelab}
[ -x "$hl" ] || { echo "no hugelab at $hl: cargo build --release, or set HUGELAB" >&2; exit 2; }
case $mode in
  measure)
    "$hl" bench tlb -b 4k,thp --db "$db" -q >/dev/null
    "$hl" bench chase -s 1M,2M,4M,6M,8M,12M,16M,24M,32M,64M,128M -b 4k,thp,hugetlb-2m -r 11 \
      --db "$db" -q >/dev/null ;;
  rows) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
if [[ $db == *.xz ]]; then
  t=$(mktemp); trap 'rm -f "$t"' EXIT; xz -dc "$db" > "$t"; db=$t
fi
list=$("$hl" results list --db "$db" --json)
tlb=$(jq -r '[.[] | select(.run.plan.bench.workloads == ["tlb"])] | last | .run.id' <<< "$list")
chase=$(jq -r '[.[] | select(.run.plan.bench.workloads == ["chase"])] | last | .run.id' <<< "$list")
[ "$tlb" != null ] && [ "$chase" != null ] || { echo "$db: no bench tlb and bench chase runs" >&2; exit 1; }
knee=$("$hl" results show "$tlb" --db "$db" --json | jq -c '.bench.tlb.sweeps[] | select(.backing == "thp") | .knee')
"$hl" results show "$chase" --db "$db" --json | jq -r --argjson knee "$knee" '
  def sig3: fabs as $a
    | if $a >= 100 then round elif $a >= 10 then . * 10 | round / 10
      elif $a >= 1 then . * 100 | round / 100 else . * 1000 | round / 1000 end;
  def thousands: tostring | until(test("^[0-9]{4}") | not; sub("(?<a>[0-9])(?<b>[0-9]{3})(?<c>,|$)"; "\(.a),\(.b)\(.c)"));
  def size: if . >= 1073741824 then "\(. / 1073741824)G" elif . >= 1048576 then "\(. / 1048576)M" else "\(. / 1024)K" end;
  def cell: if . == null then "—" else
      "\(.point | sig3) [\(.lo | sig3), \(.hi | sig3)] "
      + (if .hi < 1 then "better" elif .lo > 1 then "worse" else "~" end) end;
  .bench as $b
  | "| \($b.cpu) (\($b.kernel)), \(.run.created[:10]) | 4 KiB pages | predicted (reach \(if $knee then "\($knee[0] | thousands)–\($knee[1] | thousands)" else "not placed" end)) | THP / 4k | hugetlb-2m / 4k |",
    "|---|---|---|---|---|",
    ($b.cells | map(.size) | unique[] as $s
      | ($s / 4096) as $p
      | "| \($s | size) | \($p | thousands) | "
        + (if $knee == null then "?" elif $p < $knee[0] then "1" elif $p == $knee[0] then "1 (edge)"
           elif $p <= $knee[1] then "departs" else "< 1" end)
        + " | \([$b.cells[] | select(.size == $s and .backing == "thp")][0].vs_baseline | cell)"
        + " | \([$b.cells[] | select(.size == $s and .backing == "hugetlb-2m")][0].vs_baseline | cell) |")'
