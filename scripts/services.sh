#!/usr/bin/env bash
# Throwaway Redis and PostgreSQL for tests and benchmarks, on free loopback ports, in a
# temporary directory. Source this file, then call start_services; it exports
# SECKILL_TEST_REDIS_URL and SECKILL_TEST_DATABASE_URL and arranges stop_services on exit.
# start_cluster, called after start_services, adds a three-master Redis Cluster and
# exports SECKILL_TEST_REDIS_CLUSTER_URL; stop_services stops it too. start_sentinel, also
# after start_services, adds a master, a replica and a Redis Sentinel watching them.
# It never touches a server someone else runs. When redis-server or PostgreSQL is
# missing and we are root, it installs them with apt-get.

svc_log() { printf 'services: %s\n' "$*" >&2; }

# free_port prints a port nobody listens on, below the kernel's ephemeral range, so no
# outgoing connection can take it between this check and the server's bind, nor while
# an outage test has the server stopped.
free_port() {
	local port low=32768
	[ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	[ "$low" -gt 11024 ] || low=32768
	for _ in $(seq 1 200); do
		port=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	svc_log "no free port found"
	return 1
}

pg_bindir() {
	local d
	if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
		pg_config --bindir
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[ -x "$d/initdb" ] && { echo "$d"; return 0; }
	done
	return 1
}

apt_install() {
	if [ "$(id -u)" != 0 ]; then
		svc_log "$* missing and not root: install it and retry"
		return 1
	fi
	svc_log "installing $* with apt-get"
	if [ -z "${SVC_APT_UPDATED:-}" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
		SVC_APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

ensure_tools() {
	command -v redis-server >/dev/null 2>&1 || apt_install redis-server || return 1
	pg_bindir >/dev/null || apt_install postgresql || return 1
	# pgbench and psql come with postgresql-client
	command -v psql >/dev/null 2>&1 || apt_install postgresql-client || return 1
}

# run_as_pg runs a command as the postgres user when we are root (initdb refuses root).
run_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start_services() {
	ensure_tools || return 1
	SVC_DIR=$(mktemp -d /tmp/seckill-test.XXXXXX)
	chmod 755 "$SVC_DIR"
	trap stop_services EXIT

	start_redis || return 1

	local bin
	bin=$(pg_bindir) || { svc_log "PostgreSQL binaries not found"; return 1; }
	SVC_PG_BIN=$bin
	SVC_PG_DATA="$SVC_DIR/pg"
	mkdir -p "$SVC_PG_DATA"
	[ "$(id -u)" = 0 ] && { id postgres >/dev/null 2>&1 || useradd --system postgres; chown postgres "$SVC_PG_DATA"; }
	run_as_pg "$bin/initdb" -D "$SVC_PG_DATA" -U postgres --auth=trust -E UTF8 --no-sync >"$SVC_DIR/initdb.log" 2>&1 ||
		{ svc_log "initdb failed: $(tail -n 5 "$SVC_DIR/initdb.log")"; return 1; }
	pg_start || return 1

	export SECKILL_TEST_REDIS_URL="redis://127.0.0.1:$SVC_REDIS_PORT/0"
	export SECKILL_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$SVC_PG_PORT/postgres?sslmode=disable"
	# Outage tests stop and start the throwaway cluster with these.
	export SECKILL_TEST_PG_STOP="$SVC_DIR/pg-stop"
	export SECKILL_TEST_PG_START="$SVC_DIR/pg-start"
	export SECKILL_TEST_REDIS_STOP="$SVC_DIR/redis-stop"
	export SECKILL_TEST_REDIS_START="$SVC_DIR/redis-start"
	export SECKILL_TEST_REDIS_PORT="$SVC_REDIS_PORT" SECKILL_TEST_PG_PORT="$SVC_PG_PORT"
	write_controls
	svc_log "redis on 127.0.0.1:$SVC_REDIS_PORT, postgres on 127.0.0.1:$SVC_PG_PORT ($SVC_DIR)"
}

# redis_persistence sets SVC_REDIS_PERSIST to the throwaway Redis's persistence flags:
# none for tests (fast, and an outage test's restart comes back empty on purpose), or
# with SVC_REDIS_AOF=1 an append-only file synced every second, as seckill's durability
# contract asks of a Redis that must not lose acknowledged grabs (scripts/dev.sh).
redis_persistence() {
	if [ "${SVC_REDIS_AOF:-}" = 1 ]; then
		SVC_REDIS_PERSIST=(--save '' --appendonly yes --appendfsync everysec)
	else
		SVC_REDIS_PERSIST=(--save '' --appendonly no)
	fi
}

# start_redis starts the throwaway Redis on a free port, trying another port when the
# one picked was taken in the meantime (another test run starting at the same time).
start_redis() {
	local attempt pid
	for attempt in 1 2 3 4 5; do
		SVC_REDIS_PORT=$(free_port) || return 1
		redis_persistence
		redis-server --port "$SVC_REDIS_PORT" --bind 127.0.0.1 "${SVC_REDIS_PERSIST[@]}" \
			--dir "$SVC_DIR" --daemonize yes --pidfile "$SVC_DIR/redis.pid" \
			--logfile "$SVC_DIR/redis.log" >/dev/null || continue
		for _ in $(seq 1 50); do
			# Ours answers, not a server that took the port first: compare process ids.
			pid=$(redis-cli -p "$SVC_REDIS_PORT" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true)
			if [ -n "$pid" ] && [ "$pid" = "$(cat "$SVC_DIR/redis.pid" 2>/dev/null)" ]; then
				return 0
			fi
			sleep 0.1
		done
		svc_log "redis did not start on port $SVC_REDIS_PORT (attempt $attempt): $(tail -n 2 "$SVC_DIR/redis.log" 2>/dev/null)"
	done
	svc_log "redis-server failed to start"
	return 1
}

# pg_start starts the throwaway PostgreSQL on a free port, trying another port when the
# one picked was taken in the meantime, as start_redis does.
pg_start() {
	local attempt
	for attempt in 1 2 3 4 5; do
		SVC_PG_PORT=$(free_port) || return 1
		# fsync off: a throwaway cluster trades durability for test speed.
		run_as_pg "$SVC_PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -l "$SVC_PG_DATA/server.log" -w -t 60 \
			-o "-p $SVC_PG_PORT -k $SVC_PG_DATA -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" \
			start >/dev/null && return 0
		svc_log "postgres did not start on port $SVC_PG_PORT (attempt $attempt): $(tail -n 3 "$SVC_PG_DATA/server.log")"
	done
	svc_log "postgres failed to start"
	return 1
}

write_controls() {
	cat >"$SVC_DIR/pg-stop" <<SH
#!/usr/bin/env bash
$( [ "$(id -u)" = 0 ] && echo "runuser -u postgres -- ")"$SVC_PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -m fast -w stop >/dev/null
SH
	cat >"$SVC_DIR/pg-start" <<SH
#!/usr/bin/env bash
$( [ "$(id -u)" = 0 ] && echo "runuser -u postgres -- ")"$SVC_PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -l "$SVC_PG_DATA/server.log" -w -t 60 -o "-p $SVC_PG_PORT -k $SVC_PG_DATA -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
SH
	cat >"$SVC_DIR/redis-stop" <<SH
#!/usr/bin/env bash
redis-cli -p $SVC_REDIS_PORT shutdown nosave >/dev/null 2>&1 || true
SH
	cat >"$SVC_DIR/redis-start" <<SH
#!/usr/bin/env bash
redis-server --port $SVC_REDIS_PORT --bind 127.0.0.1 $(printf '%q ' "${SVC_REDIS_PERSIST[@]}")--dir "$SVC_DIR" --daemonize yes --pidfile "$SVC_DIR/redis.pid" --logfile "$SVC_DIR/redis.log" >/dev/null
for _ in \$(seq 1 100); do redis-cli -p $SVC_REDIS_PORT ping >/dev/null 2>&1 && exit 0; sleep 0.1; done
exit 1
SH
	chmod +x "$SVC_DIR"/pg-stop "$SVC_DIR"/pg-start "$SVC_DIR"/redis-stop "$SVC_DIR"/redis-start
}

# cluster_port prints a free port whose cluster bus port (the port + 10000) is free too
# and, like the port, below the kernel's ephemeral range.
cluster_port() {
	local port low=32768
	[ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	for _ in $(seq 1 200); do
		port=$(free_port) || return 1
		[ $((port + 10000)) -lt "$low" ] || continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	svc_log "no free cluster port found"
	return 1
}

# start_cluster starts a Redis Cluster of three masters and no replicas on free ports,
# in the directory start_services made, waits until every node says cluster_state:ok and
# exports its URL in go-redis's cluster form as SECKILL_TEST_REDIS_CLUSTER_URL:
# redis://127.0.0.1:P1?addr=127.0.0.1:P2&addr=127.0.0.1:P3. Call start_services first.
start_cluster() {
	[ -n "${SVC_DIR:-}" ] || { svc_log "start_cluster: call start_services first"; return 1; }
	local i port pid dir ok
	SVC_CLUSTER_PORTS=()
	for i in 1 2 3; do
		dir="$SVC_DIR/cluster-$i"
		mkdir -p "$dir"
		ok=
		for _ in 1 2 3 4 5; do
			port=$(cluster_port) || return 1
			redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
				--cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000 \
				--dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null || continue
			for _ in $(seq 1 50); do
				pid=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true)
				if [ -n "$pid" ] && [ "$pid" = "$(cat "$dir/redis.pid" 2>/dev/null)" ]; then
					ok=1
					break
				fi
				sleep 0.1
			done
			[ -n "$ok" ] && break
			svc_log "cluster node $i did not start on port $port: $(tail -n 2 "$dir/redis.log" 2>/dev/null)"
		done
		[ -n "$ok" ] || { svc_log "redis cluster node $i failed to start"; return 1; }
		SVC_CLUSTER_PORTS+=("$port")
	done
	local addrs=()
	for port in "${SVC_CLUSTER_PORTS[@]}"; do addrs+=("127.0.0.1:$port"); done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$SVC_DIR/cluster-create.log" 2>&1 ||
		{ svc_log "redis-cli --cluster create failed: $(tail -n 5 "$SVC_DIR/cluster-create.log")"; return 1; }
	for _ in $(seq 1 200); do
		ok=1
		for port in "${SVC_CLUSTER_PORTS[@]}"; do
			redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || { ok=; break; }
		done
		[ -n "$ok" ] && break
		sleep 0.1
	done
	[ -n "$ok" ] || { svc_log "redis cluster not ok after 20s"; return 1; }
	export SECKILL_TEST_REDIS_CLUSTER_URL="redis://${addrs[0]}?addr=${addrs[1]}&addr=${addrs[2]}"
	svc_log "redis cluster on ${addrs[*]}"
}

# sentinel_server starts one redis-server (or, with --sentinel among its arguments, a
# sentinel) in directory $1 with the remaining arguments on a free port, trying another
# port when the one picked was taken, and prints the port.
sentinel_server() {
	local dir=$1 port pid
	shift
	mkdir -p "$dir"
	for _ in 1 2 3 4 5; do
		port=$(free_port) || return 1
		redis-server "$@" --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
			--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null || continue
		for _ in $(seq 1 50); do
			pid=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true)
			if [ -n "$pid" ] && [ "$pid" = "$(cat "$dir/redis.pid" 2>/dev/null)" ]; then
				echo "$port"
				return 0
			fi
			sleep 0.1
		done
		svc_log "redis did not start on port $port in $dir: $(tail -n 2 "$dir/redis.log" 2>/dev/null)"
	done
	return 1
}

# start_sentinel starts a master, one replica of it and one Redis Sentinel watching
# them as "seckill" (quorum 1, down after 1 s, failover timeout 3 s), without
# persistence, on free ports in start_services's directory, waits until the sentinel
# knows the replica in sync, and exports SECKILL_TEST_SENTINEL_ADDRS (the sentinel's
# host:port), SECKILL_TEST_SENTINEL_MASTER (the master's name),
# SECKILL_TEST_SENTINEL_MASTER_PID and SECKILL_TEST_SENTINEL_REPLICA_PID (so a test can
# kill -9 the master and stop the replica), and SECKILL_TEST_SENTINEL_MASTER_START, a
# script that starts the killed master again on its port as a replica of the
# sentinel's current master. stop_services (or stop_sentinel) stops all three,
# whatever their roles by then; calling start_sentinel again starts a fresh set.
start_sentinel() {
	[ -n "${SVC_DIR:-}" ] || { svc_log "start_sentinel: call start_services first"; return 1; }
	local master replica sentinel ok
	stop_sentinel
	master=$(sentinel_server "$SVC_DIR/sentinel-master" --save '' --appendonly no) ||
		{ svc_log "sentinel's master failed to start"; return 1; }
	SVC_SENTINEL_PORTS=("$master")
	replica=$(sentinel_server "$SVC_DIR/sentinel-replica" --save '' --appendonly no --replicaof 127.0.0.1 "$master") ||
		{ svc_log "sentinel's replica failed to start"; return 1; }
	SVC_SENTINEL_PORTS+=("$replica")
	# The sentinel rewrites its configuration file: it lives in the directory.
	cat >"$SVC_DIR/sentinel.conf" <<CONF
sentinel monitor seckill 127.0.0.1 $master 1
sentinel down-after-milliseconds seckill 1000
sentinel failover-timeout seckill 3000
sentinel parallel-syncs seckill 1
CONF
	sentinel=$(sentinel_server "$SVC_DIR/sentinel" "$SVC_DIR/sentinel.conf" --sentinel) ||
		{ svc_log "redis sentinel failed to start"; return 1; }
	SVC_SENTINEL_PORTS+=("$sentinel")
	ok=
	for _ in $(seq 1 200); do
		if redis-cli -p "$sentinel" sentinel replicas seckill 2>/dev/null | grep -qx "127.0.0.1:$replica" &&
			redis-cli -p "$replica" info replication 2>/dev/null | tr -d '\r' | grep -qx 'master_link_status:up'; then
			ok=1
			break
		fi
		sleep 0.1
	done
	[ -n "$ok" ] || { svc_log "the sentinel did not see the replica in sync within 20s"; return 1; }
	cat >"$SVC_DIR/sentinel-master-start" <<SH
#!/usr/bin/env bash
set -e
now=\$(redis-cli -p $sentinel sentinel get-master-addr-by-name seckill | tr -d '\r')
redis-server --save '' --appendonly no --replicaof \$now --port $master --bind 127.0.0.1 \\
	--dir "$SVC_DIR/sentinel-master" --daemonize yes --pidfile "$SVC_DIR/sentinel-master/redis.pid" \\
	--logfile "$SVC_DIR/sentinel-master/redis.log" >/dev/null
for _ in \$(seq 1 100); do redis-cli -p $master ping >/dev/null 2>&1 && exit 0; sleep 0.1; done
exit 1
SH
	chmod +x "$SVC_DIR/sentinel-master-start"
	export SECKILL_TEST_SENTINEL_ADDRS="127.0.0.1:$sentinel" SECKILL_TEST_SENTINEL_MASTER=seckill
	export SECKILL_TEST_SENTINEL_MASTER_PID SECKILL_TEST_SENTINEL_REPLICA_PID
	SECKILL_TEST_SENTINEL_MASTER_PID=$(cat "$SVC_DIR/sentinel-master/redis.pid")
	SECKILL_TEST_SENTINEL_REPLICA_PID=$(cat "$SVC_DIR/sentinel-replica/redis.pid")
	export SECKILL_TEST_SENTINEL_MASTER_START="$SVC_DIR/sentinel-master-start"
	svc_log "redis master on 127.0.0.1:$master, replica on 127.0.0.1:$replica, sentinel on 127.0.0.1:$sentinel"
}

# stop_sentinel stops the servers start_sentinel started, whatever their roles by now.
stop_sentinel() {
	[ -n "${SVC_DIR:-}" ] || return 0
	local port
	for port in ${SVC_SENTINEL_PORTS[@]+"${SVC_SENTINEL_PORTS[@]}"}; do
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
	done
	SVC_SENTINEL_PORTS=()
	rm -rf "$SVC_DIR"/sentinel*
}

stop_services() {
	[ -n "${SVC_DIR:-}" ] || return 0
	[ -n "${SVC_REDIS_PORT:-}" ] && redis-cli -p "$SVC_REDIS_PORT" shutdown nosave >/dev/null 2>&1
	local port
	for port in ${SVC_CLUSTER_PORTS[@]+"${SVC_CLUSTER_PORTS[@]}"}; do
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
	done
	SVC_CLUSTER_PORTS=()
	stop_sentinel
	if [ -n "${SVC_PG_DATA:-}" ] && [ -f "$SVC_PG_DATA/postmaster.pid" ]; then
		run_as_pg "$SVC_PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -m immediate -w stop >/dev/null 2>&1
	fi
	rm -rf "$SVC_DIR"
	SVC_DIR=
}
