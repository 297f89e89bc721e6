#!/usr/bin/env bash
# hearth record built with AddressSanitizer, LeakSanitizer and UBSan, recording
# the whole machine (both transfer modes, every output format) while workloads
# start, exec and exit: any leak, overflow or undefined behaviour fails the test.
. "$(dirname "$0")/lib.sh"
need_root record_asan
ASAN_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$ASAN_BIN" ] || { fail record_asan "build/hearth-asan is missing (make build/hearth-asan)"; finish; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98

"$W/split" 1 "$W/gohot" 1 > /dev/null &
BG_PIDS+=($!)
# Busy for the whole test (8 recordings of 1 s plus ASan start-up): an idle machine
# gives no samples and an empty folded file. Killed at exit by lib.sh.
"$W/syscalls" 60 > /dev/null &
BG_PIDS+=($!)
for mode in map ringbuf; do
	for fmt in pprof folded svg top; do
		"$ASAN_BIN" record --transfer $mode --format $fmt -F 199 -d 1 -q -o "$T/out.$mode.$fmt" 2> "$T/err"
		rc=$?
		if [ $rc -eq 0 ] && ! grep -qE 'Sanitizer|runtime error' "$T/err" && [ -s "$T/out.$mode.$fmt" ]; then
			pass "asan_${mode}_$fmt"
		else
			fail "asan_${mode}_$fmt" "exit $rc: $(grep -A12 -E 'Sanitizer|runtime error' "$T/err" | head -30)"
		fi
	done
done
finish
