#!/usr/bin/env bash
# A private ClickHouse (Debian's clickhouse-server) for hearth's ClickHouse
# backend, with every file in one directory: for trying the backend by hand and
# for the tests (tests/integration/test_clickhouse*.sh). No systemd, no change
# to /etc or /var.
#
#   scripts/clickhouse-local.sh start DIR      one server; prints its store URL
#   scripts/clickhouse-local.sh cluster DIR    two servers, the two shards of the
#                                              cluster "hearth"; prints both URLs
#                                              (add ?cluster=hearth, docs/clickhouse.md)
#   scripts/clickhouse-local.sh replicas DIR   ZooKeeper (Debian's zookeeper) and two
#                                              servers, two replicas of one shard;
#                                              prints both URLs (?replicated=1)
#   scripts/clickhouse-local.sh stop DIR       stops what start/cluster/replicas started
#
# Ports: free ones picked at random (HEARTH_CH_PORT=N picks N, N+1, N+2 for the
# first server: HTTP, native TCP, interserver). The URLs are also written to
# DIR/url (one a line). A server is ready when it answers "Ok." on HTTP.
set -euo pipefail

CH_CONF=${HEARTH_CH_CONF:-/etc/clickhouse-server}

usage() {
	echo "usage: $0 start DIR | cluster DIR | stop DIR" >&2
	exit 2
}

port_free() { # port
	! (ss -ltnH 2>/dev/null | awk '{print $4}' | grep -qE "[:.]$1\$")
}

# Three consecutive free ports: HTTP, TCP, interserver. Below Linux's ephemeral
# range (32768-60999), where no client socket can be holding one: `ss -ltn` sees
# only listeners, and a test beside this one with a thousand connections open (the
# server attack suite) held ~4% of that range, so a replica's interserver port
# could fail to bind and replication ran one way only.
pick_ports() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 12000))
		if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then
			echo "$p"
			return 0
		fi
	done
	echo "$0: no free ports found" >&2
	return 1
}

# Writes instance DIR/NAME's config; ports from $2; cluster XML (may be empty) in $3.
write_config() { # instdir, http_port, remote_servers_xml
	local d=$1 http=$2 tcp=$(($2 + 1)) inter=$(($2 + 2))
	mkdir -p "$d/data" "$d/log" "$d/config.d"
	sed -e "s#/var/log/clickhouse-server/#$d/log/#g" \
		-e "s#/var/lib/clickhouse/#$d/data/#g" \
		-e '/<listen_host>::1<\/listen_host>/d' \
		-e "s#<http_port>8123</http_port>#<http_port>$http</http_port>#" \
		-e "s#<tcp_port>9000</tcp_port>#<tcp_port>$tcp</tcp_port>#" \
		-e "s#<interserver_http_port>9009</interserver_http_port>#<interserver_http_port>$inter</interserver_http_port>#" \
		"$CH_CONF/config.xml" > "$d/config.xml"
	cp "$CH_CONF/users.xml" "$d/users.xml"
	# Small caches: a test server shares the machine.
	cat > "$d/config.d/hearth.xml" <<-EOF
		<yandex>
		    <mark_cache_size>268435456</mark_cache_size>
		    <logger><level>warning</level></logger>
		    $3
		</yandex>
	EOF
}

# Starts instance dir $1 on port $2; waits until it answers (at most 30 s).
start_one() { # instdir, http_port
	local d=$1 http=$2
	clickhouse-server --config-file="$d/config.xml" > "$d/log/stdout" 2>&1 &
	echo $! > "$d/pid"
	for _ in $(seq 300); do
		if [ "$(curl -s --max-time 2 "http://127.0.0.1:$http/" 2>/dev/null)" = "Ok." ]; then
			return 0
		fi
		kill -0 "$(cat "$d/pid")" 2>/dev/null || break
		sleep 0.1
	done
	echo "$0: clickhouse-server in $d did not start; its log:" >&2
	tail -n 5 "$d/log/stdout" "$d/log/clickhouse-server.err.log" >&2 2>/dev/null || true
	return 1
}

# Standalone ZooKeeper from Debian's jars on a free port; sets ZK_PORT.
start_zookeeper() { # dir
	local d=$1/zk j=/usr/share/java
	local cp="$j/zookeeper.jar:$j/zookeeper-jute.jar:$j/slf4j-api.jar:$j/slf4j-simple.jar:$j/log4j-1.2.jar:$j/metrics-core.jar:$j/commons-cli.jar:$j/netty-all.jar"
	[ -r $j/zookeeper.jar ] || { echo "$0: zookeeper is not installed" >&2; return 1; }
	mkdir -p "$d/data"
	ZK_PORT=$(pick_ports)
	java -Xmx256m -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$ZK_PORT" "$d/data" \
		> "$d/log" 2>&1 &
	echo $! > "$d/pid"
	for _ in $(seq 300); do
		grep -q 'PrepRequestProcessor.*started' "$d/log" 2> /dev/null && return 0
		kill -0 "$(cat "$d/pid")" 2> /dev/null || break
		sleep 0.1
	done
	echo "$0: zookeeper did not start: $(tail -3 "$d/log")" >&2
	return 1
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || usage
command -v clickhouse-server > /dev/null || {
	echo "$0: clickhouse-server is not installed (scripts/install-deps.sh --test installs it)" >&2
	exit 1
}

case $cmd in
start)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	p=${HEARTH_CH_PORT:-$(pick_ports)}
	write_config "$dir/ch0" "$p" ""
	start_one "$dir/ch0" "$p"
	echo "clickhouse://127.0.0.1:$p/hearth" | tee "$dir/url"
	;;
cluster)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	p0=${HEARTH_CH_PORT:-$(pick_ports)}
	p1=$(pick_ports)
	while [ $((p1 - p0)) -lt 3 ] && [ $((p0 - p1)) -lt 3 ]; do p1=$(pick_ports); done
	rs="<remote_servers><hearth>
	  <shard><replica><host>127.0.0.1</host><port>$((p0 + 1))</port></replica></shard>
	  <shard><replica><host>127.0.0.1</host><port>$((p1 + 1))</port></replica></shard>
	</hearth></remote_servers>"
	write_config "$dir/ch0" "$p0" "$rs"
	write_config "$dir/ch1" "$p1" "$rs"
	start_one "$dir/ch0" "$p0"
	start_one "$dir/ch1" "$p1"
	printf 'clickhouse://127.0.0.1:%s/hearth?cluster=hearth\n' "$p0" "$p1" | tee "$dir/url"
	;;
replicas)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	start_zookeeper "$dir"
	p0=$(pick_ports)
	p1=$(pick_ports)
	while [ $((p1 - p0)) -lt 3 ] && [ $((p0 - p1)) -lt 3 ]; do p1=$(pick_ports); done
	zk="<zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node></zookeeper>
	  <remote_servers><hearth><shard><internal_replication>true</internal_replication>
	  <replica><host>127.0.0.1</host><port>$((p0 + 1))</port></replica>
	  <replica><host>127.0.0.1</host><port>$((p1 + 1))</port></replica>
	  </shard></hearth></remote_servers>"
	write_config "$dir/ch0" "$p0" "$zk <macros><shard>01</shard><replica>r0</replica></macros>"
	write_config "$dir/ch1" "$p1" "$zk <macros><shard>01</shard><replica>r1</replica></macros>"
	start_one "$dir/ch0" "$p0"
	start_one "$dir/ch1" "$p1"
	printf 'clickhouse://127.0.0.1:%s/hearth?replicated=1\n' "$p0" "$p1" | tee "$dir/url"
	;;
stop)
	for pf in "$dir"/ch*/pid "$dir"/zk/pid; do
		[ -f "$pf" ] || continue
		pid=$(cat "$pf")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		rm -f "$pf"
	done
	;;
*)
	usage
	;;
esac
