#!/usr/bin/env bash
# Issue 6: the table (CFI) unwinder on a workload built -O2 -fomit-frame-pointer
# whose hot path runs through 220 recursive frames and libc (qsort with a hot
# comparator, bsearch).
#  - dwarf: >= 95% of samples reach main through work_round -> descend, the
#    comparator's callers are the known chain, and deep samples keep all 221
#    descend frames;
#  - fp: the same workload's stacks are truncated (the difference is printed);
#  - perf record --call-graph dwarf agrees on the top (leaf <- caller) pairs.
. "$(dirname "$0")/lib.sh"
need_root unwind_dwarf

DEPTH=221 # descend(220) .. descend(0)
pid=$(start_workload "$W/deepcfi" 20)
"$HEARTH" record -v -p "$pid" -F 499 -d 4 --unwind dwarf -o "$T/dwarf.folded" 2> "$T/err.txt"
rc=$?
"$HEARTH" record -p "$pid" -F 499 -d 3 --unwind fp -q -o "$T/fp.folded" 2>> "$T/err.txt"
rc_fp=$?
if [ $rc -ne 0 ] || [ $rc_fp -ne 0 ]; then
	fail unwind_dwarf "hearth record exited $rc/$rc_fp: $(cat "$T/err.txt")"
	finish
fi
grep 'unwind:' "$T/err.txt"

# share NAME FILE REGEX: percent of the process's samples whose folded line matches.
# (grep -E: Debian's mawk has no {n} intervals.)
share() {
	local tot hit
	tot=$(grep '^deepcfi;' "$2" | awk '{ s += $NF } END { print s + 0 }')
	hit=$(grep '^deepcfi;' "$2" | grep -E -- "$3" | awk '{ s += $NF } END { print s + 0 }')
	awk -v h="$hit" -v t="$tot" 'BEGIN { printf "%.1f %d %d\n", t ? 100 * h / t : 0, h, t }'
}
# Every share is of at least MIN samples (3-4 s at 499 Hz of the busy thread is
# 1500-2000; ~470 seen on a busy 2-core machine). At 100, one binomial standard
# deviation of a share near 99.5% (measured) is 0.7 points: 95% is 6 below it.
MIN=100
check_min() { # name, "pct hit tot", min
	set -- "$1" $2 "$3"
	if [ "$4" -ge $MIN ] && awk -v g="$2" -v w="$5" 'BEGIN { exit !(g >= w) }'; then
		pass "$1: $2% ($3 of $4 samples)"
	else
		fail "$1" "$2% ($3 of $4 samples), want >= $5% of >= $MIN samples"
	fi
}

main_re='^deepcfi;_start;__libc_start_main[^;]*;__libc_start_call_main;main;work_round;descend'
descends="(descend;){$DEPTH}"
msort='(msort_with_tmp(_\[i\])?;)+'
chain_re="^deepcfi;_start;[^ ]*;main;work_round;${descends}(sort_phase(;__qsort_r(;${msort}cmp_key|;$msort?[a-z_]*)?)?|search_phase(;bsearch(;cmp_key)?)?) [0-9]+\$"
check_min dwarf_reaches_main "$(share main "$T/dwarf.folded" "$main_re")" 95
check_min dwarf_known_chain "$(share chain "$T/dwarf.folded" "$chain_re")" 95
# Deep samples (in the sort or search phase) keep every descend frame when they are
# table-unwound. A process gets its tables when its first sample announces it; the
# samples before that carry a stack copy walked with the tables in user space, and
# only if that fails are they frame-pointer ones: record's counts of both kinds of
# table walk against all samples count those (early), and only those may lack
# frames, a handful at most (<= 1% of the samples).
deep=$(awk -v re=";(sort|search)_phase" '/^deepcfi;/ && $0 ~ re { n = $NF; tot += n;
	s = $0; if (gsub(/;descend/, "", s) == '"$DEPTH"') ok += n } END { print ok + 0, tot + 0 }' \
	"$T/dwarf.folded")
all=$(awk '{ s += $NF } END { print s + 0 }' "$T/dwarf.folded")
unwound=$(sed -n 's/.*unwind: \([0-9]*\) samples table-unwound.*/\1/p' "$T/err.txt")
# Samples taken before the tables were published travel with a stack copy and are
# walked with the same tables in user space once they are (issue 14): table walks
# too, when complete. A partial one ran out of its copy (16 KiB of stack: less
# than 221 descend frames) and is counted with the early ones, which may lack
# frames: it is why 1 deep sample in ~2000 lacked some in earlier runs.
copied=$(sed -n 's/.*tables were out: \([0-9]*\) complete, \([0-9]*\) partial.*/\1/p' \
	"$T/err.txt")
unwound=$((${unwound:-0} + ${copied:-0}))
early=$((all - unwound))
set -- $deep
if [ "$2" -gt 0 ] && [ "$all" -ge $MIN ] && [ -n "$unwound" ] && [ "$early" -ge 0 ] && [ $((early * 100)) -le "$all" ] &&
	[ "$1" -ge $(($2 - early)) ]; then
	pass "dwarf_deep_keeps_all_frames: $1 of $2 deep samples have all $DEPTH descend frames ($early of $all samples were taken before the tables were published, or walked from a stack copy that ran out)"
else
	fail dwarf_deep_keeps_all_frames "$1 of $2 deep samples have all $DEPTH descend frames; $early of $all samples were not completely table-unwound (table-unwound: '${unwound}'; want <= 1% of >= $MIN samples)"
fi
maxdepth() { awk '/^deepcfi;/ { n = split($0, f, ";"); if (n > m) m = n } END { print m - 2 }' "$1"; }
fp_main=$(share main "$T/fp.folded" "$main_re")
dw_main=$(share main "$T/dwarf.folded" "$main_re")
set -- $fp_main
if [ "$3" -ge $MIN ] && awk -v g="$1" 'BEGIN { exit !(g < 5) }'; then
	pass "fp_truncated: fp reaches main in $1% of $3 samples (max $(maxdepth "$T/fp.folded") frames), dwarf in ${dw_main%% *}% (max $(maxdepth "$T/dwarf.folded") frames)"
else
	fail fp_truncated "fp reaches main in $1% of $3 samples: expected truncated stacks (< 5% of >= $MIN samples)"
fi

# perf --call-graph dwarf on the same process: the same top (leaf <- caller) pairs.
if ! command -v perf > /dev/null; then
	skip perf_agreement "perf is not installed"
	finish
fi
perf record -q -e cpu-clock -F 499 --call-graph dwarf -p "$pid" -o "$T/perf.data" -- sleep 3 \
	> /dev/null 2>&1
perf script -i "$T/perf.data" -F comm,ip,sym 2> /dev/null | awk -f "$(dirname "$0")/unwind_pairs.awk" \
	-v mode=perf > "$T/perf.pairs"
awk -f "$(dirname "$0")/unwind_pairs.awk" -v mode=folded "$T/dwarf.folded" > "$T/hearth.pairs"
echo "top (leaf <- caller) pairs, hearth dwarf:"; head -3 "$T/hearth.pairs"
echo "top (leaf <- caller) pairs, perf --call-graph dwarf:"; head -3 "$T/perf.pairs"
h=$(head -3 "$T/hearth.pairs" | awk '{ print $2 }' | sort | tr '\n' ' ')
p=$(head -3 "$T/perf.pairs" | awk '{ print $2 }' | sort | tr '\n' ' ')
if [ -n "$h" ] && [ "$h" = "$p" ]; then
	pass "perf_agreement: same top-3 leaf<-caller pairs: $h"
else
	fail perf_agreement "hearth top pairs '$h', perf '$p'"
fi
finish
