#!/usr/bin/env bash
# The stages in src/ depend only on stages above them in this list (docs/architecture.md);
# utilities (error, units, rng, metric, sys) may be used anywhere. Fails on any upward import.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=(probe control backing workload collect analyze store model render commands cli)
status=0
if grep -rn 'crate::{' src >/dev/null; then
  echo "grouped 'use crate::{…}' imports hide which stage they reach; import each stage on its own line:"
  grep -rn 'crate::{' src
  status=1
fi
for i in "${!stages[@]}"; do
  s=${stages[$i]}
  path=src/$s; [ -d "$path" ] || path=src/$s.rs
  for j in "${!stages[@]}"; do
    [ "$j" -le "$i" ] && continue
    up=${stages[$j]}
    if hits=$(grep -rnE "crate::$up\b" "$path"); then
      echo "stage '$s' imports the later stage '$up':"
      echo "$hits"
      status=1
    fi
  done
done
# analyze is pure statistics: it may read records of the stages before it, but never the code
# that runs workloads.
if hits=$(grep -rnE "crate::workload\b" src/analyze); then
  echo "analyze imports workload (move the shared type to a utility module such as src/metric.rs):"
  echo "$hits"
  status=1
fi
[ $status -eq 0 ] && echo "layers: every import points down (${stages[*]})"
exit $status
