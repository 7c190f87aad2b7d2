#!/usr/bin/env bash
# The figures of BENCHMARKS.md's "Durability: what each setting costs a grab, and the
# heal after Redis forgets" section, against throwaway servers of its own (see
# scripts/services.sh):
#   - grab throughput (coalesced reservations through go-redis) with
#     SECKILL_REDIS_MIN_REPLICAS=1 against 0, on a master with one replica, and with
#     appendfsync always against everysec, all in the same run, so the ratios hold on
#     a busy machine (go test -bench ReserveDurability);
#   - the heal time with HEAL_ORDERS (default 10,000) live orders: from Redis answering
#     again to a grab served again, after a restart without persistence and after the
#     service's keys vanish as in a FLUSHALL (go test -run TestHealTime ./cmd/seckill).
#   bash scripts/bench/durability.sh
#   BENCHTIME=5s COUNT=5 HEAL_ORDERS=10000 bash scripts/bench/durability.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/services.sh
start_services
benchtime=${BENCHTIME:-3s}
count=${COUNT:-5}

echo "== machine"
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
go version
redis-server --version | cut -d' ' -f1-3

# A master and one replica, both without persistence to start with (the benchmark
# turns the master's AOF on and off); stop_services stops them with the rest.
master=$(sentinel_server "$SVC_DIR/sentinel-master" --save '' --appendonly no)
SVC_SENTINEL_PORTS=("$master")
replica=$(sentinel_server "$SVC_DIR/sentinel-replica" --save '' --appendonly no --replicaof 127.0.0.1 "$master")
SVC_SENTINEL_PORTS+=("$replica")
for _ in $(seq 1 200); do
	redis-cli -p "$replica" info replication | tr -d '\r' | grep -qx 'master_link_status:up' && break
	sleep 0.1
done

echo
echo "== grab throughput by durability setting (master 127.0.0.1:$master, replica :$replica; $count rounds of the four, $benchtime each)"
# Rounds, not -count: each round measures the four settings back to back, so a change
# of load on a shared machine weighs on the four alike, and each round gives its ratios.
out=
for round in $(seq 1 "$count"); do
	out+=$(SECKILL_BENCH_DURABILITY=1 SECKILL_TEST_REDIS_URL="redis://127.0.0.1:$master/0" \
		go test -run '^$' -bench 'ReserveDurability' -benchtime "$benchtime" ./adapters/redisstore/ |
		grep -E '^Benchmark' | sed "s/^/round $round /")$'\n'
done
printf '%s' "$out"
echo "$out" | awk '$3 ~ /^BenchmarkReserveDurability\// {
	name = $3; sub(/^BenchmarkReserveDurability\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 4; i < NF; i++) if ($(i+1) == "ops/s") { ops[$2, name] = $i; sum[name] += $i; n[name]++ }
	rounds[$2] = 1
}
END {
	for (r in rounds) printf "round %s: min-replicas=1 / 0 = %.2f, appendfsync always / everysec = %.2f\n", r,
		ops[r, "min-replicas=1"] / ops[r, "min-replicas=0"], ops[r, "appendfsync=always"] / ops[r, "appendfsync=everysec"]
	for (k in sum) { mean[k] = sum[k] / n[k]; printf "%-22s %10.0f ops/s (mean of %d)\n", k, mean[k], n[k] }
	printf "means: min-replicas=1 / 0 = %.2f, appendfsync always / everysec = %.2f\n",
		mean["min-replicas=1"] / mean["min-replicas=0"], mean["appendfsync=always"] / mean["appendfsync=everysec"]
}'

echo
echo "== heal time with ${HEAL_ORDERS:-10000} live orders"
# HEAL_LOG=file keeps the test's whole output (the service's log on a failure).
SECKILL_BENCH_HEAL_ORDERS=${HEAL_ORDERS:-10000} go test -count=1 -run '^TestHealTime$' -v -timeout 30m ./cmd/seckill/ |
	tee "${HEAL_LOG:-/dev/null}" | grep -E 'heal_bench_test.go|^(--- |ok|FAIL)' | cut -c1-300
