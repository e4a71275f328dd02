#!/usr/bin/env bash
# A trial's evidence is built once: where the trial ends, whole, with what its block adds passed
# in (src/experiment/trial/end.rs), never patched after it is built. Fails on an assignment to a
# field of the evidence (`evidence.x = …`, `t.evidence.gathered.noise.as_mut()`, `&mut Evidence`)
# anywhere in the code that builds, stores or reads trials, outside test modules.
# Usage: scripts/check-evidence.sh [ROOT] (default: this repository).
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
# Where trial evidence is built, stored and read (the fleet's judgement has an evidence of its own).
where=(src/experiment src/bench src/collect/trial.rs src/store src/stored_runs src/commands
       src/model/evidence.rs)
value='\b(ev|evidence|gathered)(\.[a-z_]+)+'
assign="$value"' *([-+*|&]?=[^=])'
mutate="$value"'\.(clone_from|as_mut|get_or_insert|get_or_insert_with|push|insert|extend|retain|take|replace)\('
borrow='&mut (crate::(store|model::evidence)::)?(Trial)?Evidence\b'
status=0
while IFS= read -r f; do
  case "$f" in */tests.rs | */tests/*) continue ;; esac
  # The file up to its test module (`#[cfg(test)]` above `mod …`): tests may build as they like.
  end=$(awk 'prev ~ /^#\[cfg\(test\)\]/ && $0 ~ /^mod / { print FNR - 2; found = 1; exit } { prev = $0 }
             END { if (!found) print NR }' "$f")
  hits=$(head -n "$end" "$f" | grep -nE "$assign|$mutate|$borrow" | grep -vE '^[0-9]+:\s*//' || true)
  if [ -n "$hits" ]; then
    sed "s|^|$f:|" <<< "$hits"
    status=1
  fi
done < <(find "${where[@]}" -name '*.rs' 2>/dev/null | sort)
if [ $status -ne 0 ]; then
  echo "a trial's evidence patched after it was built: build it whole where the trial ends (src/experiment/trial/end.rs), passing in what the block adds (its Beside)"
else
  echo "evidence: every trial's evidence is built whole, nothing patched after"
fi
exit $status
