#!/usr/bin/env bash
# bench/fleet: a busy host with big real binaries, and what hearth costs on it.
#
# Starts, all at once (each part skipped with a message when its program is
# missing): headless Chromium rendering a page with a busy script (busy.html),
# a JVM (Busy.java: two busy threads), Node.js (busy.js), CPython (busy.py), a
# program whose hot code runs inside libLLVM (llvmbusy.c), generated shared
# objects whose unwind tables together are over 3x the BPF row budget,
# the hottest mapped last (gen_objs.py, genhot), and process churn (a new
# short `sort` process every CHURN_MS). Then `hearth run --memory-limit LIMIT`
# (or `hearth agent`: --mode; its BPF unwind budget may be made smaller with
# --chunks), and bpftrace's
# one-liner beside it:
#   profile:hz:99 { @[kstack,ustack,pid,comm]=count(); } interval:s:10 {...}
# After WARMUP seconds it measures a window of SECS seconds and prints:
#   rss-mb        hearth's resident memory at the end (steady) and the most
#                 seen by a 1 s poll over the run; peak-mb: VmHWM, the kernel's
#                 high-water mark (start-up included)
#   bpf-map-mb    memlock of the BPF maps hearth holds, and what of them is
#                 mapped into hearth and resident (part of its RSS)
#   cpu%          CPU of the process (user+sys, all threads) plus its BPF
#                 programs' run time, as a share of the machine (window x
#                 cores), for hearth and bpftrace (bench/overhead_probe.py)
#   complete%     of hearth's samples in the window that have user frames, the
#                 share whose stack reaches the thread's start (_start, clone,
#                 start_thread...: fleet_stats.py), in all and per program
#   evictions     hearth's /metrics: cache evictions by kind, unwind tables
#
# Usage (root): bench/fleet/fleet.sh [--secs N] [--warmup N] [--limit SIZE]
#   [--chunks N] [--objs N] [--fill N] [--hot N] [--mode run|agent]
#   [--no-bpftrace] [--peer BIN]
#   --secs N      measured window (default 30)
#   --warmup N    seconds before it (default 60)
#   --limit SIZE  hearth run --memory-limit (default 64M)
#   --chunks N    HEARTH_UNWIND_CHUNKS: BPF unwind rows = N x 4096 (default:
#                 not set, hearth's default of 256 chunks, 1,048,576 rows)
#   --objs N      generated objects (default 10: 10 x 330k rows = 3.15 x the
#                 default budget); --fill N: filler functions per object
#                 (default 110000, 3 rows each)
#   --hot N       how many of the generated objects are hot (default 1: the
#                 last one mapped)
#   --mode M      run (default): `hearth run`, whose RSS includes its store
#                 and queries (their own budget, docs/memory.md); agent:
#                 `hearth agent` pushing to a `hearth server` (not measured),
#                 the agent alone under the limit
#   --no-bpftrace skip the bpftrace peer
#   --peer BIN    A/B: also runs `BIN agent` (its own `BIN server`, not
#                 measured) beside hearth, same options, measured in the same
#                 window: "peer" lines give its cpu% and complete% (the
#                 machine's load hits both alike; each also samples the other)
# About WARMUP + SECS + 30 s, plus a first build of the generated objects
# (bench/fleet/build.sh: a few seconds an object, kept in build/fleet).
# Results go to stdout; docs/memory.md has the figures and the method.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECS=30 WARMUP=60 LIMIT=64M CHUNKS= OBJS=10 FILL=110000 HOT=1 BT=1 MODE=run PEER=
while [ $# -gt 0 ]; do
	case $1 in
	--secs) SECS=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--limit) LIMIT=$2; shift ;;
	--chunks) CHUNKS=$2; shift ;;
	--objs) OBJS=$2; shift ;;
	--fill) FILL=$2; shift ;;
	--hot) HOT=$2; shift ;;
	--no-bpftrace) BT=0 ;;
	--peer) PEER=$2; shift ;;
	--mode) MODE=$2; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/fleet: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "bench/fleet: run as root (BPF)" >&2; exit 2; }
HEARTH=${HEARTH:-$PWD/build/hearth}
B=$PWD/build/fleet
T=$(mktemp -d /tmp/hearth-fleet.XXXXXX)
NCPU=$(nproc)
PIDS=()
log() { echo "[$(date -u +%T)] $*" >&2; }
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
	kill $(jobs -p) 2> /dev/null || true
	wait 2> /dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# ---- build (kept in build/fleet) ----
bash bench/fleet/build.sh "$B" "$OBJS" "$FILL"
JAVA_OK=0
if command -v java > /dev/null && [ -f "$B/Busy.class" ]; then JAVA_OK=1; else log "no javac/java: the JVM is skipped"; fi
LIBLLVM=$(ls /usr/lib/x86_64-linux-gnu/libLLVM-*.so.1 2> /dev/null | head -1 || true)

# ---- the busy host ----
start() { "$@" > /dev/null 2>&1 & PIDS+=($!); }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
	start "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$T/chrome" \
		--no-first-run --disable-background-networking --remote-debugging-port=0 \
		"file://$PWD/bench/fleet/busy.html"
else
	log "no chromium: skipped"
fi
[ "$JAVA_OK" = 1 ] && start java -Xmx64m -cp "$B" Busy
command -v node > /dev/null && start node bench/fleet/busy.js || log "no node: skipped"
PY=$(command -v python3)
start "$PY" bench/fleet/busy.py
if [ -n "$LIBLLVM" ]; then start "$B/llvmbusy" "$LIBLLVM"; else log "no libLLVM: skipped"; fi
start "$B/genhot" "$B/gen" "$OBJS" "$HOT"
CHURN_MS=${CHURN_MS:-300}
(while :; do seq 1 20000 | sort -rn > /dev/null; sleep "$(awk -v m="$CHURN_MS" 'BEGIN{print m/1000}')"; done) &
PIDS+=($!)
sleep 2

# ---- the profilers ----
PROBE="python3 bench/overhead_probe.py"
coproc STATS { exec $PROBE stats; }
read -r ready <&"${STATS[0]}" && [ "$ready" = ready ] || { echo "bench/fleet: no BPF statistics" >&2; exit 1; }
mkdir -m 700 "$T/data"
# url_of LOG: the first http://127.0.0.1:PORT a hearth command logged (20 s at most)
url_of() {
	for _ in $(seq 100); do
		grep -oE 'http://127\.0\.0\.1:[0-9]+' "$1" 2> /dev/null | head -1 | grep . && return 0
		sleep 0.2
	done
	return 1
}
SURL=
if [ "$MODE" = agent ]; then
	"$HEARTH" server --data "$T/data" --listen 127.0.0.1:0 > /dev/null 2> "$T/server.err" &
	SPID=$!
	PIDS+=($SPID)
	SURL=$(url_of "$T/server.err") || { echo "bench/fleet: hearth server did not start: $(cat "$T/server.err")" >&2; exit 1; }
	${CHUNKS:+env HEARTH_UNWIND_CHUNKS=$CHUNKS} "$HEARTH" agent --server "$SURL" --memory-limit "$LIMIT" \
		--spool-dir "$T/spool" --listen 127.0.0.1:0 --interval 5 > /dev/null 2> "$T/run.err" &
else
	${CHUNKS:+env HEARTH_UNWIND_CHUNKS=$CHUNKS} "$HEARTH" run --memory-limit "$LIMIT" --data "$T/data" \
		--listen 127.0.0.1:0 --interval 5 > /dev/null 2> "$T/run.err" &
fi
HPID=$!
PIDS+=($HPID)
PPID_= PURL= PSURL=
if [ -n "$PEER" ]; then
	mkdir -m 700 "$T/pdata"
	"$PEER" server --data "$T/pdata" --listen 127.0.0.1:0 > /dev/null 2> "$T/pserver.err" &
	PIDS+=($!)
	PSURL=$(url_of "$T/pserver.err") || { echo "bench/fleet: peer server did not start" >&2; exit 1; }
	${CHUNKS:+env HEARTH_UNWIND_CHUNKS=$CHUNKS} "$PEER" agent --server "$PSURL" --memory-limit "$LIMIT" \
		--spool-dir "$T/pspool" --listen 127.0.0.1:0 --interval 5 > /dev/null 2> "$T/peer.err" &
	PPID_=$!
	PIDS+=($PPID_)
fi
T0=$(date +%s)
URL=$(url_of "$T/run.err") || { echo "bench/fleet: hearth $MODE did not start: $(cat "$T/run.err")" >&2; exit 1; }
QURL=${SURL:-$URL} # where the profiles are queried
BPID=
if [ "$BT" = 1 ] && command -v bpftrace > /dev/null; then
	bpftrace -e 'profile:hz:99 { @[kstack,ustack,pid,comm]=count(); } interval:s:10 { print(@); clear(@); }' \
		> "$T/bt.out" 2> "$T/bt.log" &
	BPID=$!
	PIDS+=($BPID)
fi
[ -n "$PPID_" ] && { PURL=$(url_of "$T/peer.err") || { echo "bench/fleet: peer agent did not start" >&2; exit 1; }; }
log "hearth $MODE pid $HPID at $URL; bpftrace pid ${BPID:-none}; peer pid ${PPID_:-none}; warm-up ${WARMUP}s"
# RSS poll, once a second, for the whole run
(while kill -0 "$HPID" 2> /dev/null; do
	awk '/^VmRSS:/ {print $2}' "/proc/$HPID/status" 2> /dev/null
	sleep 1
done > "$T/rss.txt") &
PIDS+=($!)
while [ $(($(date +%s) - T0)) -lt "$WARMUP" ]; do
	kill -0 "$HPID" || { echo "bench/fleet: hearth exited: $(tail -3 "$T/run.err")" >&2; exit 1; }
	sleep 1
done
W0=$(date +%s)
$PROBE window "$SECS" "$T/s0" "$T/s1" --metrics "$URL" $HPID $BPID $PPID_
W1=$(date +%s)
# the window's profiles: wait (90 s at most) until two more profiles were
# built after the window (the one holding its end, and the next): on this busy
# host building one takes seconds (symbolization)
P1=$(awk '$2 == "hearth_agent_profiles_total" { print $3 }' "$T/s1")
for _ in $(seq 90); do
	P=$(curl -sf "$URL/metrics" | awk '$1 == "hearth_agent_profiles_total" { print $2 }')
	[ "${P:-0}" -ge $((${P1:-0} + 2)) ] && break
	sleep 1
done
for _ in $(seq 20); do # agent: until they were pushed
	[ "$(curl -sf "$URL/metrics" | awk '$1 == "hearth_agent_spool_profiles" { print $2 }')" = 0 ] && break
	sleep 1
done
curl -sf "$QURL/api/profile?format=folded&from=$((W0 * 1000))&until=$((W1 * 1000))" > "$T/window.folded" || true
curl -sf "$URL/metrics" > "$T/metrics.txt" || true
if [ -n "$PPID_" ]; then
	for _ in $(seq 20); do
		[ "$(curl -sf "$PURL/metrics" | awk '$1 == "hearth_agent_spool_profiles" { print $2 }')" = 0 ] && break
		sleep 1
	done
	curl -sf "$PSURL/api/profile?format=folded&from=$((W0 * 1000))&until=$((W1 * 1000))" > "$T/pwindow.folded" || true
	curl -sf "$PURL/metrics" > "$T/pmetrics.txt" || true
fi
read -r MAP_MEMLOCK MAP_RES < <(python3 bench/fleet/fleet_stats.py mapbytes "$HPID")
HWM=$(awk '/^VmHWM:/ {print $2}' "/proc/$HPID/status")

# ---- report ----
cpu_of() { # pid: "cpu% proc% bpf%" over the window
	awk -v pid="$1" -v n="$NCPU" '
		FNR == 1 { t[FILENAME] = $2 }
		$1 == pid { c[FILENAME] = $2; b[FILENAME] = $3 }
		END {
			dt = t[ARGV[2]] - t[ARGV[1]]
			pc = (c[ARGV[2]] - c[ARGV[1]]) / dt / n * 100
			pb = (b[ARGV[2]] - b[ARGV[1]]) / dt / n * 100
			printf "%.3f %.3f %.3f\n", pc + pb, pc, pb
		}' "$T/s0" "$T/s1"
}
echo "bench/fleet: hearth $MODE, $(date -u '+%F %T') UTC, $NCPU CPUs, $(uname -r), limit $LIMIT, BPF unwind rows $((${CHUNKS:-256} * 4096)), $OBJS generated objects x $FILL fillers ($HOT hot), warm-up ${WARMUP}s, window ${SECS}s, load1 $(cut -d' ' -f1 /proc/loadavg)"
read -r CPU PC PB < <(cpu_of "$HPID")
echo "hearth   cpu% $CPU (process $PC + bpf $PB)"
[ -n "$BPID" ] && { read -r CPU PC PB < <(cpu_of "$BPID"); echo "bpftrace cpu% $CPU (process $PC + bpf $PB)"; }
[ -n "$PPID_" ] && { read -r CPU PC PB < <(cpu_of "$PPID_"); echo "peer     cpu% $CPU (process $PC + bpf $PB) $PEER"; }
sort -n "$T/rss.txt" | awk -v hwm="$HWM" -v last="$(tail -1 "$T/rss.txt")" \
	'{ m = $1 } END { printf "hearth   rss-mb steady %.1f, max polled %.1f, peak-mb (VmHWM) %.1f\n", last / 1024, m / 1024, hwm / 1024 }'
awk -v a="$MAP_MEMLOCK" -v r="$MAP_RES" 'BEGIN { printf "hearth   bpf-map-mb %.1f memlock, %.1f of it resident in hearth\n", a / 1048576, r / 1048576 }'
echo "complete% (name pct complete total), window samples with user frames:"
python3 bench/fleet/fleet_stats.py complete "$T/window.folded" genhot llvmbusy java node python3 chromium chrome | sed 's/^/  /'
if [ -n "$PPID_" ]; then
	echo "peer complete%:"
	python3 bench/fleet/fleet_stats.py complete "$T/pwindow.folded" genhot llvmbusy java node python3 chromium chrome | sed 's/^/  /'
	echo "peer metrics at the end:"
	grep -E '^hearth_agent_unwind_(builds|tables_(loaded|evicted))_total' "$T/pmetrics.txt" | sed 's/^/  /' || true
fi
[ -n "${KEEP:-}" ] && echo "kept: $T (KEEP set: window.folded, metrics.txt...)"
echo "metrics at the end:"
grep -E '^hearth_memory_(limit|peak|rss|reclaims)|^hearth_memory_(cache_bytes|evictions_total)\{.*\} [1-9]|^hearth_agent_unwind_(tables|no_room|chunks|table_bytes|evict|load|builds)' "$T/metrics.txt" | sed 's/^/  /' || true
