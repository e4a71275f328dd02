#!/bin/bash
# The simulation study: every row of the statistics engine's study (coverage, A/A false
# positives, designs, run's own rows, judge's fleets, warm services, tails) at 4,000
# replications, about 7 CPU-minutes, too long for every CI run. Stores its table in
# docs/study/simulation.txt, which docs/statistics.md quotes whole, and the same study at 100
# replications in docs/study/simulation-check.txt, which CI reruns and compares row by row
# (tests/stats_simulation.rs): a change to the statistics or the study fails CI until this
# script has run again. Run it after such a change, and copy the table into the docs between
# its markers.
#   scripts/study/simulation.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# store TEST FILE ROW: TEST's printed table (its `# scripts/study/simulation.sh: ` header and
# its lines that match ROW) into docs/study/FILE. The tests also fail when the stored table
# has another number of rows: the rows print first, and a failing test's table is stored.
store() {
  cargo test --release --test suite "stats_simulation::$1" -- --include-ignored --nocapture --exact > "$tmp" || true
  local header rows
  header=$(grep -m1 '^# scripts/study/simulation.sh: ' "$tmp") || { cat "$tmp"; exit 1; }
  rows=$(grep -v '^test ' "$tmp" | grep -E "$3") || { cat "$tmp"; exit 1; }
  { echo "$header"; echo "$rows"; } > "docs/study/$2"
}
store simulation_study_meets_its_targets simulation.txt ' (ok|MISSED)$'
store the_stored_study_is_the_current_codes_rerun_at_100_replications simulation-check.txt ' -?[0-9]+\.[0-9]{4}$'
cat docs/study/simulation.txt
! grep -q ' MISSED$' docs/study/simulation.txt
