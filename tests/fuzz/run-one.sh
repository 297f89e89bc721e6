#!/usr/bin/env bash
# Builds one libFuzzer target and runs it for a bounded time on a fresh corpus
# (seeded from tests/fuzz/corpus/NAME when present). PASS when it finds nothing.
set -u
name=$1 secs=$2
cd "${HEARTH_ROOT:-.}"
if ! make -s "build/fuzz/$name" 2>&1; then
	echo "FAIL $name: does not build"
	exit 1
fi
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
[ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$corpus/"
# per-input time limit: tests/fuzz/NAME.timeout (seconds) when present, else 10. It
# is libFuzzer's hang detector and counts wall time: under tests/run.sh a target runs
# at the SCHED_IDLE priority (HEARTH_FUZZ_IDLE=1) and can wait seconds for a CPU
# while tests take both (a package build beside it holds both for ~40 s), so there
# it is 120 s: a real hang is still caught, inside run.sh's own limit of the run.
# A target that needs a tighter bound measures its own CPU time (fuzz_regex does).
limit=$(cat "tests/fuzz/$name.timeout" 2>/dev/null || echo 10)
[ "${HEARTH_FUZZ_IDLE:-0}" = 1 ] && [ "$limit" -lt 120 ] && limit=120
# a dictionary of the input's words: tests/fuzz/NAME.dict when present
dict=()
[ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
"build/fuzz/$name" -max_total_time="$secs" -rss_limit_mb=2048 -timeout="$limit" "${dict[@]}" \
	-artifact_prefix="build/fuzz/$name-" "$corpus" > "$corpus.log" 2>&1
rc=$? # the fuzzer's own status, not a pipe's
tail -5 "$corpus.log"
rm -f "$corpus.log"
if [ $rc -eq 0 ]; then
	echo "PASS $name: ran ${secs}s without findings"
else
	echo "FAIL $name: crash or leak found (artifact under build/fuzz/)"
	exit 1
fi
