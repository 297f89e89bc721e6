#!/usr/bin/env bash
# A Go program shows main.* functions with complete stacks (reaching main.main);
# a syscall-heavy C program shows kernel frames below its user frames.
. "$(dirname "$0")/lib.sh"
need_root record_kernel_go

pid=$(start_workload "$W/gohot" 6)
"$HEARTH" record -p "$pid" -F 499 -d 3 -q -o "$T/go.folded" 2> "$T/err.txt" ||
	fail go_record "exit $?: $(cat "$T/err.txt")"
hot=$(awk '/main\.hotLoop [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/go.folded")
all=$(awk '{ s += $NF } END { print s + 0 }' "$T/go.folded")
full=$(awk '/;main\.main;main\.compute;main\.hotLoop [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/go.folded")
if [ "$all" -gt 0 ] && [ $((hot * 100 / all)) -ge 80 ]; then
	pass "go_main_hotLoop: $hot of $all samples"
else
	fail go_main_hotLoop "$hot of $all samples in main.hotLoop: $(sort -t' ' -k2 -nr "$T/go.folded" | head -3)"
fi
if [ "$hot" -gt 0 ] && [ $((full * 100 / hot)) -ge 95 ]; then
	pass "go_stacks_complete: $full of $hot reach main.main;main.compute"
else
	fail go_stacks_complete "$full of $hot hotLoop samples reach main.main;main.compute: $(grep hotLoop "$T/go.folded" | head -3)"
fi

pid=$(start_workload "$W/syscalls" 6)
"$HEARTH" record -p "$pid" -F 499 -d 3 -q -o "$T/sys.folded" 2> "$T/err.txt" ||
	fail sys_record "exit $?: $(cat "$T/err.txt")"
# Kernel frames (suffix _[k]) at the leaf end of stacks that come up from main.
kern=$(awk '/;main;.*_\[k\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/sys.folded")
all=$(awk '{ s += $NF } END { print s + 0 }' "$T/sys.folded")
if [ "$all" -gt 0 ] && [ $((kern * 100 / all)) -ge 50 ]; then
	pass "kernel_frames_below_user: $kern of $all samples"
else
	fail kernel_frames_below_user "$kern of $all: $(sort -t' ' -k2 -nr "$T/sys.folded" | head -3)"
fi
finish
