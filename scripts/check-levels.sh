#!/usr/bin/env bash
# One owner of the level: the default confidence and δ, and the arithmetic of a level (α = 1 −
# level, its tails, the Bonferroni split, Holm's steps), are written in src/stats/level.rs only;
# every other module asks a `Level` (docs/architecture.md). Fails on a second copy anywhere in
# src/ outside test modules. Usage: scripts/check-levels.sh [ROOT] (default: this repository).
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
owner=src/stats/level.rs
# 1 − level (or α/2, 1 − α/2) computed by hand; a default level or δ written as a literal.
arith='1\.0 - \(?([a-z_]+\.)*(confidence|conf|level|alpha)\b|0\.5 \+ ([a-z_]+\.)*(confidence|conf|level) / 2'
defaults='(default_value_t|unwrap_or)[ (=]+0\.99+\b|\b(confidence|conf|level)[a-z_]*: 0\.99+\b|unwrap_or\(0\.01\)|default_value_t = 0\.01\b'
status=0
while IFS= read -r f; do
  [ "$f" = "$owner" ] && continue
  case "$f" in */tests.rs | */tests/*) continue ;; esac
  # The file up to its test module (`#[cfg(test)]` above `mod …`): tests may plant levels.
  end=$(awk 'prev ~ /^#\[cfg\(test\)\]/ && $0 ~ /^mod / { print FNR - 2; found = 1; exit } { prev = $0 }
             END { if (!found) print NR }' "$f")
  hits=$(head -n "$end" "$f" | grep -nE "$arith|$defaults" | grep -vE '^[0-9]+:\s*//' || true)
  if [ -n "$hits" ]; then
    sed "s|^|$f:|" <<< "$hits"
    status=1
  fi
done < <(find src -name '*.rs' | sort)
if [ $status -ne 0 ]; then
  echo "a level's default or arithmetic written outside $owner: ask crate::stats::Level (alpha, tail, upper, split, holm_steps) or use its constants"
else
  echo "levels: the defaults and 1 − level are written in $owner only"
fi
exit $status
