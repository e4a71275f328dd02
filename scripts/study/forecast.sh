#!/bin/bash
# The forecast study: the half-way forecast's 90% range, drawn in every one of RUNS sized runs
# of each simulated warm-service process (the production tuning's code), tested one-sided
# against 90%. Stores its table in docs/study/forecast.txt, which docs/statistics.md quotes
# (tests/stats_simulation.rs checks both).
#   scripts/study/forecast.sh [RUNS]     (RUNS 1000 by default: enough to tell 85% from 90%)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-1000}
out=docs/study/forecast.txt
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
HUGELAB_FORECAST_RUNS=$runs cargo test --release --test suite \
  stats_simulation::forecast_study_at_full_size -- --ignored --nocapture --exact > "$tmp"
{ echo "# scripts/study/forecast.sh $runs: RANGE_LEVEL 90%, one-sided 5% test per row"
  grep '^forecast study' "$tmp"; } > "$out"
cat "$out"
