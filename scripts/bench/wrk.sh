#!/usr/bin/env bash
# The HTTP benchmarks with wrk as the client (installed with apt-get when missing and
# root): a hello-world Echo server (cmd/internal/hello) as the baseline, then
# `seckill serve` with its default settings answering grabs, every request a fresh
# user's (scripts/bench/wrk-grab.lua), then the sold-out answers of a voucher that
# sold out, to 1,000 users pressing again and to a fresh user each time. Expects the
# throwaway services of scripts/services.sh (bench.sh starts them). DURATION (default
# 10s), CONNECTIONS (64) and THREADS (2) tune wrk.
#
# After each run it prints where the machine's CPU went, per answered request: the
# server's process, Redis, and PostgreSQL (its postmaster and every backend), user +
# system time from /proc, beside the CPU time the machine's cores had for each request
# at that rate (wrk took the rest). Where all of them share the cores, that budget, not
# the service alone, bounds the rate.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/services.sh # apt_install
command -v wrk >/dev/null || apt_install wrk
duration=${DURATION:-10s} connections=${CONNECTIONS:-64} threads=${THREADS:-2}
dir=$(mktemp -d /tmp/seckill-wrk.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

go build -o "$dir/seckill" ./cmd/seckill
go build -o "$dir/hello" ./cmd/internal/hello
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hello_addr=127.0.0.1:$(port) api_addr=127.0.0.1:$(port)

export SECKILL_JWT_SECRET=$(head -c 32 /dev/urandom | base64)
export SECKILL_REDIS_URL="$SECKILL_TEST_REDIS_URL"
createdb_url="postgres://postgres@127.0.0.1:$SECKILL_TEST_PG_PORT/postgres?sslmode=disable"
db="wrk$RANDOM"
psql -q "$createdb_url" -c "CREATE DATABASE $db"
export SECKILL_DATABASE_URL="postgres://postgres@127.0.0.1:$SECKILL_TEST_PG_PORT/$db?sslmode=disable"
export SECKILL_KEY_PREFIX="wrk$RANDOM"
"$dir/seckill" migrate up >/dev/null

"$dir/hello" "$hello_addr" & pids+=($!)
SECKILL_HTTP_ADDR=$api_addr SECKILL_ROLES=${ROLES:-api,worker} "$dir/seckill" serve >"$dir/serve.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -sf "http://$api_addr/readyz" >/dev/null && break; sleep 0.1; done

admin=$("$dir/seckill" token --user 1 --admin)
voucher() { # stock → id
	curl -sS -XPOST "http://$api_addr/api/v1/vouchers" -H "Authorization: Bearer $admin" \
		-d "{\"title\":\"wrk\",\"stock\":$1,\"begins_at\":\"2020-01-01T00:00:00Z\",\"ends_at\":\"2099-01-01T00:00:00Z\"}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' || { tail -5 "$dir/serve.log" >&2; exit 1; }
}
"$dir/seckill" token --user 100000 --count 400000 >"$dir/tokens"
export WRK_TOKENS="$dir/tokens" WRK_THREADS=$threads

# CPU time so far, in clock ticks, of the processes given and of their children.
ticks() {
	local t=0 pid
	for pid in "$@" $(ps -o pid= --ppid "$(echo "$@" | tr ' ' ,)" 2>/dev/null); do
		[ -r "/proc/$pid/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$t"
}
redis_pid=$(redis-cli -p "$SECKILL_TEST_REDIS_PORT" INFO server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}')
pg_pid=$(head -1 "$(psql -Atc 'SHOW data_directory' "$createdb_url")/postmaster.pid")
hz=$(getconf CLK_TCK)

run() { # label path url server_pid
	echo "-- $1"
	local before=($(ticks "$4") $(ticks "$redis_pid") $(ticks "$pg_pid")) out
	out=$(WRK_PATH=$2 wrk -t "$threads" -c "$connections" -d "$duration" -s scripts/bench/wrk-grab.lua "$3$2")
	local after=($(ticks "$4") $(ticks "$redis_pid") $(ticks "$pg_pid"))
	grep -E 'Requests/sec|Latency|Non-2xx|requests in' <<<"$out"
	awk -v n="$(awk '/requests in/ {print $1}' <<<"$out")" -v secs="$(awk '/requests in/ {print $4 + 0}' <<<"$out")" \
		-v hz="$hz" -v cores="$(nproc)" -v s=$((after[0] - before[0])) -v r=$((after[1] - before[1])) \
		-v p=$((after[2] - before[2])) 'BEGIN {
		us = 1e6 / n / hz
		printf "    CPU per request (µs): server %.1f, redis %.1f, postgres %.1f; the %d cores had %.1f a request (wrk took the rest)\n",
			s * us, r * us, p * us, cores, cores * secs * 1e6 / n }'
}

# drained waits until the worker has persisted every reservation of voucher $1, so
# that the next run does not share the cores with its backlog.
drained() {
	for _ in $(seq 600); do
		[ "$(curl -sf "http://$api_addr/api/v1/vouchers/$1/stats" -H "Authorization: Bearer $admin" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["pending"])')" = 0 ] && return
		sleep 0.2
	done
	echo "voucher $1: the worker did not drain its backlog in 2 minutes" >&2
	return 1
}

hello_pid=${pids[0]} api_pid=${pids[1]}
run "hello world (baseline)" /hello "http://$hello_addr" "$hello_pid"
id=$(voucher 10000000)
run "grab: every request a fresh user's reservation (202)" "/api/v1/vouchers/$id/grab" "http://$api_addr" "$api_pid"
echo "reservations made: $(curl -sf "http://$api_addr/api/v1/vouchers/$id" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["stock"]-v["remaining"])')"
echo "grab answers so far: $(curl -sf "http://$api_addr/metrics" | grep '^seckill_grab_requests_total' | sed 's/seckill_grab_requests_total//' | tr '\n' ' ')"
drained "$id"
gone=$(voucher 1)
curl -sf -XPOST "http://$api_addr/api/v1/vouchers/$gone/grab" -H "Authorization: Bearer $admin" >/dev/null
# The flood after a sell-out is the same users pressing again: 1,000 of them, each
# token sent again and again (as BenchmarkGrabSoldOut does), not a fresh user each time.
head -1000 "$dir/tokens" >"$dir/tokens-1000"
WRK_TOKENS="$dir/tokens-1000" run "grab of a sold-out voucher by 1,000 users pressing again (409 sold_out)" "/api/v1/vouchers/$gone/grab" "http://$api_addr" "$api_pid"
WRK_TOKENS="$dir/tokens" run "grab of a sold-out voucher, a fresh user each time (409 sold_out)" "/api/v1/vouchers/$gone/grab" "http://$api_addr" "$api_pid"
run "hello world again (baseline)" /hello "http://$hello_addr" "$hello_pid"
