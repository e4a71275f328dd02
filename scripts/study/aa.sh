#!/bin/bash
# A PostgreSQL A/A as docs/services-study.md's tables ran it: two servers on copies of one
# cluster (scale 20, shared_buffers=512MB), `pgbench -S -c 2 -j 2` in bursts, stored in
# RESULTS.db; then its rows, printed by scripts/study/rows.sh from what the runs stored.
#   scripts/study/aa.sh RESULTS.db [MAX_TIME [RUNS]]     (MAX_TIME 5m, RUNS 1 by default)
# Needs root (the servers run as the postgres user), PostgreSQL's server binaries and pgbench,
# and jq. SCALE (20) sizes the cluster; HUGELAB names the binary (target/release/hugelab);
# BURST (seconds) fixes each load burst, which the run otherwise calibrates (the tables did);
# BLOCKS ends each run after that many blocks, if MAX_TIME has not ended it first.
set -euo pipefail
usage="usage: scripts/study/aa.sh RESULTS.db [MAX_TIME [RUNS]]"
db=$(realpath -m "${1:?$usage}"); max=${2:-5m}; runs=${3:-1}; scale=${SCALE:-20}
hl=$(realpath -m "${HUGELAB:-target/release/hugelab}")
[ -x "$hl" ] || { echo "no hugelab at $hl: cargo build --release, or set HUGELAB" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/postgres" ] || { echo "no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 2; }
work=$(mktemp -d); chown postgres "$work"
trap '[ -f "$work/data/postmaster.pid" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1; rm -rf "$work"' EXIT
as_pg() { runuser -u postgres -- "$@"; }
# The cluster both arms copy (--server-data), filled for pgbench once.
as_pg "$bin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
as_pg "$bin/pg_ctl" -D "$work/data" -o "-k $work -p 5499 -c listen_addresses=" -w -l "$work/setup.log" start >/dev/null
as_pg "$bin/pgbench" -q -i -s "$scale" -h "$work" -p 5499 postgres 2>/dev/null
as_pg "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null
before=$("$hl" results list --db "$db" --json 2>/dev/null | jq 'length' || echo 0)
for _ in $(seq "$runs"); do
  "$hl" run --user postgres -q --db "$db" --max-time "$max" ${BURST:+--burst "${BURST}s"} ${BLOCKS:+--blocks "$BLOCKS"} \
    -a a=server.arg=-c,server.arg=huge_pages=off -a b=server.arg=-c,server.arg=huge_pages=off \
    --server-data "$work/data" --ready 'log:database system is ready to accept connections' \
    --server "$bin/postgres -D {dir}/data -p {port} -k {dir} -c listen_addresses= -c shared_buffers=512MB" \
    -- "$bin/pgbench" -S -T '{burst}' -c 2 -j 2 -h '{dir}' -p '{port}' postgres >/dev/null
done
mapfile -t ids < <("$hl" results list --db "$db" --json | jq -r --argjson n "$before" '.[$n:][].run.id')
"$(dirname "$0")/rows.sh" "$db" "${ids[@]}"
