#!/usr/bin/env bash
# The cost of a grab (issue 28): the CPU time every server process spends on one
# successful grab — `seckill serve` with its defaults (API and worker, the worker's
# share included by waiting until every order is persisted), Redis and PostgreSQL
# (postmaster and backends) — against one request to a hello-world server, the same
# client sending the same requests in the same run. `seckill-lab cost` does the
# measuring (CPU from /proc, Redis's commands from INFO commandstats); this script
# gives it throwaway servers: a Redis with its append-only file synced every second
# (what seckill's durability contract asks; SVC_REDIS_AOF=0 for none) and PostgreSQL.
# BEFORE=<git revision> measures that revision's seckill too, on the same servers in the
# same run, the two taking turns round by round (ROUNDS, default 3), so a change's
# effect is read against its own baseline.
#   bash scripts/bench/cost.sh                 # 3 rounds of 20,000 grabs, 64 in flight
#   bash scripts/bench/cost.sh --rounds 5 --grabs 50000 --json
#   BEFORE=74b2cb8 bash scripts/bench/cost.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export SVC_REDIS_AOF=${SVC_REDIS_AOF:-1}
. scripts/services.sh
start_services
bin=$SVC_DIR/bin
go build -o "$bin/" ./cmd/seckill ./cmd/seckill-lab ./cmd/internal/hello
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(go version | cut -d' ' -f3); $(redis-server --version | cut -d' ' -f3); $(psql --version | cut -d' ' -f3-)" >&2
psql -q "$SECKILL_TEST_DATABASE_URL" -c 'CREATE DATABASE cost'
export SECKILL_REDIS_URL=$SECKILL_TEST_REDIS_URL
export SECKILL_DATABASE_URL="postgres://postgres@127.0.0.1:$SECKILL_TEST_PG_PORT/cost?sslmode=disable"
if [ -z "${BEFORE:-}" ]; then
	# Not exec: the throwaway servers are stopped when this script exits.
	"$bin/seckill-lab" cost --seckill "$bin/seckill" --hello "$bin/hello" "$@"
	exit
fi
mkdir -p "$SVC_DIR/before" "$bin/before"
git archive "$BEFORE" | tar -x -C "$SVC_DIR/before"
(cd "$SVC_DIR/before" && go build -o "$bin/before/" ./cmd/seckill)
psql -q "$SECKILL_TEST_DATABASE_URL" -c 'CREATE DATABASE cost_before'
before_db="postgres://postgres@127.0.0.1:$SECKILL_TEST_PG_PORT/cost_before?sslmode=disable"
after="$(git log -1 --format='%h' HEAD)$(git diff --quiet HEAD -- . || echo ' with uncommitted changes')"
# Before and after take turns, one round each, ROUNDS times (default 3), so that what
# grows with the run (the servers' data, Redis's append-only file) weighs on both alike.
for round in $(seq "${ROUNDS:-3}"); do
	echo "== round $round, before: $(git log -1 --format='%h %s' "$BEFORE" | cut -c1-90)"
	SECKILL_DATABASE_URL=$before_db "$bin/seckill-lab" cost --seckill "$bin/before/seckill" --hello "$bin/hello" --rounds 1 "$@"
	echo "== round $round, after: $after"
	"$bin/seckill-lab" cost --seckill "$bin/seckill" --hello "$bin/hello" --rounds 1 "$@"
done
