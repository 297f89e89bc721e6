#!/usr/bin/env bash
# Issue 14 (part 2): Go's frameless leaves keep their caller. goleaf runs
# main.main -> doALot -> prepare (2/3 of the work) and main.main -> doLittle ->
# prepare (1/3); prepare has no frame, so a frame-pointer walk hangs it under
# main.main. With the default --unwind auto, Go code is walked with the tables
# built from its .debug_frame:
#  - doALot's cumulative share (go tool pprof -top -noinlines) matches the truth
#    goleaf measures itself (thread CPU time of its doALot calls over process
#    CPU time, snapshots on SIGUSR1 before and after the recording) within 4
#    binomial standard deviations for the profile's sample count, plus EXTRA;
#    and it matches perf record --call-graph dwarf recorded on the same process
#    at the same time within 4 standard deviations of the difference of the two
#    (when perf can unwind Go: Debian's perf 6.1 unwinds through libunwind and
#    finds nothing it uses in a Go binary, which has no .eh_frame; its samples
#    then have one frame and the check is skipped with the counts);
#  - the walk ends at runtime.main/goexit: samples reach main.main;
#  - the same with a Go binary linked externally (as cgo ones are: .eh_frame
#    for the C start-up code beside Go's .debug_frame);
#  - Go's assembly leaves too: runtime.memmove keeps its caller main.copyBig;
#  - a Go binary built with -w (no .debug_frame) is still walked with frame
#    pointers (stacks reach main.main).
# test-runner: serial (it compares sampled shares with the workload's CPU clocks and with perf)
. "$(dirname "$0")/lib.sh"
need_root unwind_go
go_env

# cum% of NAME in a `go tool pprof -top` listing, 0 when absent.
cum() { local v; v=$(top_col "$1" "$2" 5); echo "${v:-0}"; }
within() { # a, b, points
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(x <= d) }'
}

# Points allowed beside the sampling noise: the truth window (snapshot to
# snapshot) also holds hearth's start-up and exit, and perf's window is not
# hearth's; the doALot share of a 5.5 s window and of the 5 s inside it differed
# by at most 0.06 points (97 window pairs, snapshots every 0.25 s).
EXTRA=0.2

# goleaf prints `cpu ALOT LITTLE TOTAL` on SIGUSR1 (lib.sh: start_truth, truth_now).
if ! start_truth "$T/goleaf.out" "$W/goleaf" 20 || ! before=$(truth_now); then
	fail unwind_go "goleaf printed no pid or no snapshot: $(cat "$T/goleaf.out")"
	finish
fi
pid=$TRUTH_PID
if command -v perf > /dev/null; then
	perf record -q -e cpu-clock -F 999 --call-graph dwarf -p "$pid" -o "$T/perf.data" \
		-- sleep 5 > /dev/null 2>&1 &
	perf_pid=$!
fi
# 999 Hz: ~5000 samples when goleaf has a CPU of its own.
"$HEARTH" record -p "$pid" -F 999 -d 5 -o "$T/go.pb.gz" 2> "$T/err1.txt"
rc=$?
[ -n "${perf_pid:-}" ] && wait "$perf_pid"
after=$(truth_now) || fail unwind_go "no snapshot after the recording: $(cat "$T/goleaf.out")"
cat "$T/err1.txt" > "$T/err.txt"
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/go.folded" 2>> "$T/err.txt" || rc=$?
if [ $rc -ne 0 ]; then
	fail unwind_go "hearth record exited $rc: $(cat "$T/err.txt")"
	finish
fi
grep 'unwind:' "$T/err.txt"
go tool pprof -top -noinlines "$T/go.pb.gz" > "$T/top.txt" 2> /dev/null
grep -E 'flat%|main\.' "$T/top.txt"
# N: the profile's samples ("hearth record: N samples, dropped ...").
n=$(sed -n 's/^hearth record: \([0-9]*\) samples, dropped.*/\1/p' "$T/err1.txt")
alot=$(cum "$T/top.txt" main.doALot)
little=$(cum "$T/top.txt" main.doLittle)
truth=$(truth_share "$before" "$after" 2 4)
echo "truth: before '$before', after '$after'; $n samples"
if [ -z "$truth" ] || [ -z "$n" ]; then
	fail go_doALot_share "truth '${truth}'%, N '${n}': missing (snapshots or sample count)"
else
	tol=$(share_tol "$truth" "$n" "$EXTRA")
	if share_ok "$alot" "$truth" "$n" "$EXTRA"; then
		pass "go_doALot_share: doALot ${alot}% cumulative (doLittle ${little}%), truth ${truth}% (N=$n, tolerance ±${tol} = 4 sd + ${EXTRA})"
	else
		fail go_doALot_share "doALot ${alot}% cumulative (doLittle ${little}%), truth ${truth}% (N=$n), want within ±${tol} (4 sd + ${EXTRA})"
	fi
fi

# Every sample in main.* reaches main.main through runtime.main (walk ends
# cleanly) by a known chain: doALot|doLittle -> prepare, or cpuNs (goleaf's
# clock reads). Kernel frames (an interrupt, a preemption: more of them beside a
# CPU hog) and Go's asyncPreempt may sit on top of prepare: its chain is whole.
known() { # comm
	echo "^$1;(runtime\.goexit[^;]*;)?runtime\.main;main\.main;(main\.do(ALot|Little);main\.prepare|main\.cpuNs)[; ]"
}
# The heaviest main.* stacks that are not a known chain, for a failure message.
unknown() { # comm, folded file
	grep -E ';main\.' "$2" | grep -vE "$(known "$1")" | sort -t' ' -k2 -rn | head -3
}
tot=$(grep -E ';main\.' "$T/go.folded" | awk '{ s += $NF } END { print s + 0 }')
ok=$(grep -E "$(known goleaf)" "$T/go.folded" | awk '{ s += $NF } END { print s + 0 }')
if [ "$tot" -gt 0 ] && [ $((ok * 100)) -ge $((tot * 98)) ]; then
	pass "go_known_chain: $ok of $tot main.* samples are runtime.main;main.main;doALot|doLittle;prepare (or cpuNs)"
else
	fail go_known_chain "$ok of $tot main.* samples have the known chain; others: $(unknown goleaf "$T/go.folded")"
fi

if [ -n "${perf_pid:-}" ]; then
	# Share of goleaf samples whose call chain holds main.doALot, the sample
	# count, and the samples with more than one frame (perf unwound them).
	pshare=$(perf script -i "$T/perf.data" -F comm,ip,sym 2> /dev/null | awk '
		function end() { if (in_s) { n++; h += hit; deep += (fr > 1) } }
		/^[^ \t]/ { end(); in_s = ($1 == "goleaf"); hit = 0; fr = 0; next }
		/^[ \t]+[0-9a-f]+ / { fr++ }
		/main\.doALot/ { hit = 1 }
		END { end(); printf "%.1f %d %d\n", n ? 100 * h / n : 0, n, deep }')
	set -- $pshare
	if [ "${2:-0}" -gt 100 ] && [ $((${3:-0} * 2)) -lt "$2" ]; then
		skip go_perf_agreement "perf --call-graph dwarf unwound only ${3:-0} of $2 samples past the leaf (it finds no .eh_frame in Go binaries); hearth doALot ${alot}%"
	elif [ "${2:-0}" -gt 100 ] && [ -n "$n" ] &&
		ptol=$(two_share_tol "$alot" "$n" "$1" "$2" "$EXTRA") && within "$alot" "$1" "$ptol"; then
		pass "go_perf_agreement: doALot hearth ${alot}% (N=$n), perf --call-graph dwarf $1% (N=$2), tolerance ±${ptol} = 4 sd + ${EXTRA}"
	else
		fail go_perf_agreement "doALot hearth ${alot}% (N=${n:-?}), perf --call-graph dwarf ${1:-?}% (N=${2:-0}, ${3:-0} unwound), want within ±${ptol:-?} (4 sd of the difference + ${EXTRA})"
	fi
else
	fail go_perf_agreement "perf is not installed (scripts/install-deps.sh installs it)"
fi

# Externally linked: the table holds both .eh_frame's and .debug_frame's rows.
pid=$(start_workload "$W/goleaf-ext" 5)
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/ext.folded" 2> "$T/err4.txt"
rc=$?
tot=$(grep -E ';main\.' "$T/ext.folded" | awk '{ s += $NF } END { print s + 0 }')
ok=$(grep -E "$(known goleaf-ext)" "$T/ext.folded" | awk '{ s += $NF } END { print s + 0 }')
if [ $rc -eq 0 ] && [ "$tot" -gt 0 ] && [ $((ok * 100)) -ge $((tot * 98)) ]; then
	pass "go_external_link: $ok of $tot main.* samples are runtime.main;main.main;doALot|doLittle;prepare (or cpuNs)"
else
	fail go_external_link "rc $rc; $ok of $tot main.* samples have the known chain; others: $(unknown goleaf-ext "$T/ext.folded")"
fi

# An assembly leaf: goleaf's copy mode spends its time in runtime.memmove under
# main.copyBig; with frame pointers memmove hangs under main.main.
pid=$(start_workload "$W/goleaf" 5 copy)
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/copy.folded" 2> "$T/err3.txt"
rc=$?
tot=$(grep -E ';runtime\.memmove ' "$T/copy.folded" | awk '{ s += $NF } END { print s + 0 }')
ok=$(grep -E ';main\.main;main\.copyBig;runtime\.memmove ' "$T/copy.folded" |
	awk '{ s += $NF } END { print s + 0 }')
if [ $rc -eq 0 ] && [ "$tot" -gt 0 ] && [ $((ok * 100)) -ge $((tot * 98)) ]; then
	pass "go_asm_leaf: $ok of $tot runtime.memmove samples are under main.main;main.copyBig"
else
	fail go_asm_leaf "rc $rc; $ok of $tot runtime.memmove samples under main.copyBig: $(sort -t' ' -k2 -rn "$T/copy.folded" | head -3)"
fi

# Without .debug_frame (-w): frame pointers, and stacks still reach main.main.
pid=$(start_workload "$W/goleaf-nodwarf" 5)
"$HEARTH" record -p "$pid" -F 499 -d 2 -q -o "$T/nodwarf.folded" 2> "$T/err2.txt"
rc=$?
tot=$(grep -E ';main\.' "$T/nodwarf.folded" | awk '{ s += $NF } END { print s + 0 }')
ok=$(grep -E ';runtime\.main;main\.main;' "$T/nodwarf.folded" | awk '{ s += $NF } END { print s + 0 }')
if [ $rc -eq 0 ] && [ "$tot" -gt 0 ] && [ $((ok * 100)) -ge $((tot * 98)) ]; then
	pass "go_nodwarf_fp: $ok of $tot main.* samples reach main.main with frame pointers"
else
	fail go_nodwarf_fp "rc $rc; $ok of $tot main.* samples reach main.main: $(cat "$T/err2.txt")"
fi
finish
