#!/usr/bin/env bash
# Runs seckill locally with nothing to configure: starts a throwaway Redis and
# PostgreSQL (installing them with apt-get when missing and root), applies the
# migrations, prints an admin token, a user token, curl lines, the lines README's walkthrough
# pastes (ADMIN=, ALICE=, BASE=) and the settings a second instance (or seckill token,
# seckill-lab loadtest) needs, and serves on :8080 (or SECKILL_HTTP_ADDR). Ctrl-C stops the
# service and the throwaway servers.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh

# Redis keeps an append-only file, synced every second: a restart of it loses at most
# the last second's grabs (docs/operations.md, "Durability").
SVC_REDIS_AOF=1 start_services
bin="$SVC_DIR/seckill"
go build -o "$bin" ./cmd/seckill

export SECKILL_REDIS_URL="$SECKILL_TEST_REDIS_URL"
export SECKILL_DATABASE_URL="$SECKILL_TEST_DATABASE_URL"
export SECKILL_JWT_SECRET="${SECKILL_JWT_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
export SECKILL_HTTP_ADDR="${SECKILL_HTTP_ADDR:-:8080}"
"$bin" migrate up

admin=$("$bin" token --user 1 --admin)
user=$("$bin" token --user 42)
port=${SECKILL_HTTP_ADDR##*:}
host=${SECKILL_HTTP_ADDR%:*}
case "$host" in "" | 0.0.0.0 | "[::]") host=localhost ;; esac
base="$host:$port"
cat <<TXT

seckill is starting on $SECKILL_HTTP_ADDR (throwaway Redis and PostgreSQL; for trying, not production).
Admin token (user 1):  $admin
User token  (user 42): $user

  curl -s -XPOST $base/api/v1/vouchers -H "Authorization: Bearer $admin" \\
    -H 'Content-Type: application/json' -d '{"title":"Coffee","stock":100,"begins_at":"2020-01-01T00:00:00Z","ends_at":"2099-01-01T00:00:00Z"}'
  curl -s -XPOST $base/api/v1/vouchers/1/grab -H "Authorization: Bearer $user"
  curl -s $base/api/v1/orders -H "Authorization: Bearer $user"

For README's "A sale, step by step", paste into your shell:

  ADMIN=$admin
  ALICE=$user
  BASE=$base

A second instance on the same Redis and PostgreSQL (in another shell, while this one
runs), or seckill token and seckill-lab loadtest against this one, need these settings:

  export SECKILL_REDIS_URL='$SECKILL_REDIS_URL'
  export SECKILL_DATABASE_URL='$SECKILL_DATABASE_URL'
  export SECKILL_JWT_SECRET='$SECKILL_JWT_SECRET'
  SECKILL_HTTP_ADDR=:$((port + 1)) go run ./cmd/seckill serve

TXT
"$bin" serve
