#!/usr/bin/env bash
# Builds one libFuzzer target and runs it for a bounded time on a fresh corpus
# (seeded from tests/fuzz/corpus/NAME when present). PASS when it finds nothing.
set -u
name=$1 secs=$2
cd "${HEARTH_ROOT:-.}"
# one make at a time: the targets share their objects (build/fuzzobj), which two
# makes at once could both write
mkdir -p build
if ! flock build/.fuzz-make.lock make -s "build/fuzz/$name" 2>&1; then
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
# Memory limits: tests/fuzz/NAME.limits, required (docs/testing.md, "Fuzz targets"):
# rss_mb (the decoder's budget for the largest input plus ASan's and libFuzzer's
# own), malloc_mb (at least the largest single allocation the decoder may make within
# its budget: a larger one is a finding) and optionally max_len (the largest input,
# which the budget is sized for). A target without one does not run: each new
# parser states what it may use.
lim=tests/fuzz/$name.limits
val() { sed -n "s/^$1=\([0-9][0-9]*\)[[:space:]]*\$/\1/p" "$lim" | tail -1; }
if [ ! -f "$lim" ] || [ -z "$(val rss_mb)" ] || [ -z "$(val malloc_mb)" ]; then
	echo "FAIL $name: $lim must give rss_mb=N and malloc_mb=N (docs/testing.md, Fuzz targets)"
	exit 1
fi
limits=(-rss_limit_mb="$(val rss_mb)" -malloc_limit_mb="$(val malloc_mb)")
[ -n "$(val max_len)" ] && limits+=(-max_len="$(val max_len)")
# Leaks are findings: libFuzzer's -detect_leaks=1 is the default under ASan, but an
# ASAN_OPTIONS from the environment could turn LeakSanitizer off; the last wins.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
"build/fuzz/$name" -max_total_time="$secs" "${limits[@]}" -detect_leaks=1 -timeout="$limit" \
	"${dict[@]}" -artifact_prefix="build/fuzz/$name-" "$corpus" > "$corpus.log" 2>&1
rc=$? # the fuzzer's own status, not a pipe's
tail -5 "$corpus.log"
# the peak, for the limits file's headroom (libFuzzer prints "rss: NMb" as it goes)
echo "peak rss $(grep -o 'rss: [0-9]*Mb' "$corpus.log" | sort -t' ' -k2 -n | tail -1) of limit $(val rss_mb)Mb"
rm -f "$corpus.log"
if [ $rc -eq 0 ]; then
	echo "PASS $name: ran ${secs}s without findings"
else
	echo "FAIL $name: crash or leak found (artifact under build/fuzz/)"
	exit 1
fi
