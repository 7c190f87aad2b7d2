#!/usr/bin/env bash
# The HTTP benchmarks with wrk as the client (installed with apt-get when missing and
# root): a hello-world Echo server (cmd/seckill/internal/hello) as the baseline, then
# `seckill serve` with its default settings answering grabs, every request a fresh
# user's (scripts/bench/wrk-grab.lua), then the sold-out answers of a voucher that
# sold out, to 1,000 users pressing again and to a fresh user each time. Expects the throwaway services of scripts/services.sh (bench.sh starts
# them). DURATION (default 10s), CONNECTIONS (64) and THREADS (2) tune wrk.
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
go build -o "$dir/hello" ./cmd/seckill/internal/hello
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

run() { # label path url
	echo "-- $1"
	WRK_PATH=$2 wrk -t "$threads" -c "$connections" -d "$duration" -s scripts/bench/wrk-grab.lua "$3$2" |
		grep -E 'Requests/sec|Latency|Non-2xx|requests in'
}
run "hello world (baseline)" /hello "http://$hello_addr"
id=$(voucher 10000000)
run "grab: every request a fresh user's reservation (202)" "/api/v1/vouchers/$id/grab" "http://$api_addr"
echo "reservations made: $(curl -sf "http://$api_addr/api/v1/vouchers/$id" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["stock"]-v["remaining"])')"
echo "grab answers so far: $(curl -sf "http://$api_addr/metrics" | grep '^seckill_grab_requests_total' | sed 's/seckill_grab_requests_total//' | tr '\n' ' ')"
gone=$(voucher 1)
curl -sf -XPOST "http://$api_addr/api/v1/vouchers/$gone/grab" -H "Authorization: Bearer $admin" >/dev/null
# The flood after a sell-out is the same users pressing again: 1,000 of them, each
# token sent again and again (as BenchmarkGrabSoldOut does), not a fresh user each time.
head -1000 "$dir/tokens" >"$dir/tokens-1000"
WRK_TOKENS="$dir/tokens-1000" run "grab of a sold-out voucher by 1,000 users pressing again (409 sold_out)" "/api/v1/vouchers/$gone/grab" "http://$api_addr"
WRK_TOKENS="$dir/tokens" run "grab of a sold-out voucher, a fresh user each time (409 sold_out)" "/api/v1/vouchers/$gone/grab" "http://$api_addr"
run "hello world again (baseline)" /hello "http://$hello_addr"
