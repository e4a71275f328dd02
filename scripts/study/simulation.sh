#!/bin/bash
# The simulation study: every row of the statistics engine's study (coverage, A/A false
# positives, designs, run's own rows, judge's fleets, warm services, tails) at the size the
# test declares, as CI runs it. Stores its table in docs/study/simulation.txt, which
# docs/statistics.md quotes whole (tests/stats_simulation.rs checks both). Run it after a change
# to the statistics or the study, and copy the table into the docs between its markers.
#   scripts/study/simulation.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/study/simulation.txt
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# The test also fails when the stored table has another number of rows: the rows print first.
cargo test --release --test suite stats_simulation::simulation_study_meets_its_targets \
  -- --nocapture --exact > "$tmp" || true
# The first line, the size the study ran at, is the test's own.
header=$(grep -m1 '^# scripts/study/simulation.sh: ' "$tmp") || { cat "$tmp"; exit 1; }
rows=$(grep -v '^test ' "$tmp" | grep -E ' (ok|MISSED)$') || { cat "$tmp"; exit 1; }
{ echo "$header"; echo "$rows"; } > "$out"
cat "$out"
! grep -q ' MISSED$' "$out"
