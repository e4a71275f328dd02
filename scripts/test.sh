#!/usr/bin/env bash
# README's test command: every test `cargo test --release` runs, in the same test binaries, with
# the integration suite (`suite`, tests/main.rs) started as soon as it is built. The library's
# and the binary's unit tests compile beside it at the lowest CPU priority and run after: on a
# 2-CPU machine their build held the suite back three minutes, and the suite spends much of
# its time waiting (on its knob lock, on servers, on sleeping children).
#
# Arguments are cargo test's, given to both: `scripts/test.sh NAME` runs the tests whose name
# holds NAME, `scripts/test.sh -- --ignored` the ignored ones. The suite's output streams as it
# runs; the unit tests' follows it. Exits non-zero when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test suite --no-run || exit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The suite, through cargo as `cargo test` runs it (its environment and working directory).
# Cargo holds the build directory's lock only while it builds: the unit tests' build starts once
# the suite's cargo has found its binary fresh and started it (its `Running` line).
{ cargo test --release --test suite "$@" 2>&1; echo $? > "$tmp/suite.rc"; } \
  | while IFS= read -r line; do
      printf '%s\n' "$line"
      [[ $line != *Running* ]] || : > "$tmp/started"
    done &
suite=$!
while [ ! -e "$tmp/started" ] && kill -0 "$suite" 2>/dev/null; do sleep 0.2; done
( nice -n 19 cargo test --release --lib --bins "$@" && nice -n 19 cargo test --release --doc "$@" ) \
  > "$tmp/unit.log" 2>&1 &
units=$!
wait "$suite"
wait "$units"; unit_status=$?
cat "$tmp/unit.log"
suite_status=$(cat "$tmp/suite.rc" 2>/dev/null || echo 1)
[ "$suite_status" -eq 0 ] || exit "$suite_status"
exit "$unit_status"
