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
# test-runner: serial (it measures how soon a new process's tables are ready)
. "$(dirname "$0")/lib.sh"
need_root unwind_first
# hearth record's main thread blocks in epoll_wait (x86-64 syscall 232, or
# epoll_pwait 281) only in its sample loop, once its start-up is over: it samples.
sampling() { local nr; read -r nr _ < "/proc/$1/syscall" 2> /dev/null && { [ "$nr" = 232 ] || [ "$nr" = 281 ]; }; }

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$cg2" ]; then
	mkdir -p "$T/cg2" && mount -t cgroup2 none "$T/cg2" && cg2=$T/cg2
fi
cg=$cg2/hearth-first-$$
if ! mkdir "$cg" 2> /dev/null; then
	fail unwind_first "cannot create a cgroup v2 directory under $cg2"
	finish
fi
"$HEARTH" record -v --cgroup "$cg" -F 999 -d 9 -o "$T/first.folded" 2> "$T/err" &
rec=$!
BG_PIDS+=($rec)
wait_for 20 sampling "$rec" || { fail unwind_first "hearth record not sampling after 20 s: $(cat "$T/err")"; finish; }
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

# The same under `hearth run` (the agent's path: its sampler hands the stack copies
# to the collector too): deepcfi started five times after run began, system-wide,
# its stored samples read back from the store. Every one of them is from a
# process's first second. They start once run has drained its first profile:
# until then its start-up (kallsyms, the tables of every process already
# running) delays new tables past the stack copies a new process is given.
. "$(dirname "$0")/server_lib.sh"
start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 -F 999 --interval 2 ||
	{ fail unwind_first_run "hearth run did not start: $(tail -3 "$T/run.log")"; finish; }
drained() {
	curl -sf "$HURL/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'
}
wait_until 30 drained || { fail unwind_first_run "no profile drained in 30 s: $(tail -3 "$T/run.log")"; finish; }
for i in 1 2 3 4 5; do
	"$W/deepcfi" 1 > /dev/null
done
# All their samples are stored once the profile in progress when the last one
# ended, and the next one (samples read late), are delivered to the store.
built=$(metric "$HURL" hearth_agent_profiles_total)
delivered() { [ "$(metric "$HURL" hearth_agent_sent_total)" -ge $((${built:-0} + 2)) ] 2> /dev/null; }
wait_for 20 delivered ||
	fail unwind_first_run_stored "$(metric "$HURL" hearth_agent_sent_total) profiles delivered 20 s after deepcfi, want $((${built:-0} + 2))"
curl -s --max-time 30 "$HURL/api/profile?format=folded&from=now-5m&query=%7Bcomm%3D%22deepcfi%22%7D" > "$T/run.folded"
kill -INT "$SPID" 2> /dev/null
tot=$(grep '^deepcfi;' "$T/run.folded" | sum)
hit=$(grep -E "$root" "$T/run.folded" | sum)
if [ "$tot" -ge 1000 ] && [ $((hit * 1000)) -ge $((tot * 995)) ]; then
	pass "unwind_first_run: $hit of $tot samples of new processes' first second are complete (hearth run)"
else
	fail unwind_first_run "$hit of $tot first-second samples complete under hearth run (want >= 99.5%, >= 1000 samples); incomplete: $(grep '^deepcfi;' "$T/run.folded" | grep -vE "$root" | sort -t' ' -k2 -rn | head -8 | cut -c1-200)"
fi
finish
