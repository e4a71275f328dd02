#!/usr/bin/env bash
# The stages in src/ depend only on stages above them in this list (docs/architecture.md);
# utilities (error, units, rng, metric, sys, options) may be used anywhere. Fails on any upward import.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=(stats model probe control backing workload collect store render analyze experiment commands cli)
# The engines beside experiment: each above render, below commands, and none imports another.
engines=(experiment bench fleet exporter stored_runs trace)
# The wings above the engines: each may read the engines (advice reads stored runs through
# stored_runs), and only commands import it.
wings=(advice)
status=0
# A stage's source: its folder or its file (grep fails on a path that does not exist, even
# where the other matched, so only the one that exists is given).
src_of() { if [ -d "src/$1" ]; then echo "src/$1"; else echo "src/$1.rs"; fi; }
# The statistics kernel sits below every stage: it imports the utilities and nothing else.
if hits=$(grep -rnE "crate::[a-z_]+" src/stats | grep -vE "crate::(rng|units|error|stats)\b"); then
  echo "the statistics kernel (src/stats) imports more than the utilities:"
  echo "$hits"
  status=1
fi
# Inherent methods live beside their type: an `impl Type {` in a file outside the module that
# defines Type (its file, or that file's own folder) is reported, unless scripts/impl-outside.allow
# lists it.
# One pass of awk over the allow list, the definitions and the impls (a process per impl took
# most of this script's time).
impls=$(awk '
  FILENAME == ARGV[1] { if ($0 !~ /^#/) allowed[$0] = 1; next }
  FILENAME == ARGV[2] { where[$1] = where[$1] (where[$1] == "" ? "" : " ") $2; next }
  !($1 in where) { next }
  {
    t = $1; f = $2; n = split(where[t], defined, " "); inside = 0
    for (i = 1; i <= n; i++) {
      base = defined[i]; sub(/\.rs$/, "", base); sub(/\/mod$/, "", base)
      if (f == defined[i] || index(f, base "/") == 1) inside = 1
    }
    if (!inside && !((t " " f) in allowed))
      printf "impl %s in %s:%s, outside the module that defines it (%s): move the methods beside the type\n", t, f, $3, where[t]
  }' <(cat scripts/impl-outside.allow 2>/dev/null) \
  <(grep -rnE "^\s*pub (struct|enum) [A-Z][A-Za-z0-9]*" src --include=*.rs \
    | sed -E 's/^([^:]*):[0-9]+:\s*pub (struct|enum) ([A-Za-z0-9]*).*/\3 \1/') \
  <(grep -rnE "^impl(<[^>]*>)? [A-Z][A-Za-z0-9]*(<[^>]*>)? \{" src --include=*.rs \
    | sed -E 's/^([^:]*):([0-9]+):impl(<[^>]*>)? ([A-Za-z0-9]*).*/\4 \1 \2/'))
if [ -n "$impls" ]; then
  echo "$impls"
  status=1
fi
if grep -rn 'crate::{' src >/dev/null; then
  echo "grouped 'use crate::{…}' imports hide which stage they reach; import each stage on its own line:"
  grep -rn 'crate::{' src
  status=1
fi
for i in "${!stages[@]}"; do
  s=${stages[$i]}
  path=src/$s; [ -d "$path" ] || path=src/$s.rs
  # One grep for every later stage first; each is searched on its own only when it finds one.
  later=$(IFS='|'; echo "${stages[*]:$((i + 1))}")
  [ -n "$later" ] && grep -rqE "crate::($later)\b" "$path" || continue
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
for e in "${engines[@]:1}"; do
  path=src/$e
  for up in commands cli; do
    if hits=$(grep -rnE "crate::$up\b" "$path"); then
      echo "engine '$e' imports '$up':"; echo "$hits"; status=1
    fi
  done
  for s in model probe control backing workload collect store render analyze; do
    if hits=$(grep -rnE "crate::$e\b" "$(src_of "$s")"); then
      echo "stage '$s' imports the engine '$e':"; echo "$hits"; status=1
    fi
  done
  for other in "${engines[@]}"; do
    [ "$other" = "$e" ] && continue
    if hits=$(grep -rnE "crate::$other\b" "$path"); then
      echo "engine '$e' imports the engine '$other' (move what they share down a stage):"; echo "$hits"; status=1
    fi
    if hits=$(grep -rnE "crate::$e\b" "src/$other"); then
      echo "engine '$other' imports the engine '$e' (move what they share down a stage):"; echo "$hits"; status=1
    fi
  done
done
for w in "${wings[@]}"; do
  for up in commands cli; do
    if hits=$(grep -rnE "crate::$up\b" "src/$w"); then
      echo "wing '$w' imports '$up':"; echo "$hits"; status=1
    fi
  done
  for below in "${stages[@]}" "${engines[@]}"; do
    [ "$below" = commands ] || [ "$below" = cli ] && continue
    if hits=$(grep -rnE "crate::$w\b" "$(src_of "$below")"); then
      echo "'$below' imports the wing '$w' (only commands do):"; echo "$hits"; status=1
    fi
  done
done
# analyze and render both read the records in model and sit side by side: render never computes
# (it cannot import analyze, above it), and analyze never words or draws (it must not import
# render, though the order would allow it).
# Renderers format what the record holds: they read the statistics' types through model, and
# never call the kernel.
if hits=$(grep -rnE "crate::stats\b" src/render); then
  echo "render imports the statistics kernel (read the record's numbers; compute them in analyze):"
  echo "$hits"
  status=1
fi
if hits=$(grep -rnE "crate::render\b" src/analyze); then
  echo "analyze imports render (analyze builds the record; the renderers read it):"
  echo "$hits"
  status=1
fi
# analyze is pure statistics: it may read records of the stages before it, but never the code
# that runs workloads.
if hits=$(grep -rnE "crate::workload\b" src/analyze); then
  echo "analyze imports workload (move the shared type to a utility module such as src/metric.rs):"
  echo "$hits"
  status=1
fi
# Commands read the system through probe/ and collect/ only: no /proc, /sys or /etc path in
# src/commands (a path in a comment or a message is fine; a string that starts one is not).
if hits=$(grep -rnE '(read_to_string|read_dir|File::open|exists)\(.*"/(proc|sys|etc)/|format!\("/(proc|sys|etc)/' src/commands); then
  echo "a command opens a system path itself (read it through probe::Root or probe::process::Proc):"
  echo "$hits"
  status=1
fi
# Only probe/ and collect/ read the system's files, and control/ writes its settings: no other
# stage opens a /proc, /sys or /etc path (test modules, `#[cfg(test)]` above `mod …`, may).
for dir in src/backing src/workload src/analyze src/store src/model src/render src/cli.rs; do
  if hits=$(find "$dir" -name '*.rs' -exec awk 'FNR == 1 { intest = 0 } prev ~ /^#\[cfg\(test\)\]/ && /^mod / { intest = 1 } { prev = $0 } !intest && /(read_to_string|read_dir|File::open|exists)\(.*"\/(proc|sys|etc)\/|format!\("\/(proc|sys|etc)\// { print FILENAME ":" FNR ": " $0 }' {} +); [ -n "$hits" ]; then
    echo "only probe/ and collect/ read system files (read it through probe::Root or probe::process::Proc):"
    echo "$hits"
    status=1
  fi
done
# Commands do not import each other; what two share lives in an engine room (stored_runs, …),
# src/options.rs or further down the stages.
for dir in src/commands/*; do
  name=${dir##*/}; name=${name%.rs}
  [ "$name" = mod ] && continue
  # One grep for every other command first; the pairs are searched only when it finds one.
  any=""
  for other in src/commands/*; do
    o=${other##*/}; o=${o%.rs}
    [ "$o" = mod ] || [ "$o" = "$name" ] && continue
    any="$any|crate::commands::$o\b|super::super::$o\b"
    [ -f "$dir" ] && any="$any|super::$o\b"
  done
  grep -rqE "${any#|}" "$dir" || continue
  for other in src/commands/*; do
    o=${other##*/}; o=${o%.rs}
    [ "$o" = mod ] || [ "$o" = "$name" ] && continue
    pat="crate::commands::$o\b|super::super::$o\b"
    [ -f "$dir" ] && pat="$pat|super::$o\b"
    if hits=$(grep -rnE "$pat" "$dir"); then
      echo "command '$name' imports command '$o' (move what they share to an engine room such as src/stored_runs/, src/options.rs or a lower stage):"
      echo "$hits"
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "layers: every import points down (${stages[*]}; engines ${engines[*]} side by side; wings ${wings[*]} above them); only probe and collect read system files; no command imports another"
exit $status
