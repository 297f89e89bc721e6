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
# Two tests run at a time (HEARTH_TEST_JOBS, default 2), except those whose file
# says "test-runner: serial" with a reason: the ones that measure shares, CPU,
# wakeups or latency run alone, so that another test's load is not in their
# figures. Fuzz targets are built once, together, then run two at a time.
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
only=${1:-}

passed=0 failed=0 skipped=0
failures=()
times=()                 # "seconds name" per test, for the table
declare -A job_name job_t0 job_out
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
	unset "job_name[$pid]" "job_t0[$pid]" "job_out[$pid]"
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
	running=0
}

wait_all() { while [ "$running" -gt 0 ]; do wait_one; done; }

# Starts a test in the background once a slot is free; a serial test waits for
# every running one and runs alone.
start() { # name, timeout seconds, serial(0|1), command...
	local name=$1 limit=$2 serial=$3 out="$LOGDIR/${1//\//_}.log"
	shift 3
	if [ -n "$only" ] && [[ "$name" != *"$only"* ]]; then return 0; fi
	if [ "$serial" = 1 ]; then
		wait_all
	else
		while [ "$running" -ge "$JOBS" ]; do wait_one; done
	fi
	(
		timeout --kill-after=10 "$limit" "$@" > "$out" 2>&1
		echo $? > "$out.rc"
	) &
	job_name[$!]=$name job_t0[$!]=$EPOCHREALTIME job_out[$!]=$out
	running=$((running + 1))
	[ "$serial" = 1 ] && wait_all
	return 0
}

is_serial() { grep -q 'test-runner: serial' "$1"; }

echo "== unit tests (ASan/UBSan)"
for t in build/tests/test_*; do
	[ -x "$t" ] || continue
	s=0
	is_serial "tests/unit/$(basename "$t").c" && s=1
	start "unit/$(basename "$t")" 300 "$s" "$t"
done
wait_all

echo "== integration tests"
make -s -C tests/workloads OUT="$PWD/build/workloads" >/dev/null || { echo "FAIL building workloads"; failed=$((failed + 1)); }
for t in tests/integration/test_*.sh; do
	s=0
	is_serial "$t" && s=1
	start "integration/$(basename "$t" .sh)" 900 "$s" bash "$t"
done
wait_all

echo "== fuzz targets (${FUZZ_SECONDS}s each)"
if [ -z "$only" ] || [[ fuzz/ == *"$only"* ]] || [[ "$only" == fuzz* ]]; then
	t0=$EPOCHREALTIME
	# one build of the instrumented library for every target; a target that does
	# not build is reported by its own run below
	make -s -k -j"$(nproc)" fuzz > "$LOGDIR/fuzz_build.log" 2>&1
	times+=("$(elapsed "$t0") fuzz/(build)")
fi
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	start "fuzz/$name" $((FUZZ_SECONDS + 300)) 0 bash tests/fuzz/run-one.sh "$name" "$FUZZ_SECONDS"
done
wait_all

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
