#!/usr/bin/env bash
# Reproduces BENCHMARKS.md: every figure with its same-run baseline, against a
# throwaway Redis and PostgreSQL (see scripts/services.sh). Takes a few minutes.
#   bash scripts/bench.sh            # all sections
#   BENCHTIME=5s bash scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
start_services
benchtime=${BENCHTIME:-3s}

echo "== machine"
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
go version
redis-server --version | cut -d' ' -f1-3
psql --version

echo
echo "== Redis baseline: redis-benchmark EVALSHA of reserve.lua (50 clients, no pipelining)"
rc() { redis-cli -p "$SVC_REDIS_PORT" "$@"; }
# As the service loads it: the shared prelude, then the script (see scripts.go).
sha=$(rc SCRIPT LOAD "$(cat adapters/redisstore/prelude.lua adapters/redisstore/reserve.lua)")
now=$(($(date +%s) * 1000))
rc HSET 'bench:{v1}:meta' stock 1000000000 remaining 1000000000 begins $((now - 60000)) ends $((now + 3600000)) limit 1 expire $((now + 7200000)) >/dev/null
# Every call is a batch of one: a fresh user's successful reservation; no per-user
# rate, no backlog bound, no user index (index_ttl 0).
redis-benchmark -p "$SVC_REDIS_PORT" -q -n 200000 -c 50 -r 1000000000 \
	EVALSHA "$sha" 4 'bench:{v1}:meta' 'bench:{v1}:buyers' 'bench:{v1}:orders' 'bench:{v1}:stream' \
	1 0 0 0 fulfil 0 __rand_int__ o__rand_int__ 1 "$now" ''
echo "reservations made: $(rc XLEN 'bench:{v1}:stream')"
rc UNLINK 'bench:{v1}:meta' 'bench:{v1}:buyers' 'bench:{v1}:orders' 'bench:{v1}:stream' >/dev/null

echo
echo "== adapter level: the same script through go-redis, batched and one call per grab (go test -bench Reserve)"
go test -run '^$' -bench 'Reserve' -benchtime "$benchtime" ./adapters/redisstore/

echo
echo "== HTTP level: grab endpoint (limits off, limits on, sold out) vs a hello-world Echo handler"
go test -run '^$' -bench 'HelloWorld|Grab' -benchtime "$benchtime" ./adapters/httpapi/

echo
echo "== PostgreSQL baseline: pgbench, one client, single-row INSERT of an order row"
db="postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable"
psql -q "$db" -c 'CREATE TABLE bench_orders (id text PRIMARY KEY, voucher_id bigint NOT NULL, user_id bigint NOT NULL, quantity int NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())'
cat >"$SVC_DIR/insert.sql" <<'SQL'
INSERT INTO bench_orders (id, voucher_id, user_id, quantity, status, created_at) VALUES (md5(random()::text), 1, (random()*1e9)::bigint, 1, 'awaiting_payment', now());
SQL
pgbench -n -c 1 -T 10 -f "$SVC_DIR/insert.sql" "$db" 2>/dev/null | grep -E 'tps|latency average'

echo
echo "== fulfillment: stream to committed rows, batch sizes 1, 10, 100 (one worker)"
go test -run '^$' -bench 'Fulfill|Drain' -benchtime "$benchtime" ./cmd/seckill/
go test -run '^$' -bench 'Persist' -benchtime "$benchtime" ./adapters/sqlstore/

echo
echo "== the reference burst, 5,000 grabs each on its own connection, vs the same burst at a hello-world server"
go test -run '^$' -bench 'Burst' -benchtime 5x -v ./cmd/seckill/ | grep -E '^Benchmark|reserve calls|^(ok|FAIL)'
echo "-- the same, on a machine whose CPUs other processes keep busy (one spinning shell per CPU)"
hogs=()
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & hogs+=($!); done
go test -run '^$' -bench 'Burst' -benchtime 5x -v ./cmd/seckill/ | grep -E '^Benchmark|reserve calls|^(ok|FAIL)'
kill "${hogs[@]}"
echo "-- the burst tests, 5 runs (quiet and busy machine)"
go test -run 'TestReferenceBurst' -count 5 -v ./cmd/seckill/ | grep -E 'cleared|^(ok|FAIL)'

echo
echo "== wrk: sustained grabs on keep-alive connections vs a hello-world Echo POST (serve's defaults, real Redis and PostgreSQL)"
bash scripts/bench/wrk.sh

echo
echo "== the cost of a grab: CPU of the service, Redis and PostgreSQL per successful grab vs a hello-world request"
bash scripts/bench/cost.sh

echo
echo "== the classic comparison: seckill-lab compare"
bin="$SVC_DIR/seckill" lab="$SVC_DIR/seckill-lab"
go build -o "$SVC_DIR/" ./cmd/seckill ./cmd/seckill-lab
export SECKILL_REDIS_URL="$SECKILL_TEST_REDIS_URL"
psql -q "$db" -c 'CREATE DATABASE demo'
export SECKILL_DATABASE_URL="postgres://postgres@127.0.0.1:$SVC_PG_PORT/demo?sslmode=disable"
"$bin" migrate up >/dev/null
"$lab" compare --users 5000 --stock 100
"$lab" compare --users 50000 --stock 10000 --timeout 120s

echo
echo "== the zero-setup mode: SQLite and the in-process Redis next to the real servers"
# The repositories on a SQLite file, next to the PostgreSQL figures above.
SECKILL_TEST_DATABASE_URL=sqlite go test -run '^$' -bench 'Persist' -benchtime "$benchtime" ./adapters/sqlstore/
# The default demo (5,000 users, 100 units), three runs on the real servers, then three
# with nothing configured (an in-process Redis and a temporary SQLite file).
demo_json() { "$lab" demo --json 2>/dev/null | python3 -c 'import json,sys; m=json.load(sys.stdin); print("reserved %(reserved)d persisted %(orders_persisted)d oversold %(oversold)d duplicates %(duplicates)d  rps %(rps).0f  p50 %(p50_ms).2f ms  p99 %(p99_ms).2f ms  persist %(persist_ms)d ms" % m)'; }
for run in 1 2 3; do echo "real servers: $(demo_json)"; done
for run in 1 2 3; do echo "zero setup:   $(unset SECKILL_REDIS_URL SECKILL_DATABASE_URL; demo_json)"; done
# The classic comparison with nothing installed: the "postgres" strategy runs its
# transaction on the SQLite file.
(unset SECKILL_REDIS_URL SECKILL_DATABASE_URL; "$lab" compare --users 5000 --stock 100 2>/dev/null)
