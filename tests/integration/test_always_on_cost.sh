#!/usr/bin/env bash
# Guards of the always-on promise (an always-on profiler nobody notices):
#  1. `hearth agent`, the `hearth server` it pushes to, and `hearth run`, on a quiet machine,
#     use at most 2% of one core over a 10 s window once started, and none of
#     their threads wakes more than 20 times a second (a thread with nothing to
#     do sleeps: this is what caught the sender's spin).
#  2. While `hearth run` profiles a busy workload on every core, its own store
#     shows hearth's process at most 1% of the machine's samples: the product
#     looks at itself.
# CPU comes from /proc/PID/stat (utime + stime of every thread), wakeups from
# voluntary_ctxt_switches in /proc/PID/task/*/status, both as deltas over the
# window. The window starts after start-up (BPF load, kallsyms, first maps
# reads): that one-time cost is bench/overhead's business, not a steady one.
# test-runner: serial (it measures hearth's CPU and wakeups: another test's load would be in them)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root always_on_cost

WINDOW=${HEARTH_COST_WINDOW:-10}
MAX_CORE_PCT=2
MAX_WAKES_PER_S=20
TCK=$(getconf CLK_TCK)

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# "TID COMM VOLUNTARY" per thread of PID.
wakes() {
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ < "$t/comm")" \
			"$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status")"
	done 2>/dev/null | sort
}

# Measures each NAME:PID over the same WINDOW seconds; checks CPU and wakeups.
check_quiet() { # name:pid...
	local np name pid t1 pct worst
	declare -A t0
	for np in "$@"; do
		name=${np%%:*} pid=${np#*:}
		t0[$name]=$(ticks "$pid")
		wakes "$pid" > "$T/$name.w0"
	done
	sleep "$WINDOW"
	for np in "$@"; do
		name=${np%%:*} pid=${np#*:}
		t1=$(ticks "$pid")
		wakes "$pid" > "$T/$name.w1"
		pct=$(awk -v a="${t0[$name]}" -v b="$t1" -v w="$WINDOW" -v h="$TCK" 'BEGIN { printf "%.2f", 100 * (b - a) / h / w }')
		if awk -v p="$pct" -v m="$MAX_CORE_PCT" 'BEGIN { exit !(p <= m) }'; then
			pass "${name}_quiet_cpu (${pct}% of one core over ${WINDOW}s)"
		else
			fail "${name}_quiet_cpu" "${pct}% of one core over ${WINDOW}s (limit ${MAX_CORE_PCT}%)"
		fi
		# Threads present at both ends; the busiest one's wakeups per second.
		join "$T/$name.w0" "$T/$name.w1" |
			awk -v w="$WINDOW" '{ printf "%.1f %s(%s)\n", ($5 - $3) / w, $2, $1 }' |
			sort -rn > "$T/$name.wakes"
		worst=$(head -1 "$T/$name.wakes")
		if [ -n "$worst" ] && awk -v r="${worst%% *}" -v m="$MAX_WAKES_PER_S" 'BEGIN { exit !(r <= m) }'; then
			pass "${name}_threads_sleep (busiest: ${worst% *} wakeups/s, ${worst#* })"
		else
			fail "${name}_threads_sleep" "wakeups/s per thread: $(tr '\n' ' ' < "$T/$name.wakes")"
		fi
	done
}

# Started and ready: /healthz answers and the first profile has been drained.
# The first drain reads /proc/kallsyms and every sampled object's symbols once
# (~0.2 s of CPU on this machine kind), so it belongs to start-up.
drained() { # url
	curl -sf "$1/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'
}
settle() { # url
	wait_until 20 curl -sf -o /dev/null "$1/healthz" || return 1
	wait_until 30 drained "$1" || return 1
	sleep 1
}

# 1a. hearth agent pushing to a hearth server.
start_hearth "$T/server.log" server --data "$T/sdata" --listen 127.0.0.1:0 &&
	spid=$SPID SURL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
start_hearth "$T/agent.log" agent --server "$SURL" --spool-dir "$T/spool" --listen 127.0.0.1:0 &&
	apid=$SPID AURL=$HURL || { fail agent_start "$(cat "$T/agent.log")"; finish; }
if settle "$AURL"; then
	check_quiet "agent:$apid" "server:$spid" # the server that takes its pushes, too
else
	fail agent_ready "$(tail -3 "$T/agent.log")"
fi
kill "$apid"

# 1b. hearth run.
start_hearth "$T/run.log" run --data "$T/rdata" --listen 127.0.0.1:0 --interval 5 &&
	rpid=$SPID RURL=$HURL || { fail run_start "$(cat "$T/run.log")"; finish; }
if settle "$RURL"; then
	check_quiet "run:$rpid"
else
	fail run_ready "$(tail -3 "$T/run.log")"
fi

# 2. The same hearth run with every core busy: its own share of the samples.
SECS=20
cc -O2 -fno-omit-frame-pointer -o "$T/spin" "$HEARTH_ROOT/bench/spin.c" ||
	{ fail build_spin "cc failed"; finish; }
spins=()
for _ in $(seq "$(nproc)"); do "$T/spin" "$SECS" > /dev/null & spins+=($!); BG_PIDS+=($!); done
t_start=$(date +%s)
sleep "$SECS"
wait "${spins[@]}"
sleep 6 # one more interval (5 s) reaches the store
q() { curl -s --max-time 30 -g "$RURL/api/timeline?from=$t_start&until=$((t_start + SECS))&step=${SECS}s&query=$1"; }
sum_values() { jq '[.groups[].values[] | numbers] | add // 0'; }
all=$(q '{}' | sum_values)
self=$(q "{pid=\"$rpid\"}" | sum_values)
spun=$(q '{process="spin"}' | sum_values)
share=$(awk -v s="$self" -v a="$all" 'BEGIN { printf "%.3f", (a > 0 ? 100 * s / a : 100) }')
if awk -v a="$all" -v p="$spun" 'BEGIN { exit !(a > 0 && p > 0.5 * a) }' &&
	awk -v s="$share" 'BEGIN { exit !(s <= 1) }'; then
	pass "run_self_share_under_1pct (hearth ${share}% of ${all} sample units; spin ${spun})"
else
	fail run_self_share_under_1pct "hearth ${share}% (self ${self} of ${all}; spin ${spun})"
fi
kill "$rpid"
finish
