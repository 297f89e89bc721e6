#!/usr/bin/env bash
# `hearth record --wall` / `--off-cpu` (docs/offcpu.md) on workloads that wait in
# known ways and measure it themselves (tests/workloads/offcpu.c):
#  - a thread that computes 3 ms and sleeps 7 ms: its [off-cpu: sleep] share of
#    its wall time within 3 points of the share of time it measured around
#    nanosleep (clock_gettime), over snapshots bracketing the recording;
#  - a thread blocked in read(2) on a pipe written every 20 ms: io ~ all its
#    time, with its function and the kernel's pipe_read in the stacks;
#  - two threads contending for one mutex: the time in glibc's lock slow path
#    (its [off-cpu: lock] futex wait, the run-queue wait after the wakeup, the
#    syscall's CPU) within 10% of what each measured around pthread_mutex_lock;
#  - wall time per thread (on-CPU samples x period + off-CPU) within 5% of the
#    recording's duration;
#  - 3 always-runnable threads pinned to CPU 0: their runqueue share within 10
#    points of their schedstat run_delay / (run time + run_delay);
#  - a thread in a cgroup with a CPU quota of 10% (and a large weight): throttled time appears, its
#    rate within 25% of the cgroup's own throttled time (cpu.stat);
#  - a CPython thread sleeping in a Python function: its off-CPU stacks carry
#    the Python frames (napper) down to [off-cpu: sleep];
#  - `go tool pprof -top` reads the off-CPU pprof (sample type off_cpu);
#  - `hearth run --off-cpu` stores the off_cpu and wall types, with the reason
#    as a series label, and shows the recorder's counters on /metrics.
# The sleep, pipe and lock workloads run SCHED_FIFO (chrt -f 5): on this shared
# 2-core machine a CFS thread woken from nanosleep waited ~60% of its time for a
# CPU, which the workload's clock counts as sleep and hearth as runqueue; at
# FIFO that wait is gone and both measure the same thing.
# Shares come from `go tool pprof -tags` per tid (label `reason`); pprof prints
# them with 2 decimals. Each check prints its figures and tolerance.
# test-runner: serial (it compares recorded wait shares with the workloads' own clocks)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root offcpu
if ! command -v go > /dev/null; then
	skip offcpu "go (golang-go) is not installed: go tool pprof reads the profiles"
	exit 0
fi
GOENV="HOME=$T/gohome GOCACHE=$T/gocache GOPROXY=off"
pprof() { env $GOENV go tool pprof "$@" 2> /dev/null; }

# reason_pct FILE TID REASON: REASON's share (%) of thread TID's samples.
reason_pct() {
	pprof -tagfocus="tid=$2" -tags "$1" | awk -v r="$3" '
		/^ *reason:/ { in_r = 1; next } /^ *[a-z]+:/ { in_r = 0 }
		in_r && $NF == r && match($0, /\( *[0-9.]+%\)/) {
			# "(99.9%)", or padded "(  100%)": the number in the parentheses
			v = substr($0, RSTART, RLENGTH); gsub(/[() %]/, "", v); print v; found = 1 }
		END { if (!found) print 0 }'
}
# to_seconds: pprof's "1.70s", "980ms", "3.2us" on stdin as seconds.
to_seconds() {
	awk '{ v = $1; u = v; sub(/[a-z]+$/, "", v); sub(/^[0-9.]+/, "", u)
		m = (u == "s") ? 1 : (u == "ms") ? 1e-3 : (u == "us") ? 1e-6 : (u == "ns") ? 1e-9 : (u == "min") ? 60 : (u == "hrs") ? 3600 : 0
		printf "%.4f\n", v * m; exit }'
}
# tid_seconds FILE TID: the thread's total ("tid: Total 5.1s" of its own focus).
tid_seconds() {
	pprof -tagfocus="tid=$2" -tags "$1" | sed -n 's/^ *tid: Total \([^ ]*\).*/\1/p' | to_seconds
}
# focus_seconds FILE TID FUNC: the thread's time with FUNC on the stack (any reason).
focus_seconds() {
	pprof -tagfocus="tid=$2" -focus="$3" -nodefraction=0 -top "$1" |
		sed -n 's/^Showing nodes accounting for \([^,]*\),.*/\1/p' | to_seconds
}
# duration FILE: the profile's duration in seconds ("Duration: 6.01s").
duration() { pprof -top "$1" | sed -n 's/^Duration: \([0-9.]*\)s.*/\1/p'; }
# truth_of FILE TID N: "WAITED ELAPSED" of the thread's Nth snapshot line.
truth_of() { awk -v t="$2" -v n="$3" '$1 == "thread" && $2 == t { if (++k == n) { print $4, $5; exit } }' "$1"; }
# within A B TOL: |A - B| <= TOL
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }
tids_of() { awk '$1 == "thread" { print $2 }' "$1" | sort -u; }

# ---- sleep and pipe in one wall-clock recording, then the lock pair alone
# (beside the others, the lockers waited for a CPU after their wakeups: time
# their clock counts as lock and hearth as runqueue) ----
# start_fifo MODE: starts `offcpu MODE` at SCHED_FIFO 5; its pid in pid_MODE.
start_fifo() {
	chrt -f 5 "$W/offcpu" "$1" > "$T/$1.out" &
	BG_PIDS+=($!)
	wait_lines "$T/$1.out" 1 5 || { fail offcpu_start "offcpu $1 printed no pid"; finish; }
	eval "pid_$1=\$(head -1 \"$T/$1.out\")"
}
start_fifo sleep
start_fifo pipe
# record_wall NAME PIDS...: snapshot, record 6 s, snapshot; 1 when it failed.
record_wall() {
	local name=$1 p
	shift
	for p in "$@"; do kill -USR1 "$p"; done
	for p in "$@"; do wait_for 5 grep -q '^thread' "$T/$(pid_mode "$p").out"; done
	"$HEARTH" record --wall -F 999 -d 6 -q -p "$(IFS=,; echo "$*")" \
		-o "$T/$name.pb.gz" 2> "$T/$name.err"
	local rc=$?
	for p in "$@"; do kill -USR1 "$p"; done
	cat "$T/$name.err"
	if [ $rc -ne 0 ]; then
		fail "offcpu_record_$name" "hearth record --wall exited $rc: $(cat "$T/$name.err")"
		return 1
	fi
}
pid_mode() { for m in sleep pipe lock; do [ "$(eval echo "\${pid_$m:-}")" = "$1" ] && echo $m; done; }
# second_snapshot MODE: waits for the snapshot lines sent after the recording.
second_snapshot() {
	local n
	n=$(tids_of "$T/$1.out" | wc -l)
	wait_for 5 awk -v n=$((2 * n)) '$1 == "thread" { k++ } END { exit !(k >= n) }' "$T/$1.out"
}
record_wall wall "$pid_sleep" "$pid_pipe" || finish
second_snapshot sleep
second_snapshot pipe
kill "$pid_sleep" "$pid_pipe"
start_fifo lock
record_wall lockrec "$pid_lock" || finish
second_snapshot lock
grep -o 'off-cpu: [0-9]* switches.*' "$T/wall.err" | head -1
grep -q 'off-cpu: [0-9]* switches' "$T/wall.err" && pass offcpu_summary_counters ||
	fail offcpu_summary_counters "no off-cpu counter line in: $(cat "$T/wall.err")"
# A CPU sample that came inside a thread's own off-CPU walk is not in the CPU
# profile, but its time is the thread's on-CPU time in the wall view: every one is
# sent so, but for a full ring buffer (counted apart) and a walk still under way on
# a CPU when record read its counters at the recording's end (one tick a CPU; a
# clean run had 17 of 19 when record read the drops after building the profile).
NCPU=$(getconf _NPROCESSORS_ONLN)
for rec in wall lockrec; do
	read -r dropped credited full <<< "$(awk '
		match($0, /[0-9]+ inside an off-CPU walk/) { d = substr($0, RSTART, RLENGTH) + 0 }
		match($0, /[0-9]+ CPU samples inside a thread.s walk/) { c = substr($0, RSTART, RLENGTH) + 0 }
		match($0, /[0-9]+ ring buffer full/) { f = substr($0, RSTART, RLENGTH) + 0 }
		END { print d + 0, c + 0, f + 0 }' "$T/$rec.err")"
	if [ "$credited" -le "$dropped" ] && [ $((credited + full + NCPU)) -ge "$dropped" ]; then
		pass "offcpu_walk_samples_kept_$rec: $credited of $dropped samples inside walks kept as on-CPU time ($full ring buffer full; $NCPU CPUs)"
	else
		fail "offcpu_walk_samples_kept_$rec" "$credited of $dropped kept ($full ring buffer full, $NCPU CPUs): $(cat "$T/$rec.err")"
	fi
done
dur=$(duration "$T/wall.pb.gz")
ldur=$(duration "$T/lockrec.pb.gz")
echo "recording durations ${dur}s, ${ldur}s"

# The sleeper: share of [off-cpu: sleep] in its wall vs its own measure.
tid=$(tids_of "$T/sleep.out")
read -r w1 e1 <<< "$(truth_of "$T/sleep.out" "$tid" 1)"
read -r w2 e2 <<< "$(truth_of "$T/sleep.out" "$tid" 2)"
truth=$(awk -v a="$w1" -v b="$w2" -v c="$e1" -v d="$e2" 'BEGIN { printf "%.2f", 100 * (b - a) / (d - c) }')
got=$(reason_pct "$T/wall.pb.gz" "$tid" sleep)
if within "$got" "$truth" 3; then
	pass "offcpu_sleep_share: ${got}% sleep, truth ${truth}% (tolerance ±3 points; one block ~7 ms, ~600 blocks)"
else
	fail offcpu_sleep_share "${got}% sleep, truth ${truth}% (want within ±3 points)"
fi

# The pipe reader: io all its time, in read() under off_pipe_reader.
tid=$(tids_of "$T/pipe.out")
got=$(reason_pct "$T/wall.pb.gz" "$tid" io)
read -r w1 e1 <<< "$(truth_of "$T/pipe.out" "$tid" 1)"
read -r w2 e2 <<< "$(truth_of "$T/pipe.out" "$tid" 2)"
truth=$(awk -v a="$w1" -v b="$w2" -v c="$e1" -v d="$e2" 'BEGIN { printf "%.2f", 100 * (b - a) / (d - c) }')
if within "$got" "$truth" 3; then
	pass "offcpu_pipe_io: ${got}% io, truth ${truth}% blocked in read (tolerance ±3 points, ~300 writes)"
else
	fail offcpu_pipe_io "${got}% io, truth ${truth}% (want within ±3 points)"
fi
top=$(pprof -tagfocus="tid=$tid" -top -nodecount=200 "$T/wall.pb.gz")
if grep -q 'off_pipe_reader' <<< "$top" && grep -q 'pipe_read' <<< "$top" &&
	grep -q '\[off-cpu: io\]' <<< "$top"; then
	pass "offcpu_pipe_stack: off_pipe_reader, pipe_read and [off-cpu: io] in its stacks"
else
	fail offcpu_pipe_stack "missing off_pipe_reader / pipe_read / [off-cpu: io]: $(head -20 <<< "$top")"
fi

# The lock threads: the time they spent in glibc's lock slow path
# (__lll_lock_wait: the futex wait [off-cpu: lock], the wait for a CPU once woken,
# the syscall's own CPU time) vs their clock around pthread_mutex_lock.
for tid in $(tids_of "$T/lock.out"); do
	read -r w1 e1 <<< "$(truth_of "$T/lock.out" "$tid" 1)"
	read -r w2 e2 <<< "$(truth_of "$T/lock.out" "$tid" 2)"
	truth=$(awk -v a="$w1" -v b="$w2" -v c="$e1" -v d="$e2" 'BEGIN { printf "%.2f", 100 * (b - a) / (d - c) }')
	lock=$(reason_pct "$T/lockrec.pb.gz" "$tid" lock)
	in_lock=$(focus_seconds "$T/lockrec.pb.gz" "$tid" __lll_lock_wait)
	all=$(tid_seconds "$T/lockrec.pb.gz" "$tid")
	got=$(awk -v a="$in_lock" -v b="$all" 'BEGIN { if (b > 0) printf "%.2f", 100 * a / b }')
	tol=$(awk -v t="$truth" 'BEGIN { printf "%.2f", t / 10 }')
	if [ -n "$got" ] && within "$got" "$truth" "$tol"; then
		pass "offcpu_lock_time_$tid: ${got}% in the lock (${lock}% [off-cpu: lock]), truth ${truth}% (tolerance ±10% = ±${tol} points)"
	else
		fail "offcpu_lock_time_$tid" "'${got}'% in the lock (${lock}% [off-cpu: lock]), truth ${truth}% (want within ±${tol} points)"
	fi
done

# Wall time per thread within 5% of the recording's duration.
for f in wall:sleep wall:pipe lockrec:lock; do
	rec=${f%%:*} m=${f##*:}
	d=$dur
	[ "$rec" = lockrec ] && d=$ldur
	for tid in $(tids_of "$T/$m.out"); do
		got=$(tid_seconds "$T/$rec.pb.gz" "$tid")
		tol=$(awk -v d="$d" 'BEGIN { printf "%.3f", d * 0.05 }')
		if [ -n "$got" ] && [ -n "$d" ] && within "$got" "$d" "$tol"; then
			pass "offcpu_wall_${m}_$tid: ${got}s of ${d}s (tolerance ±5% = ±${tol}s)"
		else
			fail "offcpu_wall_${m}_$tid" "'${got}'s of '${d}'s (want within ±5%); hearth: $(grep -o 'dropped [0-9]* samples[^;]*\|off-cpu: [0-9]* switches.*' "$T/$rec.err" | tr '\n' ' ')"
		fi
	done
done

# ---- Python frames in off-CPU stacks (the same walk as on-CPU samples) ----
if command -v python3 > /dev/null; then
	printf 'import time\ndef napper():\n    time.sleep(0.02)\nwhile True:\n    napper()\n' > "$T/nap.py"
	python3 "$T/nap.py" &
	py=$!
	BG_PIDS+=($py)
	wait_for 5 test -r /proc/$py/maps
	# 6 s: the recording loads its tables while it runs (20 ms of work a turn of its
	# loop); under load that once took 0.7 s, 40% of a 2 s recording's sleeps
	"$HEARTH" record --off-cpu -d 6 -q -p "$py" -o "$T/py.folded" 2> "$T/py.err"
	# share of its sleep time whose stack runs napper (Python) to [off-cpu: sleep]
	# (its run-queue waits after preemptions in user mode have the leaf pc only)
	got=$(awk '/\[off-cpu: sleep\] [0-9]+$/ { t += $NF; if ($0 ~ /napper;/) g += $NF }
		END { if (t > 0) printf "%.1f", 100 * g / t }' "$T/py.folded")
	if [ -n "$got" ] && awk -v g="$got" 'BEGIN { exit !(g >= 80) }'; then
		pass "offcpu_python_frames: ${got}% of the sleep time under napper (a Python function) (want >= 80%; ~100 sleeps)"
	else
		fail offcpu_python_frames "'${got}'% of the time under napper ... [off-cpu: sleep] (want >= 80%): $(head -c 600 "$T/py.folded"; cat "$T/py.err")"
	fi
	kill "$py"
else
	skip offcpu_python_frames "no python3"
fi

# ---- run-queue wait: 3 runnable threads on CPU 0, truth from schedstat ----
"$W/offcpu" runq 3 > "$T/runq.out" &
BG_PIDS+=($!)
wait_lines "$T/runq.out" 1 5 || { fail offcpu_runq "offcpu runq printed no pid"; finish; }
pid=$(head -1 "$T/runq.out")
snap() { for f in /proc/"$pid"/task/*/schedstat; do echo "${f//[^0-9]/ } $(cat "$f")"; done; }
snap > "$T/ss1"
"$HEARTH" record --wall -F 999 -d 4 -q -p "$pid" -o "$T/runq.pb.gz" 2> "$T/runq.err" ||
	fail offcpu_record_runq "hearth record exited non-zero: $(cat "$T/runq.err")"
snap > "$T/ss2"
for tid in $(ls /proc/"$pid"/task); do
	[ "$tid" = "$pid" ] && continue
	truth=$(awk -v t="$tid" '$2 == t { if (FILENAME ~ /ss1/) { c = $3; d = $4 } else { c2 = $3; d2 = $4 } }
		END { printf "%.2f", 100 * (d2 - d) / ((c2 - c) + (d2 - d)) }' "$T/ss1" "$T/ss2")
	got=$(reason_pct "$T/runq.pb.gz" "$tid" runqueue)
	if within "$got" "$truth" 10; then
		pass "offcpu_runqueue_$tid: ${got}% runqueue, schedstat ${truth}% (tolerance ±10 points)"
	else
		fail "offcpu_runqueue_$tid" "${got}% runqueue, schedstat ${truth}% (want within ±10 points)"
	fi
done

# ---- throttling: one spinning thread in a cgroup with a 10% CPU quota ----
CG=""
cg_cleanup() { [ -n "$CG" ] && [ -d "$CG" ] && { for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill "$p"; done; sleep 0.2; rmdir "$CG"; }; }
trap 'cg_cleanup; cleanup_lib' EXIT
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
	CG=/sys/fs/cgroup/hearth-offcpu-$$
	mkdir "$CG" && echo "+cpu" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
	echo "10000 100000" > "$CG/cpu.max"
	echo 10000 > "$CG/cpu.weight" # runnable beside the other work: reaches its quota
	throttled() { awk '$1 == "throttled_usec" { print $2 * 1000 }' "$CG/cpu.stat"; }
elif [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then # cgroup v1 (hybrid hosts)
	CG=/sys/fs/cgroup/cpu/hearth-offcpu-$$
	mkdir "$CG" && echo 100000 > "$CG/cpu.cfs_period_us" && echo 10000 > "$CG/cpu.cfs_quota_us"
	echo 262144 > "$CG/cpu.shares" # runnable beside the other work: reaches its quota
	throttled() { awk '$1 == "throttled_time" { print $2 }' "$CG/cpu.stat"; }
fi
if [ -z "$CG" ] || [ ! -d "$CG" ]; then
	skip offcpu_throttled "no cgroup cpu controller to set a quota on"
else
	"$W/offcpu" spin > "$T/spin.out" &
	spid=$!
	BG_PIDS+=($spid)
	echo "$spid" > "$CG/cgroup.procs"
	wait_lines "$T/spin.out" 1 5
	th1=$(throttled) t1=$EPOCHREALTIME
	"$HEARTH" record --off-cpu -d 4 -q -p "$spid" -o "$T/off.pb.gz" 2> "$T/off.err" ||
		fail offcpu_record_off "hearth record --off-cpu exited non-zero: $(cat "$T/off.err")"
	th2=$(throttled) t2=$EPOCHREALTIME
	tid=$(ls /proc/"$spid"/task | grep -vx "$spid" | head -1)
	pct=$(reason_pct "$T/off.pb.gz" "$tid" throttled)
	secs=$(tid_seconds "$T/off.pb.gz" "$tid")
	d=$(duration "$T/off.pb.gz")
	got=$(awk -v p="$pct" -v s="$secs" -v d="$d" 'BEGIN { printf "%.3f", p / 100 * s / d }')
	truth=$(awk -v a="$th1" -v b="$th2" -v c="$t1" -v e="$t2" 'BEGIN { printf "%.3f", (b - a) / 1e9 / (e - c) }')
	tol=$(awk -v t="$truth" 'BEGIN { printf "%.3f", t / 4 }')
	if awk -v g="$got" 'BEGIN { exit !(g > 0) }' && within "$got" "$truth" "$tol"; then
		pass "offcpu_throttled: ${got} s/s throttled, cgroup cpu.stat ${truth} s/s (tolerance ±25% = ±${tol})"
	else
		fail offcpu_throttled "${got} s/s throttled, cgroup cpu.stat ${truth} s/s (want within ±${tol}); $(pprof -tags "$T/off.pb.gz" | head -20)"
	fi
	# A real client reads the off-CPU profile.
	top=$(pprof -top "$T/off.pb.gz")
	if grep -q '^Type: off_cpu' <<< "$top" && grep -q '\[off-cpu: throttled\]' <<< "$top"; then
		pass "offcpu_go_pprof: go tool pprof -top reads it (Type: off_cpu)"
	else
		fail offcpu_go_pprof "go tool pprof -top: $(head -12 <<< "$top")"
	fi
fi
# ---- continuous mode: hearth run --off-cpu stores both types ----
start_hearth "$T/run.log" run --off-cpu --interval 1 --data "$T/data" --listen 127.0.0.1:0 ||
	{ fail offcpu_run "hearth run --off-cpu did not start: $(tail -3 "$T/run.log")"; finish; }
types() { curl -s --max-time 5 "$HURL/pyroscope/label-values?label=__profile_type__"; }
if wait_for 30 eval 'types | grep -q "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds" && types | grep -q "wall:wall:nanoseconds:wall:nanoseconds"'; then
	pass "offcpu_run_types: $(types)"
else
	fail offcpu_run_types "after 30 s the types are: $(types)"
fi
reasons=$(curl -s --max-time 5 "$HURL/pyroscope/label-values?label=reason")
grep -q '"running"' <<< "$reasons" && grep -q '"sleep"' <<< "$reasons" &&
	pass "offcpu_run_reason_label: reason values $reasons" ||
	fail offcpu_run_reason_label "reason values: '$reasons'"
curl -s --max-time 5 "$HURL/metrics" | grep -q '^hearth_agent_offcpu_switches_total [1-9]' &&
	pass offcpu_run_metrics || fail offcpu_run_metrics "no hearth_agent_offcpu_switches_total > 0 on /metrics"
kill "$SPID"
finish
