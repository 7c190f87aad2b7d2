#!/usr/bin/env bash
# What exporting a sale's orders costs: `seckill-lab seed` fills a throwaway PostgreSQL
# (or SQLite file) and Redis with one sale of 1,000,000 orders (70% paid, 20% awaiting
# payment, 10% cancelled), then, against `seckill serve`, this measures in alternating
# rounds:
#   - the baseline: psql's \copy of the same rows, in the same order, to /dev/null (on
#     SQLite the sqlite3 shell's CSV output of them, when sqlite3 is installed);
#   - the export: GET /api/v1/vouchers/{id}/orders with Accept: text/csv through curl,
#     every row counted; and the same filtered to the cancelled orders (10%);
#   - serve's memory: VmRSS from /proc before the export, its peak while the export
#     runs (sampled every 50 ms) and after;
#   - grabs of another voucher, one at a time, before and during an export: their
#     median and slowest answer, and how long until the last is persisted (the export
#     must hold up neither).
# It starts its own services (scripts/services.sh) and stops them on exit.
#   bash scripts/bench/export.sh                 # PostgreSQL, 1,000,000 orders, 3 rounds
#   DB=sqlite ROUNDS=2 bash scripts/bench/export.sh  # a SQLite file (serve with a Redis server)
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/services.sh
start_services >/dev/null
orders=${ORDERS:-1000000} rounds=${ROUNDS:-3} kind=${DB:-postgres}
dir=$(mktemp -d /tmp/seckill-export.XXXXXX)
serve_pid= sampler=
cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
	stop_services
}
trap cleanup EXIT
go build -o "$dir/" ./cmd/seckill ./cmd/seckill-lab
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/{print $2}' "/proc/$serve_pid/status"; }

export SECKILL_JWT_SECRET=$(head -c 32 /dev/urandom | base64)
export SECKILL_REDIS_URL="redis://127.0.0.1:$SVC_REDIS_PORT/0"
export SECKILL_PAYMENT_TIMEOUT=24h SECKILL_RECONCILE_INTERVAL=0 SECKILL_LOG_LEVEL=warn
pg="postgres://postgres@127.0.0.1:$SVC_PG_PORT/export?sslmode=disable"
if [ "$kind" = sqlite ]; then
	export SECKILL_DATABASE_URL="sqlite:$dir/seckill.db"
else
	psql -q "postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable" -c "CREATE DATABASE export"
	export SECKILL_DATABASE_URL="$pg"
fi
admin=$("$dir/seckill" token --user 1 --admin)
"$dir/seckill" migrate up >/dev/null

echo "machine: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GB; $(uname -sr); $(go version | cut -d' ' -f3); load $(cut -d' ' -f1-3 /proc/loadavg)"
t=$(now_ms)
seed=$("$dir/seckill-lab" seed --vouchers 2 --orders "$orders")
echo "seed ($kind, $orders orders): $(($(now_ms) - t)) ms"
hot=$(echo "$seed" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hot_voucher"])')
other=$((hot + 1))
if [ "$kind" != sqlite ]; then psql -q "$pg" -c "ANALYZE orders"; fi

addr=127.0.0.1:$(port)
SECKILL_HTTP_ADDR=$addr "$dir/seckill" serve >>"$dir/serve.log" 2>&1 &
serve_pid=$!
until curl -sf -o /dev/null "http://$addr/readyz"; do sleep 0.1; done

# export [query] prints "rows ms": the rows of one export (the header line left out).
export_once() {
	local t0 rows
	t0=$(now_ms)
	rows=$(curl -sS --fail -H "Accept: text/csv" -H "Authorization: Bearer $admin" \
		"http://$addr/api/v1/vouchers/$hot/orders${1:-}" | wc -l)
	echo "$((rows - 1)) $(($(now_ms) - t0))"
}
# copy_once [where] prints "rows ms" for the baseline's copy of the same rows: psql's
# \copy to /dev/null, or the sqlite3 shell's CSV counted by wc.
copy_once() {
	local t0 out query="SELECT id, voucher_id, user_id, quantity, status, created_at FROM orders WHERE voucher_id = $hot ${1:-} ORDER BY id"
	t0=$(now_ms)
	if [ "$kind" = sqlite ]; then
		out=$(sqlite3 -readonly -csv "$dir/seckill.db" "$query" | wc -l)
		echo "$out $(($(now_ms) - t0))"
		return
	fi
	out=$(psql "$pg" -c "\\copy ($query) TO '/dev/null' WITH (FORMAT csv, HEADER)")
	echo "$(echo "$out" | awk '/^COPY/{print $2}') $(($(now_ms) - t0))"
}
baseline=psql
if [ "$kind" = sqlite ]; then baseline=sqlite3; command -v sqlite3 >/dev/null || baseline=; fi
# grabs N from prints the median and slowest of N grabs of the other voucher, one at a
# time, by users from, from+1, …, and the time from the last grab's answer until the
# voucher has no reservation left unpersisted.
grabs() {
	local n=$1 from=$2 tok t0 toks=()
	for u in $(seq "$from" $((from + n - 1))); do toks+=("$("$dir/seckill" token --user "$u")"); done
	for tok in "${toks[@]}"; do
		curl -s -o /dev/null -w '%{time_total}\n' -XPOST -H "Authorization: Bearer $tok" "http://$addr/api/v1/vouchers/$other/grab"
	done | sort -n | awk '{a[NR]=$1} END {printf "median %.1f ms, slowest %.1f ms", a[int((NR+1)/2)]*1000, a[NR]*1000}'
	t0=$(now_ms)
	until curl -s -H "Authorization: Bearer $admin" "http://$addr/api/v1/vouchers/$other/stats" | grep -q '"queued":0,'; do sleep 0.01; done
	echo ", all persisted $(($(now_ms) - t0)) ms after the last answer"
}
rate() { awk -v r="$1" -v ms="$2" 'BEGIN {printf "%.0f rows/s", r / (ms / 1000)}'; }

# serve heals the sales from the database at start when it does not know the Redis
# server (the seed's), reading every order; wait until its memory stops moving.
echo "serve's RSS when ready: $(($(rss_kb) / 1024)) MB"
note=" (still moving after 120 s)"
for _ in $(seq 120); do
	a=$(rss_kb); sleep 1; b=$(rss_kb)
	if [ $((a - b)) -lt 1024 ] && [ $((b - a)) -lt 1024 ]; then note=; break; fi
done
echo "serve's RSS at rest: $(($(rss_kb) / 1024)) MB$note"
# Warm: one JSON page and one export, so the first measured round does not pay for them.
fresh=$(rss_kb)
curl -s -o /dev/null -H "Authorization: Bearer $admin" "http://$addr/api/v1/vouchers/$hot/orders"
read -r rows ms < <(export_once)
echo "first export (not a round): $rows rows in $ms ms; serve's RSS $((fresh / 1024)) MB before it, $(($(rss_kb) / 1024)) MB after"
echo "grabs of another voucher, no export running: $(grabs 20 100000000)"
for round in $(seq "$rounds"); do
	if [ -n "$baseline" ]; then
		read -r rows ms < <(copy_once)
		echo "round $round: $baseline copy: $rows rows in $ms ms, $(rate "$rows" "$ms")"
	fi
	before=$(rss_kb)
	: >"$dir/rss"
	(while :; do rss_kb >>"$dir/rss"; sleep 0.05; done) &
	sampler=$!
	read -r rows ms < <(export_once)
	kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=
	peak=$(sort -n "$dir/rss" | tail -1)
	echo "round $round: export: $rows rows in $ms ms, $(rate "$rows" "$ms"); serve's RSS $((before / 1024)) MB before, peak $((peak / 1024)) MB during (+$(((peak - before) / 1024)) MB), $(($(rss_kb) / 1024)) MB after"
	if [ -n "$baseline" ]; then
		read -r rows ms < <(copy_once "AND status = 'cancelled'")
		echo "round $round: $baseline copy, cancelled only: $rows rows in $ms ms"
	fi
	read -r rows ms < <(export_once "?status=cancelled")
	echo "round $round: export, cancelled only: $rows rows in $ms ms"
done
# Grabs while an export runs: the export in the background, the grabs at once.
export_once >"$dir/bg" &
bg=$!
sleep 0.2
during=$(grabs 20 100001000)
wait "$bg"
read -r rows ms <"$dir/bg"
echo "grabs of another voucher during an export: $during (the export: $rows rows in $ms ms)"
grep -v '"level":"info"' "$dir/serve.log" | tail -5 | cut -c1-300 || true
