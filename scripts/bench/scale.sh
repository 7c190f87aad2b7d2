#!/usr/bin/env bash
# What a routine operation costs as history grows: `seckill-lab seed` fills a throwaway
# PostgreSQL and Redis with 10 vouchers / 1,000 orders, then 10,000 vouchers /
# 1,000,000 orders (all in the first voucher, the popular sale), and for each this
# measures, against `seckill serve`:
#   - the stats of the popular voucher (GET /api/v1/vouchers/{id}/stats, median of 20),
#   - GET /api/v1/vouchers and GET /api/v1/orders (first page, median of 20),
#   - `seckill reconcile --voucher <popular>` (wall time),
#   - a warm-up after Redis lost everything (FLUSHALL, then serve restarted): when the
#     listener answers, when another voucher takes a grab, when the popular one does,
#   - the longest Redis command during each (SLOWLOG at slowlog-log-slower-than 10000,
#     i.e. every command over 10 ms is logged; LATENCY LATEST as well).
# It starts its own services (scripts/services.sh) and stops them on exit.
#   bash scripts/bench/scale.sh            # both scales
#   SCALES="10:1000" bash scripts/bench/scale.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/services.sh
start_services >/dev/null
scales=${SCALES:-"10:1000 10000:1000000"}
dir=$(mktemp -d /tmp/seckill-scale.XXXXXX)
serve_pid=
cleanup() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"; stop_services; }
trap cleanup EXIT
go build -o "$dir/" ./cmd/seckill ./cmd/seckill-lab
rcli() { redis-cli -p "$SVC_REDIS_PORT" "$@"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

export SECKILL_JWT_SECRET=$(head -c 32 /dev/urandom | base64)
export SECKILL_REDIS_URL="redis://127.0.0.1:$SVC_REDIS_PORT/0"
export SECKILL_PAYMENT_TIMEOUT=24h SECKILL_RECONCILE_INTERVAL=0 SECKILL_LOG_LEVEL=warn
admin=$("$dir/seckill" token --user 1 --admin)
user=$("$dir/seckill" token --user 2)

# slowest prints the longest command SLOWLOG holds, in ms, and its name; then resets it.
slowest() {
	rcli --json slowlog get 128 | python3 -c '
import json, sys
# Each entry: id, unix time, duration (us), the command words, client, client name.
entries = json.load(sys.stdin) or []
if entries:
    e = max(entries, key=lambda e: e[2])
    print(f"{e[2]/1000:.1f} ms ({e[3][0].lower()})")
else:
    print("none over 10 ms")'
	rcli slowlog reset >/dev/null
}
# median_ms URL [token] prints the median of 20 GETs, in ms.
median_ms() {
	for _ in $(seq 20); do
		curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer ${2:-$admin}" "$1"
	done | sort -n | sed -n 10p | awk '{printf "%.1f ms\n", $1*1000}'
}
start_serve() {
	SECKILL_HTTP_ADDR=$addr "$dir/seckill" serve >>"$dir/serve.log" 2>&1 &
	serve_pid=$!
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=; }
# until_ok PATH METHOD: ms until the request answers other than 503 / no connection.
until_ok() {
	local t0=$1 method=$2 path=$3 code
	for _ in $(seq 30000); do
		code=$(curl -s -o /dev/null -w '%{http_code}' -X "$method" -H "Authorization: Bearer $user" "http://$addr$path" || true)
		if [ "$code" != 000 ] && [ "$code" != 503 ]; then echo "$(($(now_ms) - t0)) ms ($code)"; return; fi
		sleep 0.02
	done
	echo "over 600 s"
}

echo "machine: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GB; $(uname -sr); shared with other jobs: $(cut -d' ' -f1-3 /proc/loadavg) load"
for scale in $scales; do
	nv=${scale%%:*} no=${scale##*:}
	db="scale$RANDOM"
	psql -q "postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable" -c "CREATE DATABASE $db"
	export SECKILL_DATABASE_URL="postgres://postgres@127.0.0.1:$SVC_PG_PORT/$db?sslmode=disable"
	rcli flushall >/dev/null
	"$dir/seckill" migrate up >/dev/null
	rcli config set slowlog-log-slower-than 10000 >/dev/null
	rcli config set latency-monitor-threshold 10 >/dev/null
	rcli slowlog reset >/dev/null; rcli latency reset >/dev/null
	t=$(now_ms)
	seed=$("$dir/seckill-lab" seed --vouchers "$nv" --orders "$no")
	echo "== $nv vouchers / $no orders"
	echo "seed: $(($(now_ms) - t)) ms $seed; slowest redis command: $(slowest)"
	hot=$(echo "$seed" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hot_voucher"])')
	other=$((hot + 1)); [ "$nv" = 1 ] && other=$hot

	addr=127.0.0.1:$(port)
	start_serve
	until_ok "$(now_ms)" GET /healthz >/dev/null
	echo "stats of the popular voucher: $(median_ms "http://$addr/api/v1/vouchers/$hot/stats"); slowest: $(slowest)"
	curl -s -H "Authorization: Bearer $admin" "http://$addr/api/v1/vouchers/$hot/stats"; echo
	echo "GET /api/v1/vouchers: $(median_ms "http://$addr/api/v1/vouchers"); slowest: $(slowest)"
	echo "GET /api/v1/orders: $(median_ms "http://$addr/api/v1/orders" "$user"); slowest: $(slowest)"
	t=$(now_ms)
	"$dir/seckill" reconcile --voucher "$hot" >"$dir/reconcile.out" 2>&1 && rc=0 || rc=$?
	echo "reconcile --voucher $hot: $(($(now_ms) - t)) ms, exit $rc ($(head -1 "$dir/reconcile.out")); slowest: $(slowest)"

	stop_serve
	rcli flushall >/dev/null; rcli slowlog reset >/dev/null
	t=$(now_ms)
	start_serve
	echo "warm-up after FLUSHALL: listener $(until_ok "$t" GET /healthz), another voucher grabs $(until_ok "$t" POST "/api/v1/vouchers/$other/grab"), the popular one $(until_ok "$t" POST "/api/v1/vouchers/$hot/grab"); slowest: $(slowest)"
	echo "LATENCY LATEST: $(rcli latency latest | tr '\n' ' ')"
	stop_serve
	# What serve logged besides the 503s the warm-up answers.
	grep -v '"status":503' "$dir/serve.log" | grep -v 'append-only file' | tail -5 | cut -c1-400 || true
	: >"$dir/serve.log"
done
