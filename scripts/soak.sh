#!/usr/bin/env bash
# Runs the whole suite, scripts/test.sh, RUNS times in a row (20 by default) while one
# spinning shell per CPU keeps the machine busy, and stops at the first failure: the
# suite must hold on a busy machine, not only on a quiet one. Each run's output goes to
# a log file of its own (its path is printed); SECKILL_FUZZTIME (default here 0) and
# extra arguments pass through to test.sh.
#   RUNS=3 bash scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
logs=$(mktemp -d /tmp/seckill-soak.XXXXXX)
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & hogs+=($!); done
echo "soak: $runs runs of scripts/test.sh with ${#hogs[@]} spinning shells; logs in $logs"
for i in $(seq "$runs"); do
	start=$(date +%s)
	if SECKILL_FUZZTIME=${SECKILL_FUZZTIME:-0} bash scripts/test.sh "$@" >"$logs/run-$i.log" 2>&1; then
		echo "run $i: passed in $(($(date +%s) - start)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	else
		echo "run $i: FAILED after $(($(date +%s) - start)) s; see $logs/run-$i.log:"
		grep -E -- '^(--- FAIL|FAIL|panic)' "$logs/run-$i.log" | head -20 || tail -20 "$logs/run-$i.log"
		exit 1
	fi
done
echo "soak: $runs of $runs passed"
