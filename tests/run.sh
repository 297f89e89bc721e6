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
# Unit and integration tests run two at a time (HEARTH_TEST_JOBS, default 2), plus
# one more (HEARTH_TEST_LIGHT_JOBS, default 1) for the tests whose file says
# "test-runner: light" with a reason (they mostly wait: a fraction of a CPU), and
# beside them the fuzz targets: first their build (at nice 10), then their runs
# (HEARTH_FUZZ_JOBS at a time, default 3) at the SCHED_IDLE priority: they take
# the CPU time the tests leave. Then the tests whose file says "test-runner:
# serial" with a reason run one by one, with nothing beside them: those that
# measure shares, CPU, wakeups or latency. A serial test whose file also says
# "test-runner: prepare" builds its fixtures (kept under build/) when run with
# --prepare: that runs first among the shared tests, so that the serial phase
# does not wait for builds. Right after those come the shared tests whose file
# says "test-runner: long" with a reason (the longest ones: started last, one
# would end the phase alone, with the other slot idle).
#
# The table at the end gives each test's wall time and the CPU time of its
# processes (those it waited for), and the wall time of each phase.
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
LIGHT_JOBS=${HEARTH_TEST_LIGHT_JOBS:-1}
FUZZ_JOBS=${HEARTH_FUZZ_JOBS:-3}
only=${1:-}

passed=0 failed=0 skipped=0
failures=()
times=()                 # "wall cpu name" per test, for the table
declare -A job_name job_t0 job_out job_kind job_light
running=0 light_running=0
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
	local pid=$1 name=${job_name[$1]} out=${job_out[$1]} rc secs cpu
	rc=$(cat "$out.rc" 2>/dev/null || echo 1)
	cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); c += a[1] * 60 + a[2] } }
		END { printf "%.1f", c }' "$out.cpu" 2>/dev/null)
	rm -f "$out.rc" "$out.cpu"
	[ "$rc" -eq 124 ] && echo "FAIL $name: timed out" >> "$out"
	secs=$(elapsed "${job_t0[$pid]}")
	if [ "${job_kind[$pid]}" = fuzzbuild ]; then
		# a target that did not build is reported by its own run (run-one.sh builds it)
		printf '%-40s %5ss  exit %s\n' "$name" "$secs" "$rc"
		fuzz_built=1
	else
		printf '%-40s %5ss  %s passed, %s failed  (CPU %ss)\n' "$name" "$secs" "$(grep -c '^PASS ' "$out")" \
			"$(grep -c '^FAIL ' "$out")" "${cpu:-0}"
		count "$name" "$out" "$rc"
	fi
	times+=("$secs ${cpu:-0} $name")
	[ "${job_kind[$pid]}" != test ] && fuzz_running=$((fuzz_running - 1))
	[ "${job_light[$pid]:-0}" = 1 ] && light_running=$((light_running - 1))
	unset "job_name[$pid]" "job_t0[$pid]" "job_out[$pid]" "job_kind[$pid]" "job_light[$pid]"
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
	running=0 fuzz_running=0 light_running=0
}

wait_all() { while [ "$running" -gt 0 ]; do wait_one; done; }

# Starts a job in the background: a test, or a fuzz run at SCHED_IDLE priority
# (it takes only CPU time that no test wants).
launch() { # kind (test|fuzz|fuzzbuild), name, timeout seconds, command...
	local kind=$1 name=$2 limit=$3 out="$LOGDIR/${2//\//_}.log"
	shift 3
	(
		if [ "$kind" = fuzz ]; then
			chrt --idle 0 true 2>/dev/null && set -- chrt --idle 0 "$@" || set -- nice -n 19 "$@"
			export HEARTH_FUZZ_IDLE=1 # run-one.sh: hang timeouts count wall time
		elif [ "$kind" = fuzzbuild ]; then
			# not SCHED_IDLE: the build must end even when the tests keep both CPUs
			# busy (the runs wait for it); at nice 10 a busy test still gets 90%
			set -- nice -n 10 "$@"
		fi
		timeout --kill-after=10 "$limit" "$@" > "$out" 2>&1
		echo $? > "$out.rc"
		# the CPU time of the job's processes that were waited for (user + sys)
		# (the builtin writes a file: in a pipe it would run in a child of its own)
		times > "$out.cpu"
	) &
	job_name[$!]=$name job_t0[$!]=$EPOCHREALTIME job_out[$!]=$out job_kind[$!]=$kind
	job_light[$!]=${LAUNCH_LIGHT:-0}
	[ "${LAUNCH_LIGHT:-0}" = 1 ] && light_running=$((light_running + 1))
	running=$((running + 1))
	[ "$kind" != test ] && fuzz_running=$((fuzz_running + 1))
	return 0
}

is_serial() { grep -q 'test-runner: serial' "$1"; }
is_light() { grep -q 'test-runner: light' "$1"; }
is_long() { grep -q 'test-runner: long' "$1"; }
wanted() { [ -z "$only" ] || [[ "$1" == *"$only"* ]]; }

# The queues: "name|timeout|command" per job; light[N] is 1 for shared[N] when
# its file says "test-runner: light".
shared=() alone=() fuzz=() prepare=() fuzz_bins=() light=() light_names=() long=()
for t in build/tests/test_*; do
	[ -x "$t" ] || continue
	name=unit/$(basename "$t")
	wanted "$name" || continue
	src=tests/unit/$(basename "$t").c
	if is_serial "$src"; then
		alone+=("$name|300|$t")
	elif is_long "$src"; then
		long+=("$name|300|$t")
	else
		shared+=("$name|300|$t")
		is_light "$src" && light_names+=("$name")
	fi
done
for t in tests/integration/test_*.sh; do
	name=integration/$(basename "$t" .sh)
	wanted "$name" || continue
	if is_serial "$t"; then
		alone+=("$name|900|bash $t")
		# what it builds before it measures, built in the shared phase
		grep -q 'test-runner: prepare' "$t" && prepare+=("prepare/${name#*/}|900|bash $t --prepare")
	elif is_long "$t"; then
		long+=("$name|900|bash $t")
	else
		shared+=("$name|900|bash $t")
		is_light "$t" && light_names+=("$name")
	fi
done
shared=(${prepare[@]+"${prepare[@]}"} ${long[@]+"${long[@]}"} ${shared[@]+"${shared[@]}"})
for j in "${!shared[@]}"; do
	light[j]=0
	for n in ${light_names[@]+"${light_names[@]}"}; do [ "${shared[j]%%|*}" = "$n" ] && light[j]=1; done
done
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=fuzz/$(basename "$src" .c)
	wanted "$name" || continue
	fuzz+=("$name|$((FUZZ_SECONDS + 300))|bash tests/fuzz/run-one.sh $(basename "$src" .c) $FUZZ_SECONDS")
	fuzz_bins+=("build/fuzz/$(basename "$src" .c)")
done

run_job() { # kind, "name|timeout|command"[, 1: in a light slot]
	local IFS='|' f LAUNCH_LIGHT=${3:-0}
	read -r -a f <<<"$2"
	IFS=' '
	# shellcheck disable=SC2086 # the command is words without quoting
	launch "$1" "${f[0]}" "${f[1]}" ${f[2]}
}

make -s -C tests/workloads OUT="$PWD/build/workloads" >/dev/null || { echo "FAIL building workloads"; failed=$((failed + 1)); }

echo "== unit and integration tests, $JOBS at a time and $LIGHT_JOBS light one(s) beside, and fuzz targets (${FUZZ_SECONDS}s each, $FUZZ_JOBS at a time) on idle CPU"
fuzz_running=0 fuzz_built=0
# The fuzz targets are built first; their runs wait for it. Two compilers at a
# time (the runner's two CPUs), whatever FUZZ_JOBS says of the runs.
[ ${#fuzz[@]} -gt 0 ] && launch fuzzbuild fuzz/build 900 flock build/.fuzz-make.lock make -s -k -j2 "${fuzz_bins[@]}"
# The LIGHT_JOBS slots take the light tests in their order, the JOBS slots the
# others, then what is left of the light ones. left: shared tests not started.
declare -A taken=()
left=${#shared[@]}
next_shared() { # light wanted: 1 light only, 0 others only, any: the first not started
	local j
	for j in "${!shared[@]}"; do
		[ -z "${taken[$j]+x}" ] || continue
		[ "$1" = any ] || [ "${light[j]}" = "$1" ] || continue
		echo "$j"
		return 0
	done
	return 1
}
k=0
while [ "$left" -gt 0 ] || [ $k -lt ${#fuzz[@]} ] || [ "$running" -gt 0 ]; do
	while [ "$left" -gt 0 ] && [ "$light_running" -lt "$LIGHT_JOBS" ] && j=$(next_shared 1); do
		taken[$j]=1 left=$((left - 1))
		run_job test "${shared[$j]}" 1
	done
	while [ "$left" -gt 0 ] && [ $((running - fuzz_running - light_running)) -lt "$JOBS" ] &&
		{ j=$(next_shared 0) || j=$(next_shared any); }; do
		taken[$j]=1 left=$((left - 1))
		run_job test "${shared[$j]}"
	done
	while [ "$fuzz_built" = 1 ] && [ $k -lt ${#fuzz[@]} ] && [ "$fuzz_running" -lt "$FUZZ_JOBS" ]; do
		run_job fuzz "${fuzz[$k]}"
		k=$((k + 1))
	done
	[ "$running" -gt 0 ] && wait_one
done

t_shared=$(elapsed "$t_all")
t_serial=$EPOCHREALTIME
echo "== tests that run alone (test-runner: serial)"
for j in "${alone[@]}"; do
	run_job test "$j"
	wait_all
done

echo
echo "== time per test (seconds, slowest first; wall $(elapsed "$t_all")s: shared phase ${t_shared}s, $JOBS at a time + $LIGHT_JOBS light, serial phase $(elapsed "$t_serial")s)"
echo "    wall     CPU  (CPU: user + sys of the processes the test waited for)"
printf '%s\n' "${times[@]}" | sort -rn | awk '{ printf "%8.1f %7.1f  %s\n", $1, $2, $3 }'
echo
for f in "${failures[@]}"; do echo "failed: $f"; done
if [ $((passed + failed)) -eq 0 ]; then
	echo "no test ran: that is a failure"
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
