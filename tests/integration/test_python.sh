#!/usr/bin/env bash
# Issue 17: Python frames in every stack. tests/workloads/pyhot.py runs
# <module> -> outer -> middle, which calls hot_a twice and hot_b once per round
# (same loop: hot_a has 2/3 of the time), while a second thread runs
# worker -> spin_b -> hot_b. For each supported CPython (pyenv's 3.10-3.13 and
# Debian's static /usr/bin/python3.11), `hearth record -p` with the defaults:
#  - >= 95% of the process's samples carry Python frames (pyhot.*);
#  - the Python frames read in call order, each thread its own (the main
#    thread's never under worker, the worker's never under outer);
#  - they sit where the interpreter ran: under the native main, and no
#    _PyEval_EvalFrameDefault is left in a stack with Python frames;
#  - hot_a's share of hot_a + hot_b on the main thread agrees with the truth of
#    the same window, the main thread's CPU time in each (pyhot.py measures it
#    with time.thread_time_ns and prints it on SIGUSR1), within 4 binomial
#    standard deviations of the sample count plus 0.5 points for the window;
#  - 3.12 and 3.13 under -X perf: the leaf Python function agrees, sample by
#    sample, with the perf-map trampoline frame (py::NAME) of the same sample;
#  - a process started after the recording began is walked too;
#  - --python off gives native frames only;
#  - hearth run shows Python frames by default (the store's folded answer).
# austin (Debian's CPython frame sampler) is compared where it can read the
# interpreter; a version it cannot read is reported, not counted.
# Every child is waited for by what it announces ("ready", once in its loop),
# every wait has a deadline; no fixed sleep stands for "long enough".
# test-runner: serial (it compares sampled shares with the workload's CPU clocks and with austin)
. "$(dirname "$0")/lib.sh"
need_root python
sum() { awk '{ s += $NF } END { print s + 0 }'; }
APP=$HEARTH_ROOT/tests/workloads/pyhot.py
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
PYS=("$PYENV/3.10.13/bin/python3.10" "$PYENV/3.11.7/bin/python3.11" "$PYENV/3.12.1/bin/python3.12"
	"$PYENV/3.13.0/bin/python3.13" /usr/bin/python3.11)

# Folded lines reduced to their pyhot.* frames, with the count.
pyframes() { # folded file
	awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); s = "";
		for (i = 1; i <= k; i++) { g = f[i]; sub(/ +$/, "", g); if (g ~ /^pyhot\./) s = s (s ? ";" : "") g }
		if (s != "") print s, n }' "$1"
}
# Starts pyhot.py (python binary and arguments) in the background with its
# output in $T/NAME.out (PYOUT); sets PYPID (no subshell: the child stays the
# test's). Returns 1 unless the child says "ready" (after its pid) within 30 s.
start_py() { # name, python, args...
	PYOUT=$T/$1.out
	shift
	: > "$PYOUT" # there before the child opens it: waits read it at once
	"$@" > "$PYOUT" &
	PYPID=$!
	BG_PIDS+=($PYPID)
	wait_lines "$PYOUT" 2 30 && [ "$(sed -n 2p "$PYOUT")" = ready ]
}
stop_py() { kill "$PYPID" 2> /dev/null; wait "$PYPID" 2> /dev/null; }
# The child's CPU time so far in hot_a and hot_b ("A_NS B_NS"): SIGUSR1, then its
# next "cpu" line, waited for (10 s at most).
cpu_now() {
	TRUTH_PID=$PYPID TRUTH_OUT=$PYOUT truth_now | awk '{ print $2, $3 }'
}
# A hearth record has begun sampling once it holds a cpu-clock perf event for
# every online CPU: hearth opens them last, after the exec tracepoint.
sampling() { # pid of a hearth record
	[ "$(find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2> /dev/null | wc -l)" -ge "$(getconf _NPROCESSORS_ONLN)" ]
}
# True once the child's main thread has spent SECS of CPU time in hot_a and
# hot_b since REC_C0; sets REC_C1.
spent() { # seconds
	REC_C1=$(cpu_now) && awk -v c0="$REC_C0" -v c1="$REC_C1" -v s="$1" 'BEGIN {
		split(c0, x, " "); split(c1, y, " "); exit !(y[1] - x[1] + y[2] - x[2] >= s * 1e9) }'
}
# Records the child (PYPID) with `hearth record -p` until its main thread has
# spent SECS of CPU time in hot_a and hot_b (120 s at most), then stops the
# recording (SIGINT): as many samples on a busy machine as on an idle one.
# REC_C0 and REC_C1 are the child's CPU times at the ends of that window, taken
# while hearth samples. Returns hearth's exit status.
record_cpu() { # seconds, folded out, stderr file, hearth record args...
	local secs=$1 out=$2 err=$3 rec
	shift 3
	"$HEARTH" record -p "$PYPID" -d 600 -o "$out" "$@" 2> "$err" &
	rec=$!
	wait_for 30 sampling "$rec" || echo "INFO: hearth record had not begun sampling after 30 s"
	REC_C0=$(cpu_now)
	REC_C1=$REC_C0
	wait_for 120 spent "$secs" || echo "INFO: the child did not spend $secs s of CPU in 120 s ($REC_C0 -> $REC_C1)"
	kill -INT "$rec" 2> /dev/null
	wait "$rec"
}

MAIN_CHAIN='^pyhot\.<module>;pyhot\.outer;pyhot\.middle(;pyhot\.hot_[ab])? '
THREAD_CHAIN='^pyhot\.worker;pyhot\.spin_b(;pyhot\.hot_b)? '

check_version() { # python binary, tag
	local py=$1 tag=$2 pid tot withpy inorder main thr a b
	if [ ! -x "$py" ]; then
		fail "python_$tag" "$py is missing (pyenv's interpreters are part of these machines)"
		return
	fi
	# The children run longer than the recordings and are stopped after them.
	if ! start_py "$tag" "$py" "$APP" 120 threads; then
		fail "python_$tag" "no 'ready' from $py in 30 s: $(head -c 300 "$PYOUT")"
		stop_py
		return
	fi
	pid=$PYPID
	# 1.5 s of the main thread's CPU time: ~1500 samples of it, as many of the
	# worker, at 499 Hz.
	if ! record_cpu 1.5 "$T/$tag.folded" "$T/$tag.err" -F 499; then
		fail "python_$tag" "hearth record failed: $(cat "$T/$tag.err")"
		stop_py
		return
	fi
	grep 'python:' "$T/$tag.err"
	tot=$(sum < "$T/$tag.folded")
	withpy=$(grep ';pyhot\.' "$T/$tag.folded" | sum)
	if [ "$tot" -ge 500 ] && [ $((withpy * 100)) -ge $((tot * 95)) ]; then
		pass "python_frames_$tag: $withpy of $tot samples carry Python frames"
	else
		fail "python_frames_$tag" "$withpy of $tot samples carry Python frames (want >= 95%, >= 500 samples); without: $(grep -v ';pyhot\.' "$T/$tag.folded" | sort -t' ' -k2 -rn | head -3 | cut -c1-300)"
	fi
	pyframes "$T/$tag.folded" > "$T/$tag.py"
	inorder=$(grep -E "$MAIN_CHAIN|$THREAD_CHAIN" "$T/$tag.py" | sum)
	main=$(grep -E "$MAIN_CHAIN" "$T/$tag.py" | sum)
	thr=$(grep -E "$THREAD_CHAIN" "$T/$tag.py" | sum)
	if [ "$withpy" -gt 0 ] && [ $((inorder * 100)) -ge $((withpy * 99)) ] && [ "$main" -gt 0 ] && [ "$thr" -gt 0 ]; then
		pass "python_order_$tag: $inorder of $withpy in call order (main thread $main, worker $thr)"
	else
		fail "python_order_$tag" "$inorder of $withpy in call order (main $main, worker $thr); others: $(grep -vE "$MAIN_CHAIN|$THREAD_CHAIN" "$T/$tag.py" | sort -t' ' -k2 -rn | head -5)"
	fi
	# Interleaved: native main below the Python frames, no evaluation loop left.
	local placed evalleft
	placed=$(grep -E ';(main|Py_BytesMain);(.*;)?pyhot\.<module>;' "$T/$tag.folded" | sum)
	evalleft=$(grep ';pyhot\.' "$T/$tag.folded" | grep '_PyEval_EvalFrameDefault' | sum)
	if [ "$main" -gt 0 ] && [ $((placed * 100)) -ge $((main * 95)) ] && [ $((evalleft * 100)) -le "$withpy" ]; then
		pass "python_interleaved_$tag: $placed of $main main-thread samples under native main; $evalleft with _PyEval_EvalFrameDefault left"
	else
		fail "python_interleaved_$tag" "$placed of $main under native main, $evalleft of $withpy still with _PyEval_EvalFrameDefault: $(grep ';pyhot\.' "$T/$tag.folded" | sort -t' ' -k2 -rn | head -2 | cut -c1-400)"
	fi
	stop_py
	# Shares: one thread at 999 Hz until it has spent 4 s of CPU in hot_a and
	# hot_b (~4000 samples, however busy the machine), against the truth: the
	# main thread's CPU time in hot_a and hot_b over the recording (snapshots
	# while hearth samples, at most 0.1 s inside its ends). Window mismatch: hot_a's
	# share of a 4 s window moved by at most 0.19 points from that of the 5 s
	# around it (0.2 s snapshots, all five interpreters, load 5), so 0.5 points
	# are allowed for it on top of 4 standard deviations of the sampling; at
	# least 2000 samples.
	local c0 c1 truth got n tol
	if ! start_py "$tag.shares" "$py" "$APP" 120; then
		fail "python_shares_$tag" "no 'ready' from $py in 30 s: $(head -c 300 "$PYOUT")"
		stop_py
		return
	fi
	record_cpu 4 "$T/$tag.shares.folded" "$T/$tag.shares.err" -F 999 -q
	c0=$REC_C0 c1=$REC_C1
	stop_py
	pyframes "$T/$tag.shares.folded" > "$T/$tag.shares.py"
	a=$(grep -E '^pyhot\.<module>;pyhot\.outer;pyhot\.middle;pyhot\.hot_a ' "$T/$tag.shares.py" | sum)
	b=$(grep -E '^pyhot\.<module>;pyhot\.outer;pyhot\.middle;pyhot\.hot_b ' "$T/$tag.shares.py" | sum)
	n=$((a + b))
	truth=$(awk -v c0="$c0" -v c1="$c1" 'BEGIN { split(c0, x, " "); split(c1, y, " ")
		a = y[1] - x[1]; b = y[2] - x[2]; if (a + b > 0) printf "%.2f", 100 * a / (a + b) }')
	got=$(awk -v a="$a" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", 100 * a / n }')
	if [ -z "$truth" ]; then
		fail "python_shares_$tag" "no CPU time from the child around the recording ('$c0', '$c1')"
		return
	fi
	tol=$(share_tol "$truth" "$n" 0.5)
	if [ "$n" -ge 2000 ] && share_ok "$got" "$truth" "$n" 0.5; then
		pass "python_shares_$tag: hot_a $got% of $n samples (hot_a $a, hot_b $b), truth $truth% of the main thread's CPU time, tolerance $tol points"
	else
		fail "python_shares_$tag" "hot_a ${got:-?}% of $n samples (hot_a $a, hot_b $b), truth $truth% of the main thread's CPU time: want >= 2000 samples and at most $tol points apart"
	fi
}

for py in "${PYS[@]}"; do
	case $py in
	/usr/bin/*) tag=debian$(basename "$py" | tr -d 'python.') ;;
	*) tag=$(basename "$py" | tr -d 'python.') ;;
	esac
	check_version "$py" "$tag"
done

# -X perf (3.12+): the trampolines name each Python frame in the native stack too.
for py in "$PYENV/3.12.1/bin/python3.12" "$PYENV/3.13.0/bin/python3.13"; do
	tag=$(basename "$py" | tr -d 'python.')
	[ -x "$py" ] || { fail "python_xperf_$tag" "$py is missing"; continue; }
	if ! start_py "xperf$tag" "$py" -X perf "$APP" 120; then
		fail "python_xperf_$tag" "no 'ready' from $py -X perf in 30 s: $(head -c 300 "$PYOUT")"
		stop_py
		continue
	fi
	# 2 s of CPU at 499 Hz: ~1000 samples, 300 wanted.
	record_cpu 2 "$T/xperf$tag.folded" "$T/xperf$tag.err" -F 499 -q ||
		{ fail "python_xperf_$tag" "record failed: $(cat "$T/xperf$tag.err")"; stop_py; continue; }
	stop_py
	# Per sample: leaf pyhot.NAME against the leaf py::NAME trampoline.
	read -r both agree < <(awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); w = ""; p = "";
		for (i = 1; i <= k; i++) { g = f[i]; sub(/ +$/, "", g);
			if (g ~ /^pyhot\./) { w = g; sub(/^pyhot\./, "", w) }
			if (g ~ /^py::/) { p = g; sub(/^py::/, "", p); sub(/:.*/, "", p) } }
		if (w != "" && p != "") { both += n; if (w == p) agree += n } }
		END { print both + 0, agree + 0 }' "$T/xperf$tag.folded")
	if [ "$both" -ge 300 ] && [ $((agree * 100)) -ge $((both * 95)) ]; then
		pass "python_xperf_$tag: the leaf Python function agrees with -X perf's in $agree of $both samples"
	else
		fail "python_xperf_$tag" "leaf Python function agrees with -X perf's in $agree of $both samples (want >= 95%, >= 300): $(sort -t' ' -k2 -rn "$T/xperf$tag.folded" | head -2 | cut -c1-400)"
	fi
done

# A process started after the recording began (all CPUs), once hearth samples.
# It runs for 3 s of its own CPU time (pyhot.py's "cpu"), and the recording is
# stopped when it has exited: ~1500 samples at 499 Hz however busy the machine,
# 300 wanted. Its samples before it is described (its start, and the probe's
# retries) are then the same few percent of its CPU time on a busy machine.
py=$PYENV/3.12.1/bin/python3.12
"$HEARTH" record -a -F 499 -d 600 -q -o "$T/late.folded" 2> "$T/late.err" &
rec=$!
BG_PIDS+=($rec)
wait_for 30 sampling "$rec" || echo "INFO python_started_later: hearth record -a had not opened its perf events after 30 s: $(cat "$T/late.err")"
"$py" "$APP" 3 cpu > /dev/null
kill -INT "$rec"
wait $rec
tot=$(grep '^python3\.12;' "$T/late.folded" | sum)
withpy=$(grep '^python3\.12;' "$T/late.folded" | grep ';pyhot\.' | sum)
if [ "$tot" -ge 300 ] && [ $((withpy * 100)) -ge $((tot * 95)) ]; then
	pass "python_started_later: $withpy of $tot samples of a process started during the recording carry Python frames"
else
	fail python_started_later "$withpy of $tot samples (want >= 95%, >= 300): $(cat "$T/late.err") $(grep '^python3\.12;' "$T/late.folded" | grep -v ';pyhot\.' | sort -t' ' -k2 -rn | head -3 | cut -c1-300)"
fi

# --python off: the interpreter's native frames only.
start_py off "$py" "$APP" 30 || echo "INFO python_off: no 'ready' from $py in 30 s: $(head -c 300 "$PYOUT")"
"$HEARTH" record -p "$PYPID" -F 199 -d 2 -q --python off -o "$T/off.folded" 2> "$T/off.err"
stop_py
n=$(grep -c ';pyhot\.' "$T/off.folded")
ev=$(grep '_PyEval_EvalFrameDefault' "$T/off.folded" | sum)
if [ "$n" -eq 0 ] && [ "$ev" -gt 0 ]; then
	pass "python_off: no Python frames, $ev samples in _PyEval_EvalFrameDefault"
else
	fail python_off "$n stacks with Python frames, $ev in _PyEval_EvalFrameDefault: $(cat "$T/off.err")"
fi

# hearth run: Python frames in the store by default.
. "$(dirname "$0")/server_lib.sh"
if start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 --interval 2; then
	drained() { curl -sf "$HURL/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'; }
	wait_until 30 drained || fail python_run "no profile drained in 30 s: $(tail -3 "$T/run.log")"
	# The store holds all of a process that has exited once the agent has built
	# two more profiles (the interval in progress at the exit, and one being
	# built then) and delivered them all, the queue being in order.
	stored() { # profiles built before
		curl -sf "$HURL/metrics" | awk -v n=$(($1 + 2)) '$1 == "hearth_agent_profiles_total" { p = $2 }
			$1 == "hearth_agent_sent_total" { s = $2 } END { exit !(p >= n && s >= n) }'
	}
	# Started directly, then behind a shell wrapper that runs (and is sampled)
	# before `exec python3 app.py`, as service scripts do: the exec must not
	# cost the new image its description at the next profile. Each thread runs
	# for 4 s of its own CPU time (pyhot.py's "cpu"): ~790 samples at 99 Hz
	# however busy the machine is (6 s of wall time gave 286 at load 6).
	for how in direct exec; do
		if [ $how = direct ]; then
			"$py" "$APP" 4 threads cpu > "$T/run.pid"
		else
			bash -c 'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done; exec "$0" "$@"' \
				"$py" "$APP" 4 threads cpu > "$T/run.pid"
		fi
		p0=$(metric "$HURL" hearth_agent_profiles_total)
		wait_for 30 stored "${p0:-0}" || echo "INFO python_run_$how: the profiles after the process were not all stored in 30 s: $(curl -s "$HURL/metrics" | grep -E '^hearth_agent_(profiles|sent|rejected|spool_dropped)_total')"
		pid=$(head -1 "$T/run.pid")
		curl -s --max-time 30 "$HURL/api/profile?format=folded&from=now-5m&query=%7Bpid%3D%22$pid%22%2Ccomm%3D%22python3.12%22%7D" > "$T/run.folded"
		tot=$(sum < "$T/run.folded")
		withpy=$(grep ';pyhot\.' "$T/run.folded" | sum)
		if [ "$tot" -ge 300 ] && [ $((withpy * 100)) -ge $((tot * 95)) ]; then
			pass "python_run_$how: $withpy of $tot stored samples carry Python frames (hearth run; $(memory_summary "$HURL"))"
		else
			fail python_run_$how "$withpy of $tot stored samples of pid $pid carry Python frames (want >= 95%, >= 300); the others by their last 4 frames: $(grep -v ';pyhot\.' "$T/run.folded" | awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = f[k]; for (i = k - 1; i > k - 4 && i > 0; i--) s = f[i] ";" s; c[s] += n } END { for (s in c) print c[s], s }' | sort -rn | head -5 | tr '\n' '|' | cut -c1-900); $(memory_summary "$HURL")"
		fi
	done
	kill -INT "$SPID" 2> /dev/null
else
	fail python_run "hearth run did not start: $(tail -3 "$T/run.log")"
fi

# austin (1.0.1), where it can read the interpreter (a 1 s try first): its
# hot_a share of the leaf samples against hearth's, both at about 1 kHz over the
# same 8 s (~8000 samples each idle, at least 2000 wanted): 4 standard
# deviations of the difference of the two estimates (two_share_tol, ~1.9 points
# at 8000 each) plus 0.5 points for the two windows (hearth starts sampling
# after loading its programs; see python_shares).
for py in "${PYS[@]}"; do
	tag=austin_$(basename "$(dirname "$(dirname "$py")")")$(basename "$py")
	if ! start_py "$tag" "$py" "$APP" 120; then
		fail "python_$tag" "no 'ready' from $py in 30 s: $(head -c 300 "$PYOUT")"
		stop_py
		continue
	fi
	pid=$PYPID
	timeout 1 austin -i 2000 -s -p "$pid" -o "$T/austin.txt" 2> "$T/austin.err"
	if [ "$(grep -cE 'hot_[ab] \([^)]*\);L[0-9]+ [0-9]+$' "$T/austin.txt")" -lt 50 ]; then
		echo "INFO $tag: austin read no hot_a/hot_b frames in 1 s: it does not read this interpreter ($(head -c 120 "$T/austin.err" | tr '\n' ' '))"
		stop_py
		continue
	fi
	timeout 8 austin -i 1000 -s -p "$pid" -o "$T/austin.txt" 2> "$T/austin.err" &
	au=$!
	"$HEARTH" record -p "$pid" -F 999 -d 8 -q -o "$T/au.folded" 2> /dev/null
	wait "$au"
	stop_py
	a=$(grep -cE 'hot_a \([^)]*\);L[0-9]+ [0-9]+$' "$T/austin.txt")
	b=$(grep -cE 'hot_b \([^)]*\);L[0-9]+ [0-9]+$' "$T/austin.txt")
	ha=$(grep -E ';pyhot\.hot_a( |;)' "$T/au.folded" | sum) hb=$(grep -E ';pyhot\.hot_b( |;)' "$T/au.folded" | sum)
	pa=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + b > 0) printf "%.2f", 100 * a / (a + b) }')
	ph=$(awk -v a="$ha" -v b="$hb" 'BEGIN { if (a + b > 0) printf "%.2f", 100 * a / (a + b) }')
	tol=$(two_share_tol "${pa:-0}" $((a + b)) "${ph:-0}" $((ha + hb)) 0.5)
	if [ $((a + b)) -ge 2000 ] && [ $((ha + hb)) -ge 2000 ] &&
		awk -v p="$pa" -v q="$ph" -v t="$tol" 'BEGIN { d = p - q; if (d < 0) d = -d; exit !(d <= t) }'; then
		pass "python_$tag: hot_a share austin $pa% of $((a + b)), hearth $ph% of $((ha + hb)), tolerance $tol points"
	else
		fail "python_$tag" "hot_a share austin ${pa:-?}% of $((a + b)), hearth ${ph:-?}% of $((ha + hb)): want >= 2000 samples each and at most $tol points apart"
	fi
done
finish
