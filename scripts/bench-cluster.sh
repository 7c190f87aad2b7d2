#!/usr/bin/env bash
# The figures of BENCHMARKS.md's "Redis Cluster" section, each next to its baseline in
# the same run: the grab path (the reserve script, the HTTP endpoint, a burst and
# sustained grabs through `seckill-lab loadtest`) on a three-master Redis Cluster against
# one Redis server, and what idle instances cost Redis with 10,000 registered but ended
# vouchers (against BASELINE_REF's, when given). Takes about ten minutes.
#   bash scripts/bench-cluster.sh
#   BASELINE_REF=<commit> bash scripts/bench-cluster.sh   # idle cost of that commit too
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
start_services
start_cluster
benchtime=${BENCHTIME:-3s}
single=$SECKILL_TEST_REDIS_URL

for target in single cluster; do
	if [ "$target" = cluster ]; then export SECKILL_TEST_REDIS_URL=cluster; else export SECKILL_TEST_REDIS_URL=$single; fi
	echo
	echo "== $target: reserve script through go-redis (go test -bench Reserve)"
	go test -run '^$' -bench 'Reserve' -benchtime "$benchtime" ./adapters/redisstore/ | grep -E '^Benchmark'
	echo "== $target: sustained grabs through the HTTP endpoint (go test -bench 'Grab$')"
	go test -run '^$' -bench 'Grab$' -benchtime "$benchtime" ./adapters/httpapi/ | grep -E '^Benchmark'
done
export SECKILL_TEST_REDIS_URL=$single

# loadtest_on URL LABEL: one `serve` of this tree on the Redis at URL and a database of
# its own; a burst (5,000 users, 1% twice, 100 units, 1,000 in flight) and sustained
# grabs (20,000 users, 20,000 units: every grab a reservation, 200 in flight), each
# followed to the database by `seckill-lab loadtest`.
loadtest_on() {
	local url=$1 label=$2 addr name pid
	name=load_$RANDOM
	psql -q "postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable" -c "CREATE DATABASE $name"
	addr=127.0.0.1:$(free_port)
	export SECKILL_REDIS_URL=$url SECKILL_DATABASE_URL="postgres://postgres@127.0.0.1:$SVC_PG_PORT/$name?sslmode=disable" \
		SECKILL_JWT_SECRET=bench-secret-0123456789abcdef SECKILL_LOG_LEVEL=error SECKILL_KEY_PREFIX=$name \
		SECKILL_USER_RATE=0 SECKILL_IP_RATE=0
	"$bin" migrate up >/dev/null
	SECKILL_HTTP_ADDR=$addr "$bin" serve >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
	echo "-- $label: burst"
	"$lab" loadtest --url "http://$addr" --users 5000 --stock 100 --dup 0.01 --concurrency 1000
	echo "-- $label: sustained"
	"$lab" loadtest --url "http://$addr" --users 20000 --stock 20000 --dup 0 --concurrency 200
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	unset SECKILL_REDIS_URL SECKILL_DATABASE_URL SECKILL_JWT_SECRET SECKILL_LOG_LEVEL SECKILL_KEY_PREFIX SECKILL_USER_RATE SECKILL_IP_RATE
}

bin="$SVC_DIR/seckill" lab="$SVC_DIR/seckill-lab"
go build -o "$SVC_DIR/" ./cmd/seckill ./cmd/seckill-lab
echo
echo "== seckill-lab loadtest against one serve: one Redis server, then the cluster, twice"
for round in 1 2; do
	loadtest_on "$single" "one server (round $round)"
	loadtest_on "$SECKILL_TEST_REDIS_CLUSTER_URL" "cluster (round $round)"
done

# idle_cost BIN LABEL: three idle `serve` processes of BIN on a fresh Redis with 10,000
# vouchers whose sale has ended (their keys live on for SECKILL_KEY_GRACE); prints the
# commands a second Redis runs.
idle_cost() {
	local bin=$1 label=$2 port db addrs=() pids=() i
	port=$(free_port)
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
		--dir "$SVC_DIR" --pidfile "$SVC_DIR/idle.pid" --logfile "$SVC_DIR/idle.log" >/dev/null
	for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	local name=idle_$RANDOM
	psql -q "postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable" -c "CREATE DATABASE $name"
	db="postgres://postgres@127.0.0.1:$SVC_PG_PORT/$name?sslmode=disable"
	export SECKILL_REDIS_URL="redis://127.0.0.1:$port/0" SECKILL_DATABASE_URL=$db \
		SECKILL_JWT_SECRET=bench-secret-0123456789abcdef SECKILL_LOG_LEVEL=error SECKILL_IP_RATE=0
	"$bin" migrate up >/dev/null
	for i in 1 2 3; do
		addrs+=("127.0.0.1:$(free_port)")
		SECKILL_HTTP_ADDR=${addrs[-1]} "$bin" serve >/dev/null 2>&1 &
		pids+=($!)
	done
	for _ in $(seq 1 100); do curl -sf "http://${addrs[0]}/readyz" >/dev/null && break; sleep 0.1; done
	# 10,000 vouchers on sale for the next 40 seconds, created through the API.
	python3 - "${addrs[0]}" "$("$bin" token --user 1 --admin)" <<'PY'
import datetime, http.client, json, sys
host, token = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)
body = json.dumps({"title": "ended", "stock": 10, "begins_at": (now - datetime.timedelta(minutes=1)).isoformat(),
                   "ends_at": (now + datetime.timedelta(seconds=40)).isoformat()})
c = http.client.HTTPConnection(host)
for i in range(10000):
    c.request("POST", "/api/v1/vouchers", body, {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 201:
        sys.exit("create voucher: %d" % r.status)
PY
	echo "$label: 10,000 vouchers created; waiting for their sale to end and 20 s more"
	sleep 60
	local before after
	before=$(redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p')
	sleep 10
	after=$(redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p')
	echo "$label: $(( (after - before - 1) / 10 )) Redis commands a second, three idle instances, 10,000 ended vouchers"
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	unset SECKILL_REDIS_URL SECKILL_DATABASE_URL SECKILL_JWT_SECRET SECKILL_LOG_LEVEL SECKILL_IP_RATE
}

echo
echo "== idle cost: three idle instances, 10,000 registered vouchers whose sale ended"
idle_cost "$bin" "this tree"
if [ -n "${BASELINE_REF:-}" ]; then
	mkdir -p "$SVC_DIR/baseline"
	git archive "$BASELINE_REF" | tar -x -C "$SVC_DIR/baseline"
	(cd "$SVC_DIR/baseline" && go build -o "$SVC_DIR/seckill-baseline" ./cmd/seckill)
	idle_cost "$SVC_DIR/seckill-baseline" "baseline $BASELINE_REF"
fi
