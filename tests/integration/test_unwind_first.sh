#!/usr/bin/env bash
# Issue 14 (part 3): a new process's first samples are complete. deepcfi (no
# frame pointers) is started five times after `hearth record` began, and runs one
# second each time, so every one of its samples is from its first second:
# >= 99.5% of them must reach their outermost frame (_start, or ld.so's entry
# while the dynamic loader runs). Before, the samples taken until its tables were
# published were walked with frame pointers and stopped after a frame or two
# (`deepcfi;cmp_key`): a second, shorter root beside the real one.
# The recording is limited to a cgroup holding only the workload: system-wide on
# a machine busy with other jobs, their tables can fill the row map and leave
# deepcfi on frame pointers for reasons that are not about first samples.
. "$(dirname "$0")/lib.sh"
need_root unwind_first

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$cg2" ]; then
	mkdir -p "$T/cg2" && mount -t cgroup2 none "$T/cg2" && cg2=$T/cg2
fi
cg=$cg2/hearth-first-$$
if ! mkdir "$cg" 2> /dev/null; then
	fail unwind_first "cannot create a cgroup v2 directory under $cg2"
	finish
fi
"$HEARTH" record --cgroup "$cg" -F 999 -d 9 -o "$T/first.folded" 2> "$T/err" &
rec=$!
BG_PIDS+=($rec)
sleep 1.5
for i in 1 2 3 4 5; do
	(echo "$BASHPID" > "$cg/cgroup.procs" && exec "$W/deepcfi" 1 > /dev/null)
done
wait $rec
rc=$?
rmdir "$cg" 2> /dev/null
if [ $rc -ne 0 ]; then
	fail unwind_first "hearth record exited $rc: $(cat "$T/err")"
	finish
fi
sum() { awk '{ s += $NF } END { print s + 0 }'; }
# ld.so's entry (unnamed: module+offset) is the root while the loader runs, alone
# when sampled at its first instruction.
root='^deepcfi;(_start;|ld-linux-x86-64\.so\.2\+0x[0-9a-f]+[; ])'
tot=$(grep '^deepcfi;' "$T/first.folded" | sum)
hit=$(grep -E "$root" "$T/first.folded" | sum)
if [ "$tot" -ge 1000 ] && [ $((hit * 1000)) -ge $((tot * 995)) ]; then
	pass "unwind_first: $hit of $tot samples of new processes' first second are complete"
else
	fail unwind_first "$hit of $tot first-second samples complete (want >= 99.5%, >= 1000 samples): $(grep -a 'first samples' "$T/err" | cut -c1-300); incomplete: $(grep '^deepcfi;' "$T/first.folded" | grep -vE "$root" | sort -t' ' -k2 -rn | head -8 | cut -c1-200)"
fi
grep -a 'first samples' "$T/err" | sed 's/^hearth record: unwind: /  /'
finish
