#!/usr/bin/env bash
# A Go program shows main.* functions with complete stacks (reaching main.main);
# a syscall-heavy C program shows kernel frames below its user frames.
. "$(dirname "$0")/lib.sh"
need_root record_kernel_go
# Each share below is of at least MIN samples (3 s at 499 Hz of a CPU-bound thread
# is ~1500; ~470 seen on a busy 2-core machine). The shares measured are 99-100%:
# at 100 samples one binomial standard deviation is at most 1 point there, and the
# thresholds (50, 80, 95%) are more than 4 below.
MIN=100

pid=$(start_workload "$W/gohot" 6)
"$HEARTH" record -p "$pid" -F 499 -d 3 -q -o "$T/go.folded" 2> "$T/err.txt" ||
	fail go_record "exit $?: $(cat "$T/err.txt")"
hot=$(awk '/main\.hotLoop [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/go.folded")
all=$(awk '{ s += $NF } END { print s + 0 }' "$T/go.folded")
full=$(awk '/;main\.main;main\.compute;main\.hotLoop [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/go.folded")
if [ "$all" -ge $MIN ] && [ $((hot * 100 / all)) -ge 80 ]; then
	pass "go_main_hotLoop: $hot of $all samples"
else
	fail go_main_hotLoop "$hot of $all samples in main.hotLoop (want >= 80%, >= $MIN samples): $(sort -t' ' -k2 -nr "$T/go.folded" | head -3)"
fi
if [ "$hot" -ge $MIN ] && [ $((full * 100 / hot)) -ge 95 ]; then
	pass "go_stacks_complete: $full of $hot reach main.main;main.compute"
else
	fail go_stacks_complete "$full of $hot hotLoop samples reach main.main;main.compute (want >= 95%, >= $MIN samples): $(grep hotLoop "$T/go.folded" | head -3)"
fi

pid=$(start_workload "$W/syscalls" 6)
"$HEARTH" record -p "$pid" -F 499 -d 3 -q -o "$T/sys.folded" 2> "$T/err.txt" ||
	fail sys_record "exit $?: $(cat "$T/err.txt")"
# Kernel frames (suffix _[k]) at the leaf end of stacks that come up from main.
kern=$(awk '/;main;.*_\[k\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/sys.folded")
all=$(awk '{ s += $NF } END { print s + 0 }' "$T/sys.folded")
if [ "$all" -ge $MIN ] && [ $((kern * 100 / all)) -ge 50 ]; then
	pass "kernel_frames_below_user: $kern of $all samples"
else
	fail kernel_frames_below_user "$kern of $all (want >= 50%, >= $MIN samples): $(sort -t' ' -k2 -nr "$T/sys.folded" | head -3)"
fi
finish
