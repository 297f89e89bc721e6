#!/usr/bin/env bash
# Runs every hearth test: unit-test binaries (ASan/UBSan), integration scripts
# (real BPF, real workloads, real clients), bounded fuzz runs. Ends with one line
# "N passed, N failed, N skipped" and exits non-zero when anything failed.
#
# Each unit binary and integration script prints "PASS name" / "FAIL name" /
# "SKIP name: reason" lines; a script that exits non-zero without a FAIL line
# counts as one failure. Under CI (CI=true) a skip of a test that needs root or
# BPF is a failure: those must run there.
set -u
cd "$(dirname "$0")/.."
export HEARTH_ROOT=$PWD
export HEARTH=$PWD/build/hearth
LOGDIR=${HEARTH_TEST_LOG:-build/test-logs}
mkdir -p "$LOGDIR"
FUZZ_SECONDS=${HEARTH_FUZZ_SECONDS:-20}
only=${1:-}

passed=0 failed=0 skipped=0
failures=()

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

run_one() { # name, timeout seconds, command...
	local name=$1 limit=$2 out="$LOGDIR/${1//\//_}.log" rc
	shift 2
	if [ -n "$only" ] && [[ "$name" != *"$only"* ]]; then return 0; fi
	printf '%-40s ' "$name"
	local t0=$SECONDS
	timeout --kill-after=10 "$limit" "$@" > "$out" 2>&1
	rc=$?
	[ $rc -eq 124 ] && echo "FAIL $name: timed out after ${limit}s" >> "$out"
	printf '%3ss  %s passed, %s failed\n' $((SECONDS - t0)) "$(grep -c '^PASS ' "$out")" \
		"$(grep -c '^FAIL ' "$out")"
	count "$name" "$out" "$rc"
}

echo "== unit tests (ASan/UBSan)"
for t in build/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" 300 "$t"
done

echo "== integration tests"
make -s -C tests/workloads OUT="$PWD/build/workloads" >/dev/null || { echo "FAIL building workloads"; failed=$((failed + 1)); }
for t in tests/integration/test_*.sh; do
	run_one "integration/$(basename "$t" .sh)" 900 bash "$t"
done

echo "== fuzz targets (${FUZZ_SECONDS}s each)"
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	run_one "fuzz/$name" $((FUZZ_SECONDS + 300)) bash tests/fuzz/run-one.sh "$name" "$FUZZ_SECONDS"
done

echo
for f in "${failures[@]}"; do echo "failed: $f"; done
if [ $((passed + failed)) -eq 0 ]; then
	echo "no test ran: that is a failure"
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
