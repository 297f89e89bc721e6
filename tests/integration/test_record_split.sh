#!/usr/bin/env bash
# `hearth record -p` on a C workload (frame pointers) with a known 60/30/10 split
# over three functions, one in a shared library: the top table shows each share
# within 3 points, and every stack of those functions reaches main.
# test-runner: serial (it compares sampled shares with the workload's CPU clocks)
. "$(dirname "$0")/lib.sh"
need_root record_split

pid=$(start_workload "$W/split" 8)
"$HEARTH" record -p "$pid" -F 499 -d 5 -q --top 0 > "$T/top.txt" 2> "$T/err.txt"
rc=$?
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/split.folded" 2>> "$T/err.txt"
if [ $rc -ne 0 ]; then
	fail record_split "hearth record exited $rc: $(cat "$T/err.txt")"
	finish
fi
cat "$T/top.txt"
for f in split_hot_a:60 split_hot_b:30 lib_hot_c:10; do
	name=${f%%:*} want=${f##*:}
	got=$(top_col "$T/top.txt" "$name" 2)
	if [ -z "$got" ]; then
		fail "split_$name" "$name not in the top table"
	elif awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; exit !(d <= 3 && d >= -3) }'; then
		pass "split_$name: flat ${got}% (want ${want}±3)"
	else
		fail "split_$name" "flat ${got}%, want ${want}±3"
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
