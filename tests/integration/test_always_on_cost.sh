#!/usr/bin/env bash
# Guards of the always-on promise (an always-on profiler nobody notices):
#  1. `hearth agent`, the `hearth server` it pushes to, and `hearth run` use at
#     most 2% of one core over a 10 s window once started, and none of their
#     threads wakes more than 20 times a second (a thread with nothing to do
#     sleeps: this is what caught the sender's spin).
#  2. While `hearth run` profiles a busy workload on every core, its own store
#     shows hearth's process at most 1% of the machine's samples: the product
#     looks at itself.
# CPU comes from /proc/PID/stat (utime + stime of every thread), wakeups from
# voluntary_ctxt_switches in /proc/PID/task/*/status, both as deltas over the
# window. The window starts after start-up (BPF load, kallsyms, first maps
# reads, first profile delivered): that one-time cost is bench/overhead's
# business, not a steady one.
#
# No machine is quiet: a CI runner and a shared build machine start tens of
# processes a second, and hearth has real work for each one it samples (a
# process event: read its maps while it lives, build its unwind tables). The
# PASS lines print the machine's process starts per second over the window
# (/proc/stat "processes") next to every thread's wakeups, so a figure can be
# read against the churn that caused it.
# test-runner: serial (it measures hearth's CPU and wakeups: another test's load would be in them)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root always_on_cost

WINDOW=${HEARTH_COST_WINDOW:-10}
# CPU: one tick of CLK_TCK (1/100 s) over the 10 s window is 0.1%; 2% is the
# product's promise for a machine that leaves hearth little to do, not a fit.
# Measured here (2-core VM shared with others' builds, 12-173 process starts/s,
# 9 runs, 2 of them with a CPU hog): agent 1.0-2.2% and once 7.5%, server
# 0.1-0.3%, run 0.5-2.8%. The excess is work, not waiting: hearth's own profile
# of that time is symbol tables of freshly built binaries (qsort, DWARF, page
# faults of new mappings), which a runner doing only this test does not have.
# A failure prints the churn beside the ticks, to be read against it.
MAX_CORE_PCT=2
# Wakeups: what remains once a thread has nothing to do is its deadlines (the
# main loop's 1 s drain and interval flush, ~1.2/s; the sink's store writes and
# the sender's push each interval, 0.2-2/s) plus, for the main thread, process
# churn: process events and first samples wake it for each record, and runs of
# them are gathered in 100 ms naps (src/agent/agent.c, AGENT_GATHER_NS): ~10/s
# under steady churn, at most ~14/s plus the deadlines by construction (at
# the default 99 Hz). Measured per thread over 10 s windows (9 runs of this
# test, 2 with a CPU hog, and 10 windows of `hearth run` alone, 5 with a hog;
# 12-173 process starts/s): main 4.8-12.2 (the low at 12 starts/s),
# sender/sink 0.2-1.9, server MHD-connection 0.4-0.8, all other threads 0.0.
# Before the gathering the main thread woke once per record: 15-56/s
# here, 21.4 on the CI runner that failed this check. 20 is ~1.6 times the
# highest measured and above the bound by construction; a loop that wakes per
# record again, or polls on a timer under 50 ms, fails it.
MAX_WAKES_PER_S=20
TCK=$(getconf CLK_TCK)

ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; } # utime stime
forks() { awk '$1 == "processes" { print $2 }' /proc/stat; }

# "TID COMM VOLUNTARY" per thread of PID.
wakes() {
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ < "$t/comm")" \
			"$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status")"
	done 2>/dev/null | sort
}

# Measures each NAME:PID over the same WINDOW seconds; checks CPU and wakeups.
check_quiet() { # name:pid...
	local np name pid u1 s1 pct all worst f0 f1 churn
	declare -A u0 s0
	f0=$(forks)
	for np in "$@"; do
		name=${np%%:*} pid=${np#*:}
		read -r u0[$name] s0[$name] < <(ticks "$pid")
		wakes "$pid" > "$T/$name.w0"
	done
	sleep "$WINDOW" # the window itself: what is measured is the process left alone
	f1=$(forks)
	churn=$(awk -v a="$f0" -v b="$f1" -v w="$WINDOW" 'BEGIN { printf "%.0f", (b - a) / w }')
	for np in "$@"; do
		name=${np%%:*} pid=${np#*:}
		read -r u1 s1 < <(ticks "$pid")
		wakes "$pid" > "$T/$name.w1"
		pct=$(awk -v u="$((u1 - u0[$name]))" -v s="$((s1 - s0[$name]))" -v w="$WINDOW" -v h="$TCK" \
			'BEGIN { printf "%.2f%% of one core over %ss: %d user + %d sys ticks of 1/%ds", 100 * (u + s) / h / w, w, u, s, h }')
		if awk -v p="${pct%%%*}" -v m="$MAX_CORE_PCT" 'BEGIN { exit !(p <= m) }'; then
			pass "${name}_quiet_cpu (${pct}; ${churn} process starts/s on the machine)"
		else
			fail "${name}_quiet_cpu" "${pct} (limit ${MAX_CORE_PCT}%; ${churn} process starts/s on the machine)"
		fi
		# Threads present at both ends, each one's wakeups per second, busiest first.
		join "$T/$name.w0" "$T/$name.w1" |
			awk -v w="$WINDOW" '{ printf "%.1f %s(%s)\n", ($5 - $3) / w, $2, $1 }' |
			sort -rn > "$T/$name.wakes"
		worst=$(head -1 "$T/$name.wakes")
		all=$(awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' "$T/$name.wakes")
		if [ -n "$worst" ] && awk -v r="${worst%% *}" -v m="$MAX_WAKES_PER_S" 'BEGIN { exit !(r <= m) }'; then
			pass "${name}_threads_sleep (wakeups/s per thread: ${all}; limit ${MAX_WAKES_PER_S}; ${churn} process starts/s)"
		else
			fail "${name}_threads_sleep" "wakeups/s per thread: ${all} (limit ${MAX_WAKES_PER_S}; ${churn} process starts/s)"
		fi
	done
}

# Started and ready: /healthz answers, the first profile has been built and
# delivered (to the server, or to run's store). The first drain reads
# /proc/kallsyms and every sampled object's symbols once (~0.2 s of CPU on this
# machine kind), and the first delivery opens the store's files: start-up.
metric_at_least() { # url, name, n
	curl -sf --max-time 5 "$1/metrics" | awk -v n="$2" -v m="$3" '$1 == n && $2 >= m { ok = 1 } END { exit !ok }'
}
settle() { # url
	wait_for 20 curl -sf --max-time 5 -o /dev/null "$1/healthz" || return 1
	wait_for 30 metric_at_least "$1" hearth_agent_profiles_total 1 || return 1
	wait_for 30 metric_at_least "$1" hearth_agent_sent_total 1
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
wait "${spins[@]}" # each spins SECS seconds
# The interval that holds the spin's end is flushed at its end, after this read
# of the queued count; it is in the store once everything queued was delivered.
queued=$(metric "$RURL" hearth_agent_profiles_total)
in_store() {
	local q s
	q=$(metric "$RURL" hearth_agent_profiles_total) s=$(metric "$RURL" hearth_agent_sent_total)
	[ "${q:-0}" -gt "$queued" ] && [ "${s:-0}" -ge "$q" ]
}
wait_for 30 in_store || fail run_flush "no profile after the spin reached the store in 30 s (queued $queued)"
q() { curl -s --max-time 30 -g "$RURL/api/timeline?from=$t_start&until=$((t_start + SECS))&step=${SECS}s&query=$1"; }
sum_values() { jq '[.groups[].values[] | numbers] | add // 0'; }
all=$(q '{}' | sum_values)
self=$(q "{pid=\"$rpid\"}" | sum_values)
spun=$(q '{process="spin"}' | sum_values)
share=$(awk -v s="$self" -v a="$all" 'BEGIN { printf "%.3f", (a > 0 ? 100 * s / a : 100) }')
# All is ~CPUs x 99 Hz x SECS samples (~3960 on 2 CPUs). The limit is the
# product's promise, not a fit. A share estimated from N samples is binomial:
# 4 standard deviations (share_tol, 1 run in ~16,000) are ~0.63 points at 1% of
# 3960 and ~0.45 points at 0.5%, so a true share up to ~0.55% passes reliably.
# Measured here (9 runs, 2 with a CPU hog, others' builds churning 12-173
# process starts/s): 0.30-0.89%, the highs with the hog and the churn; hearth's
# share grows with the processes it has to learn, so a machine running only this
# test leaves more room than this one.
# The share is of a busy machine, whoever kept it busy (on a shared machine
# other work takes its part of the CPUs from spin: 488-847 of ~3950 here), with
# spin's samples in the store. The window's edges fall inside the 5 s profiles
# that straddle them (2967-3948 samples measured), so half of CPUs x 99 Hz x
# SECS is what a stored, sampled window is sure to exceed.
tol=$(share_tol 1 "${all%.*}")
busy=$(($(nproc) * 99 * SECS / 2))
if awk -v a="$all" -v b="$busy" -v p="$spun" 'BEGIN { exit !(a >= b && p > 0) }' &&
	awk -v s="$share" 'BEGIN { exit !(s <= 1) }'; then
	pass "run_self_share_under_1pct (hearth ${share}% = ${self} of ${all} samples; 4 sd at 1%: ${tol} points; spin ${spun})"
else
	fail run_self_share_under_1pct "hearth ${share}% (${self} of ${all} samples, at least ${busy} wanted; 4 sd at 1%: ${tol} points; spin ${spun})"
fi
kill "$rpid"
finish
