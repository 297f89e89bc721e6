#!/usr/bin/env bash
# Issue 6: a process started after `hearth record` (system-wide, both transfer
# modes) is table-unwound within one interval: its tables are built off the
# sampling path when its first sample announces it, so nearly all its samples
# reach main through all 221 recursive frames.
# And a library loaded late (unwind_new_dlopen): latedl computes for 5 s with
# a tenth of its samples in the vdso (outside every view: each asks for a maps
# re-read that finds nothing new, and those are held back 1, 2, 4 s), then
# dlopens liblatelib.so and spends 3 s in it, all three frames there without
# frame pointers. A sample whose leaf is outside the view asks for the maps
# again: >= 90% of its >= 200 samples in the library must reach _start through
# main, late_phase and the library's three frames. Main at e716ebb asked only
# for a caller outside the view, never for a leaf: 0 of them (the view never
# re-read). Main at 2622fa9 held a pc in a file mapping back with the vdso's:
# 133 and 154 of ~595 (the library's re-read came 2-3 s late).
# test-runner: serial (it measures how soon a new process's tables are ready)
. "$(dirname "$0")/lib.sh"
need_root unwind_new
# hearth record's main thread blocks in epoll_wait (x86-64 syscall 232, or
# epoll_pwait 281) only in its sample loop, once its start-up is over: it samples.
sampling() { local nr; read -r nr _ < "/proc/$1/syscall" 2> /dev/null && { [ "$nr" = 232 ] || [ "$nr" = 281 ]; }; }

for mode in ringbuf map; do
	"$HEARTH" record -F 499 -d 4 --unwind dwarf --transfer $mode -o "$T/$mode.folded" \
		2> "$T/err.$mode" &
	rec=$!
	BG_PIDS+=($rec)
	if ! wait_for 20 sampling "$rec"; then
		fail "unwind_new_$mode" "hearth record not sampling after 20 s: $(cat "$T/err.$mode")"
		continue
	fi
	# Outlives the record, so hearth can still re-read its maps when symbolizing.
	"$W/deepcfi" 4 > /dev/null &
	wl=$!
	BG_PIDS+=($wl)
	wait $rec
	rc=$?
	wait $wl
	if [ $rc -ne 0 ]; then
		fail "unwind_new_$mode" "hearth record exited $rc: $(cat "$T/err.$mode")"
		continue
	fi
	tot=$(grep '^deepcfi;' "$T/$mode.folded" | awk '{ s += $NF } END { print s + 0 }')
	hit=$(grep -E '^deepcfi;_start;[^ ]*;main;work_round;(descend;){221}' "$T/$mode.folded" |
		awk '{ s += $NF } END { print s + 0 }')
	if [ "$tot" -gt 100 ] && [ $((hit * 100)) -ge $((tot * 90)) ]; then
		pass "unwind_new_$mode: $hit of $tot samples of a process started after record are fully unwound"
	else
		fail "unwind_new_$mode" "$hit of $tot samples fully unwound (want >= 90%): $(grep -a 'unwind:' "$T/err.$mode") $(grep '^deepcfi;' "$T/$mode.folded" | head -3 | cut -c1-300)"
	fi
done

"$W/latedl" "$W" 5 3 > "$T/latedl.out" 2>&1 &
wl=$!
BG_PIDS+=($wl)
"$HEARTH" record -F 199 -p $wl -d 9 --unwind dwarf -v -o "$T/late.folded" 2> "$T/err.late"
rc=$?
wait $wl
wrc=$?
tot=$(grep -E '^latedl;.*late_leaf [0-9]+$' "$T/late.folded" | awk '{ s += $NF } END { print s + 0 }')
hit=$(grep -E '^latedl;_start;[^;]+;([^;]+;)?main;late_phase;late_entry;late_mid;late_leaf [0-9]+$' \
	"$T/late.folded" | awk '{ s += $NF } END { print s + 0 }')
if [ $rc -ne 0 ] || [ $wrc -ne 0 ]; then
	fail unwind_new_dlopen "hearth record exited $rc, latedl $wrc: $(tail -3 "$T/err.late") $(cat "$T/latedl.out")"
elif [ "$tot" -ge 200 ] && [ $((hit * 100)) -ge $((tot * 90)) ]; then
	pass "unwind_new_dlopen: $hit of $tot samples in a library loaded late reach _start ($(grep -a 'maps re-read' "$T/err.late"))"
else
	fail unwind_new_dlopen "$hit of $tot samples in the late library reach _start (want >= 90% of >= 200): $(grep -a 'maps re-read' "$T/err.late") $(grep -E '^latedl;.*late_leaf' "$T/late.folded" | sort -t' ' -k2 -nr | head -3 | cut -c1-300)"
fi
finish
