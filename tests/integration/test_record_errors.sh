#!/usr/bin/env bash
# Every bad input to `hearth record` gets one clear sentence and exit code 2,
# before any sampling starts (each case must answer well under a second).
. "$(dirname "$0")/lib.sh"

expect_usage() { # name, expected text, args...
	local name=$1 want=$2
	shift 2
	local t0 rc lines
	t0=$(date +%s%N)
	"$HEARTH" "$@" > "$T/out" 2> "$T/err"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	lines=$(wc -l < "$T/err")
	if [ $rc -ne 2 ]; then
		fail "$name" "exit $rc, want 2; stderr: $(cat "$T/err")"
	elif ! grep -qF -- "$want" "$T/err"; then
		fail "$name" "stderr does not say '$want': $(cat "$T/err")"
	elif [ "$lines" -ne 1 ]; then
		fail "$name" "want one sentence, got $lines lines: $(cat "$T/err")"
	elif [ "$ms" -gt 1500 ]; then
		fail "$name" "took ${ms} ms: did it start sampling?"
	else
		pass "$name: $(cat "$T/err")"
	fi
}

dead=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
while [ -e "/proc/$dead" ]; do dead=$((dead - 1)); done
mkdir -p "$T/ro" && chmod 500 "$T/ro"

expect_usage unknown_flag "unknown option '--bogus'" record --bogus
expect_usage unknown_short_flag "unknown option '-z'" record -z
expect_usage freq_zero "-F: '0' is not a frequency from 1 to 10000 Hz" record -F 0
expect_usage freq_abc "-F: 'abc' is not a frequency" record -F abc
expect_usage freq_too_high "-F: '10001' is not a frequency" record -F 10001
expect_usage freq_missing_value "option '-F' needs a value" record -F
expect_usage long_missing_value "option '--output' needs a value" record --output
expect_usage server_missing_value "hearth server: option '--listen' needs a value" server --listen
expect_usage pid_missing "-p: no process with pid $dead" record -p "$dead"
expect_usage pid_not_number "-p: 'x1' is not a process id" record -p x1
expect_usage duration_bad "-d: 'soon' is not a duration" record -d soon
expect_usage duration_zero "-d: '0' is not a duration" record -d 0
expect_usage unknown_format "--format: unknown format 'png'" record --format png
expect_usage cache_budget_bad "--symbol-cache-mb: 'lots' is not a number of MiB" record --symbol-cache-mb lots
expect_usage unknown_unwind "--unwind: unknown mode 'frames' (dwarf, fp, auto)" record --unwind frames
expect_usage agent_unknown_unwind "hearth agent: --unwind: unknown mode 'frames'" agent --unwind frames
expect_usage run_unknown_unwind "hearth run: --unwind: unknown mode 'frames'" run --unwind frames
expect_usage unknown_transfer "--transfer: unknown mode 'pipe'" record --transfer pipe
expect_usage format_from_name "cannot tell the format of '$T/out.bin'" record -o "$T/out.bin"
expect_usage unknown_command "unknown command 'recrod' (see hearth --help)" recrod
if [ "$(id -u)" -eq 0 ]; then
	# root ignores directory permissions: use a path under a regular file instead.
	touch "$T/file"
	expect_usage unwritable_output "cannot write '$T/file/p.pb.gz'" record -o "$T/file/p.pb.gz"
else
	expect_usage unwritable_output "cannot write '$T/ro/p.pb.gz'" record -o "$T/ro/p.pb.gz"
fi
[ ! -e "$T/file/p.pb.gz" ] && [ ! -e "$T/out.bin" ] && pass no_output_left_behind ||
	fail no_output_left_behind "a file was created by a rejected command"

# Missing privileges: as an unprivileged user, the error names the capability.
if [ "$(id -u)" -eq 0 ] && id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		"$HEARTH" record -d 1 -o /dev/null --format top > "$T/out" 2> "$T/err"
	rc=$?
	if [ $rc -ne 0 ] && grep -q 'CAP_BPF' "$T/err" && grep -q 'CAP_PERFMON' "$T/err"; then
		pass "missing_privileges: $(cat "$T/err")"
	else
		fail missing_privileges "exit $rc: $(cat "$T/err")"
	fi
fi

"$HEARTH" record --help > "$T/help" && grep -q -- '--transfer' "$T/help" && pass help ||
	fail help "record --help does not describe its options"
finish
