#!/usr/bin/env bash
# Issue 27 (CRuby): Ruby frames with no flags. tests/workloads/rbhot.rb runs
# <main> -> main -> outer -> hot_a / hot_b and measures its own thread CPU time
# in each hot method (CLOCK_THREAD_CPUTIME_ID; SIGUSR1 prints the totals).
# With Debian's ruby (3.1) and `hearth record -p` with the defaults:
#  - >= 90% of the busy thread's samples carry the program's frames in call
#    order, named Class#method (<main>;Object#main;Worker#outer;Worker#hot_a|b,
#    nothing between them);
#  - hot_a's share of hot_a + hot_b agrees with the workload's own counters over
#    the same window within 3 points (and within 4 binomial standard deviations
#    of the sample count plus 0.5 points);
#  - a ruby started after the recording began is walked and named too;
#  - --ruby off gives native frames only;
#  - hearth run stores Ruby frames by default.
# Every wait has a deadline; the recordings are as long as the workload's CPU
# time needs, however busy the machine.
# test-runner: serial (it compares sampled shares with the workload's CPU clocks)
. "$(dirname "$0")/lib.sh"
need_root ruby
sum() { awk '{ s += $NF } END { print s + 0 }'; }
APP=$HEARTH_ROOT/tests/workloads/rbhot.rb
RUBY=$(command -v ruby || true)
if [ -z "$RUBY" ]; then
	fail ruby "no ruby (scripts/install-deps.sh installs Debian's)"
	finish
fi

# Starts rbhot.rb in the background (RBOUT, RBPID); 1 unless "ready" within 30 s.
start_rb() { # name, args...
	RBOUT=$T/$1.out
	shift
	: > "$RBOUT"
	"$RUBY" "$APP" "$@" > "$RBOUT" &
	RBPID=$!
	BG_PIDS+=($RBPID)
	wait_lines "$RBOUT" 2 30 && [ "$(sed -n 2p "$RBOUT")" = ready ]
}
stop_rb() { kill "$RBPID" 2> /dev/null; wait "$RBPID" 2> /dev/null; }
cpu_now() { TRUTH_PID=$RBPID TRUTH_OUT=$RBOUT truth_now | awk '{ print $2, $3 }'; }
sampling() { # pid of a hearth record
	[ "$(find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2> /dev/null | wc -l)" -ge "$(getconf _NPROCESSORS_ONLN)" ]
}
spent() { # seconds: the hot methods' CPU time since REC_C0 reached it (sets REC_C1)
	REC_C1=$(cpu_now) && awk -v c0="$REC_C0" -v c1="$REC_C1" -v s="$1" 'BEGIN {
		split(c0, x, " "); split(c1, y, " "); exit !(y[1] - x[1] + y[2] - x[2] >= s * 1e9) }'
}
record_cpu() { # seconds, folded out, stderr file, hearth record args...
	local secs=$1 out=$2 err=$3 rec
	shift 3
	"$HEARTH" record -p "$RBPID" -d 600 -o "$out" "$@" 2> "$err" &
	rec=$!
	wait_for 30 sampling "$rec" || echo "INFO: hearth record had not begun sampling after 30 s"
	REC_C0=$(cpu_now)
	REC_C1=$REC_C0
	wait_for 120 spent "$secs" || echo "INFO: the child did not spend $secs s of CPU in 120 s ($REC_C0 -> $REC_C1)"
	kill -INT "$rec" 2> /dev/null
	wait "$rec"
}

CHAIN=';<main>;Object#main;Worker#outer;Worker#hot_[ab]( |;)'

if ! start_rb main 600; then
	fail ruby "no 'ready' from $RUBY in 30 s: $(head -c 300 "$RBOUT")"
	finish
fi
# 4 s of the hot methods' CPU time at 999 Hz: ~4000 samples, a binomial
# standard deviation of about 0.8 points on a 60% share.
if ! record_cpu 4 "$T/main.folded" "$T/main.err" -F 999 -v; then
	fail ruby "hearth record failed: $(cat "$T/main.err")"
	finish
fi
stop_rb
grep 'ruby:' "$T/main.err"
tot=$(sum < "$T/main.folded")
inorder=$(grep -E "$CHAIN" "$T/main.folded" | sum)
if [ "$tot" -ge 1000 ] && [ $((inorder * 100)) -ge $((tot * 90)) ]; then
	pass "ruby_frames: $inorder of $tot samples carry <main>;Object#main;Worker#outer;Worker#hot_a|hot_b in call order"
else
	fail ruby_frames "$inorder of $tot samples in call order (want >= 90%, >= 1000 samples); others: $(grep -vE "$CHAIN" "$T/main.folded" | sort -t' ' -k2 -rn | head -3 | cut -c1-300)"
fi
a=$(grep -E ';Worker#outer;Worker#hot_a( |;)' "$T/main.folded" | sum)
b=$(grep -E ';Worker#outer;Worker#hot_b( |;)' "$T/main.folded" | sum)
# the workload's truth over the same window: hot_a's share of both clocks' growth
truth=$(awk -v b="$REC_C0" -v a="$REC_C1" 'BEGIN { split(b, x, " "); split(a, y, " ")
	da = y[1] - x[1]; db = y[2] - x[2]; if (da + db > 0) printf "%.2f", 100 * da / (da + db) }')
got=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + b) printf "%.2f", 100 * a / (a + b) }')
tol=$(share_tol "${truth:-0}" $((a + b)) 0.5)
if [ -n "$truth" ] && [ -n "$got" ] && awk -v g="$got" -v t="$truth" -v tol="$tol" 'BEGIN {
	d = g - t; if (d < 0) d = -d; exit !(d <= 3 && d <= tol) }'; then
	pass "ruby_shares: hot_a $got% of hot_a + hot_b ($a + $b samples), the workload's own CPU clocks say $truth% (allowed 3 points, 4 sd $tol)"
else
	fail ruby_shares "hot_a $got% ($a + $b samples), the workload's clocks $truth% (allowed min(3, $tol) points)"
fi

# A ruby started after the recording began (all CPUs): 6 s of its CPU time,
# ~3000 samples at 499 Hz; the recording stops when it has exited. Its samples
# before it is described (its start: boot, then ld.so and the probe) are a
# constant few hundred milliseconds of CPU.
"$HEARTH" record -a -F 499 -d 600 -q -o "$T/late.folded" 2> "$T/late.err" &
rec=$!
BG_PIDS+=($rec)
wait_for 30 sampling "$rec" || echo "INFO ruby_started_later: hearth record -a had not opened its perf events after 30 s: $(cat "$T/late.err")"
"$RUBY" "$APP" 6 cpu > "$T/late.out"
kill -INT "$rec"
wait $rec
late=$(head -1 "$T/late.out")
tot=$(grep -E '^ruby[^;]*;' "$T/late.folded" | grep ';Worker#outer' | sum)
all=$(grep -E '^ruby[^;]*;' "$T/late.folded" | sum)
named=$(grep -E '^ruby[^;]*;' "$T/late.folded" | grep -E "$CHAIN" | sum)
grep -E '^ruby[^;]*;' "$T/late.folded" | grep -vE "$CHAIN" > "$T/late.unnamed"
if [ "$all" -ge 300 ] && [ $((named * 100)) -ge $((all * 90)) ]; then
	pass "ruby_started_later: $named of $all samples of ruby $late started during the recording carry its Ruby frames"
else
	fail ruby_started_later "$named of $all samples (want >= 90%, >= 300; $tot under outer): $(cat "$T/late.err") $(sort -t' ' -k2 -rn "$T/late.unnamed" | head -3 | cut -c1-300)"
fi

# --ruby off: the interpreter's native frames only.
start_rb off 30 || echo "INFO ruby_off: no 'ready' from ruby in 30 s: $(head -c 300 "$RBOUT")"
"$HEARTH" record -p "$RBPID" -F 199 -d 2 -q --ruby off -o "$T/off.folded" 2> "$T/off.err"
stop_rb
n=$(grep -cE ';(Worker#)?(hot_a|hot_b|outer)( |;)' "$T/off.folded")
ev=$(grep 'rb_vm_exec' "$T/off.folded" | sum)
if [ "$n" -eq 0 ] && [ "$ev" -gt 0 ]; then
	pass "ruby_off: no Ruby frames, $ev samples under rb_vm_exec"
else
	fail ruby_off "$n stacks with Ruby frames, $ev under rb_vm_exec: $(cat "$T/off.err")"
fi

# hearth run: Ruby frames in the store by default (and the walk's /metrics).
. "$(dirname "$0")/server_lib.sh"
if start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 --interval 2; then
	drained() { curl -sf "$HURL/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'; }
	wait_until 30 drained || fail ruby_run "no profile drained in 30 s: $(tail -3 "$T/run.log")"
	# All of an exited process is stored once two more profiles are built and sent.
	stored() { # profiles built before
		curl -sf "$HURL/metrics" | awk -v n=$(($1 + 2)) '$1 == "hearth_agent_profiles_total" { p = $2 }
			$1 == "hearth_agent_sent_total" { s = $2 } END { exit !(p >= n && s >= n) }'
	}
	# 4 s of its CPU time: ~400 samples at 99 Hz however busy the machine.
	"$RUBY" "$APP" 4 cpu > "$T/run.pid"
	p0=$(metric "$HURL" hearth_agent_profiles_total)
	wait_for 30 stored "${p0:-0}" || echo "INFO ruby_run: the profiles after the process were not all stored in 30 s"
	pid=$(head -1 "$T/run.pid")
	curl -s --max-time 30 "$HURL/api/profile?format=folded&from=now-5m&query=%7Bpid%3D%22$pid%22%7D" > "$T/run.folded"
	tot=$(sum < "$T/run.folded")
	named=$(grep -E "$CHAIN" "$T/run.folded" | sum)
	walked=$(metric "$HURL" hearth_agent_ruby_walked_total)
	if [ "$tot" -ge 200 ] && [ $((named * 100)) -ge $((tot * 90)) ] && [ "${walked:-0}" -ge "$named" ]; then
		pass "ruby_run: $named of $tot stored samples carry the Ruby frames (hearth run; /metrics: ${walked} walked)"
	else
		fail ruby_run "$named of $tot stored samples of pid $pid carry the Ruby frames (want >= 90%, >= 200; walked ${walked:-?}): $(grep -vE "$CHAIN" "$T/run.folded" | sort -k2 -rn | head -2 | cut -c1-400)"
	fi
	kill -INT "$SPID" 2> /dev/null
else
	fail ruby_run "hearth run did not start: $(tail -3 "$T/run.log")"
fi
finish
