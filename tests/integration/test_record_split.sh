#!/usr/bin/env bash
# `hearth record -p` on a C workload (frame pointers) that splits its CPU about
# 60/30/10 over three functions, one in a shared library. The workload measures
# the truth itself: the thread CPU time of every call (CLOCK_THREAD_CPUTIME_ID)
# and its process CPU time, printed on SIGUSR1. Each function's flat share in
# the top table is checked against its share of the CPU time between a snapshot
# taken before and one taken after the recording, within 4 binomial standard
# deviations for the recording's sample count plus EXTRA points for the windows'
# mismatch. Every stack of those functions reaches main.
# test-runner: serial (it compares sampled shares with the workload's CPU clocks)
. "$(dirname "$0")/lib.sh"
need_root record_split

# Points allowed on top of the sampling noise, both measured:
#  - the truth window also holds hearth's start-up and exit: the share of a
#    5.5 s window and of the 5 s inside it differed by at most 0.04 points
#    (97 window pairs from snapshots every 0.25 s, idle and beside a CPU hog);
#  - the truth of a function includes the kernel work done while it runs
#    (interrupts, preemption), which the top table shows as kernel frames, not
#    as the function's flat time: cum% - flat% was at most 0.42 points (5 runs
#    on a loaded 2-core machine).
EXTRA=0.5

# split prints `cpu A B C TOTAL` on SIGUSR1 (lib.sh: start_truth, truth_now).
if ! start_truth "$T/split.out" "$W/split" 20 || ! before=$(truth_now); then
	fail record_split "split printed no pid or no snapshot: $(cat "$T/split.out")"
	finish
fi
pid=$TRUTH_PID
# 999 Hz: ~5000 samples when the workload has a CPU of its own.
"$HEARTH" record -p "$pid" -F 999 -d 5 -q --top 0 > "$T/top.txt" 2> "$T/err1.txt"
rc=$?
after=$(truth_now) || fail record_split "no snapshot after the recording: $(cat "$T/split.out")"
cat "$T/err1.txt" > "$T/err.txt"
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/split.folded" 2>> "$T/err.txt"
if [ $rc -ne 0 ]; then
	fail record_split "hearth record exited $rc: $(cat "$T/err.txt")"
	finish
fi
cat "$T/top.txt"
# N: the samples of the recording ("hearth record: N samples, dropped ...").
n=$(sed -n 's/^hearth record: \([0-9]*\) samples, dropped.*/\1/p' "$T/err1.txt")
echo "truth: before '$before', after '$after'; $n samples"
col=2
for f in split_hot_a:2 split_hot_b:3 lib_hot_c:4; do
	name=${f%%:*} i=${f##*:}
	got=$(top_col "$T/top.txt" "$name" $col)
	truth=$(truth_share "$before" "$after" "$i" 5)
	if [ -z "$got" ] || [ -z "$truth" ] || [ -z "$n" ]; then
		fail "split_$name" "flat '${got}'%, truth '${truth}'%, N '${n}': missing (top table, snapshots or sample count)"
		continue
	fi
	tol=$(share_tol "$truth" "$n" "$EXTRA")
	if share_ok "$got" "$truth" "$n" "$EXTRA"; then
		pass "split_$name: flat ${got}%, truth ${truth}% (N=$n, tolerance ±${tol} = 4 sd + ${EXTRA})"
	else
		fail "split_$name" "flat ${got}%, truth ${truth}% (N=$n), want within ±${tol} (4 sd + ${EXTRA})"
	fi
done
# Every folded stack through a hot function must run main -> split_round -> hot.
for name in split_hot_a split_hot_b lib_hot_c; do
	total=$(grep -c ";$name " "$T/split.folded")
	good=$(grep -cE ";main;split_round;$name [0-9]+$" "$T/split.folded")
	if [ "$total" -gt 0 ] && [ "$total" -eq "$good" ]; then
		pass "stack_reaches_main_$name ($good stacks)"
	else
		fail "stack_reaches_main_$name" "$good of $total stacks run main;split_round;$name: $(grep ";$name " "$T/split.folded" | head -3)"
	fi
done
grep -q 'dropped' "$T/err.txt" && pass reports_drops || fail reports_drops "no 'dropped N samples' line: $(cat "$T/err.txt")"
finish
