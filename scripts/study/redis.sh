#!/bin/bash
# The two Redis runs docs/services-study.md quotes, stored in RESULTS.db: the preset's arms over
# 30 blocks of SET/GET, and the same with a BGSAVE inside every burst (`--during`), each server
# filled with about 500 MB first; then each run's answer as `hugelab results show` prints it
# from what the run stored, up to its tables (the docs quote exactly that, and tests/study.rs
# holds them to it).
#   scripts/study/redis.sh RESULTS.db              (runs both, then shows them)
#   scripts/study/redis.sh show RESULTS.db[.xz] [RUN_ID...]   (every run in the file without ids)
# The show drops the heading's note that the run was written by another build of hugelab, and
# stops where the tables begin (the first empty line).
# Needs root (the preset switches THP and restores it), redis-server, redis-benchmark and
# redis-cli, and jq; HUGELAB names the binary (target/release/hugelab).
set -euo pipefail
hl=$(realpath -m "${HUGELAB:-target/release/hugelab}")
[ -x "$hl" ] || { echo "no hugelab at $hl: cargo build --release, or set HUGELAB" >&2; exit 2; }
show() {
  local db=$1; shift
  if [[ $db == *.xz ]]; then
    t=$(mktemp); trap 'rm -f "$t"' EXIT; xz -dc "$db" > "$t"; db=$t
  fi
  local ids=("$@")
  [ ${#ids[@]} -gt 0 ] || mapfile -t ids < <("$hl" results list --db "$db" --json | jq -r '.[].run.id')
  for id in "${ids[@]}"; do
    "$hl" results show "$id" --db "$db" | grep -v '^note: this run was written by ' | awk '!NF { done = 1 } !done'
  done
}
if [ "${1:-}" = show ]; then
  shift; show "${1:?usage: scripts/study/redis.sh show RESULTS.db[.xz] [RUN_ID...]}" "${@:2}"
  exit
fi
db=$(realpath -m "${1:?usage: scripts/study/redis.sh RESULTS.db}")
for t in redis-server redis-benchmark redis-cli jq; do
  command -v "$t" >/dev/null || { echo "no $t (apt-get install redis-server redis-tools jq)" >&2; exit 2; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
server() { echo "redis-server --port $1 --bind 127.0.0.1 --save \"\" --appendonly no --dir $work"; }
before=$("$hl" results list --db "$db" --json 2>/dev/null | jq 'length' || echo 0)
"$hl" run -q --db "$db" --preset redis --server "$(server 6390)" --blocks 30 \
  -- redis-benchmark -p 6390 -q --csv -t set,get -n 100000 -d 1024 -r 1000000 -P 16 >/dev/null
"$hl" run -q --db "$db" --preset redis --server "$(server 6395)" \
  --server-warmup 'redis-benchmark -p {port} -q -t set -n 500000 -d 1024 -r 500000 -P 32 > /dev/null' \
  --during 'redis-cli -p {port} bgsave' --during-at 300ms --blocks 10 --lifetime-blocks 1 \
  -- redis-benchmark -p 6395 -q --csv -t set -n 200000 -d 1024 -r 500000 -P 16 >/dev/null || true
mapfile -t ids < <("$hl" results list --db "$db" --json | jq -r --argjson n "$before" '.[$n:][].run.id')
show "$db" "${ids[@]}"
