#!/usr/bin/env bash
# Runs every hearth test: unit-test binaries (ASan/UBSan), integration scripts
# (real BPF, real workloads, real clients), bounded fuzz runs. Ends with a table of
# where the time went and one line "N passed, N failed, N skipped"; exits non-zero
# when anything failed.
#
# Each unit binary and integration script prints "PASS name" / "FAIL name" /
# "SKIP name: reason" lines; a script that exits non-zero without a FAIL line
# counts as one failure. Under CI (CI=true) a skip of a test that needs root or
# BPF is a failure: those must run there.
#
# Unit and integration tests run two at a time (HEARTH_TEST_JOBS, default 2), and
# beside them the fuzz targets (HEARTH_FUZZ_JOBS at a time, default 2) at the
# SCHED_IDLE priority: they take the CPU time the tests leave. Then the tests
# whose file says "test-runner: serial" with a reason run one by one, with
# nothing beside them: those that measure shares, CPU, wakeups or latency.
# `make test` builds the fuzz targets beforehand (run-one.sh builds a missing one).
#
# Usage: tests/run.sh [PATTERN]   only tests whose name contains PATTERN
set -u
cd "$(dirname "$0")/.."
export HEARTH_ROOT=$PWD
export HEARTH=$PWD/build/hearth
LOGDIR=${HEARTH_TEST_LOG:-build/test-logs}
mkdir -p "$LOGDIR"
FUZZ_SECONDS=${HEARTH_FUZZ_SECONDS:-20}
JOBS=${HEARTH_TEST_JOBS:-2}
FUZZ_JOBS=${HEARTH_FUZZ_JOBS:-2}
only=${1:-}

passed=0 failed=0 skipped=0
failures=()
times=()                 # "seconds name" per test, for the table
declare -A job_name job_t0 job_out job_kind
running=0
t_all=$EPOCHREALTIME

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

count() { # name, output file, exit code
	local name=$1 out=$2 rc=$3 p f s
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "FAIL $name (exit $rc)" >> "$out"
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	grep -E '^(FAIL|SKIP) ' "$out" | sed "s|^|  [$name] |"
	# the summary repeats why (CI shows only the end of the output)
	[ "$f" -gt 0 ] && failures+=("$name: see $out
$(grep '^FAIL ' "$out" | head -5 | cut -c1-400 | sed 's/^/    /')")
	return 0
}

# Collects one finished job: its line, its counts, its time.
reap() { # pid
	local pid=$1 name=${job_name[$1]} out=${job_out[$1]} rc secs
	rc=$(cat "$out.rc" 2>/dev/null || echo 1)
	rm -f "$out.rc"
	[ "$rc" -eq 124 ] && echo "FAIL $name: timed out" >> "$out"
	secs=$(elapsed "${job_t0[$pid]}")
	printf '%-40s %5ss  %s passed, %s failed\n' "$name" "$secs" "$(grep -c '^PASS ' "$out")" \
		"$(grep -c '^FAIL ' "$out")"
	count "$name" "$out" "$rc"
	times+=("$secs $name")
	[ "${job_kind[$pid]}" = fuzz ] && fuzz_running=$((fuzz_running - 1))
	unset "job_name[$pid]" "job_t0[$pid]" "job_out[$pid]" "job_kind[$pid]"
	running=$((running - 1))
}

wait_one() {
	local pid p
	wait -n -p pid
	if [ -n "${pid:-}" ]; then
		[ -n "${job_name[$pid]+x}" ] && reap "$pid"
		return 0
	fi
	# nothing left to wait for: collect whatever is still listed
	for p in "${!job_name[@]}"; do reap "$p"; done
	running=0 fuzz_running=0
}

wait_all() { while [ "$running" -gt 0 ]; do wait_one; done; }

# Starts a job in the background: a test, or a fuzz run at SCHED_IDLE priority
# (it takes only CPU time that no test wants).
launch() { # kind (test|fuzz), name, timeout seconds, command...
	local kind=$1 name=$2 limit=$3 out="$LOGDIR/${2//\//_}.log"
	shift 3
	(
		if [ "$kind" = fuzz ]; then
			chrt --idle 0 true 2>/dev/null && set -- chrt --idle 0 "$@" || set -- nice -n 19 "$@"
			export HEARTH_FUZZ_IDLE=1 # run-one.sh: hang timeouts count wall time
		fi
		timeout --kill-after=10 "$limit" "$@" > "$out" 2>&1
		echo $? > "$out.rc"
	) &
	job_name[$!]=$name job_t0[$!]=$EPOCHREALTIME job_out[$!]=$out job_kind[$!]=$kind
	running=$((running + 1))
	[ "$kind" = fuzz ] && fuzz_running=$((fuzz_running + 1))
	return 0
}

is_serial() { grep -q 'test-runner: serial' "$1"; }
wanted() { [ -z "$only" ] || [[ "$1" == *"$only"* ]]; }

# The queues: "name|timeout|command" per job.
shared=() alone=() fuzz=()
for t in build/tests/test_*; do
	[ -x "$t" ] || continue
	name=unit/$(basename "$t")
	wanted "$name" || continue
	if is_serial "tests/unit/$(basename "$t").c"; then alone+=("$name|300|$t"); else shared+=("$name|300|$t"); fi
done
for t in tests/integration/test_*.sh; do
	name=integration/$(basename "$t" .sh)
	wanted "$name" || continue
	if is_serial "$t"; then alone+=("$name|900|bash $t"); else shared+=("$name|900|bash $t"); fi
done
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=fuzz/$(basename "$src" .c)
	wanted "$name" && fuzz+=("$name|$((FUZZ_SECONDS + 300))|bash tests/fuzz/run-one.sh $(basename "$src" .c) $FUZZ_SECONDS")
done

run_job() { # kind, "name|timeout|command"
	local IFS='|' f
	read -r -a f <<<"$2"
	IFS=' '
	# shellcheck disable=SC2086 # the command is words without quoting
	launch "$1" "${f[0]}" "${f[1]}" ${f[2]}
}

make -s -C tests/workloads OUT="$PWD/build/workloads" >/dev/null || { echo "FAIL building workloads"; failed=$((failed + 1)); }

echo "== unit and integration tests, $JOBS at a time, and fuzz targets (${FUZZ_SECONDS}s each) on idle CPU"
fuzz_running=0
i=0 k=0
while [ $i -lt ${#shared[@]} ] || [ $k -lt ${#fuzz[@]} ] || [ "$running" -gt 0 ]; do
	while [ $i -lt ${#shared[@]} ] && [ $((running - fuzz_running)) -lt "$JOBS" ]; do
		run_job test "${shared[$i]}"
		i=$((i + 1))
	done
	while [ $k -lt ${#fuzz[@]} ] && [ "$fuzz_running" -lt "$FUZZ_JOBS" ]; do
		run_job fuzz "${fuzz[$k]}"
		k=$((k + 1))
	done
	[ "$running" -gt 0 ] && wait_one
done

echo "== tests that run alone (test-runner: serial)"
for j in "${alone[@]}"; do
	run_job test "$j"
	wait_all
done

echo
echo "== time per test (seconds, slowest first; wall $(elapsed "$t_all")s, $JOBS at a time)"
printf '%s\n' "${times[@]}" | sort -rn | awk '{ printf "%8.1f  %s\n", $1, $2 }'
echo
for f in "${failures[@]}"; do echo "failed: $f"; done
if [ $((passed + failed)) -eq 0 ]; then
	echo "no test ran: that is a failure"
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
