#!/usr/bin/env bash
# Runs the whole suite N times as CI does (`CI=true bash .ci/run`), each time on a
# fresh clone of HEAD with ../shared copied beside it, and lists every check that
# failed at least once, with how often. Use it before resolving an issue: a check
# that fails once in N clean runs is a defect to fix, not a fluke.
#
# Usage: tests/repeat.sh [N]          (default 3; `make test-repeat N=3 HOG=1`)
#   HOG=1   a CPU hog spins on core 0 throughout every run, as a noisy shared CI
#           machine would have it; HOG=last: in the last run only
#   KEEP=1  keep the clones (the logs are kept either way)
# Logs: $REPEAT_DIR (default /tmp/hearth-repeat-TIMESTAMP)/runK.log
set -u
N=${1:-3}
HOG=${HOG:-0}
src=$(cd "$(dirname "$0")/.." && pwd)
case $N in '' | *[!0-9]* | 0) echo "usage: tests/repeat.sh [N]: '$N' is not a count of runs" >&2; exit 2 ;; esac
case $HOG in 0 | 1 | last) ;; *) echo "tests/repeat.sh: HOG='$HOG': use 0, 1 (every run) or last" >&2; exit 2 ;; esac
dir=${REPEAT_DIR:-/tmp/hearth-repeat-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$dir"
rev=$(git -C "$src" rev-parse --short HEAD)
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
	echo "repeat: note: uncommitted changes in $src are not in the clones (HEAD $rev is)"
fi
hog=
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; hog=; }
trap 'stop_hog' EXIT

declare -A fails=()
results=()
for k in $(seq "$N"); do
	run=$dir/run$k
	rm -rf "$run"
	mkdir -p "$run"
	git clone -q "$src" "$run/main" || { echo "repeat: git clone failed" >&2; exit 1; }
	[ -d "$src/../shared" ] && cp -r "$src/../shared" "$run/shared"
	hogged=0
	if [ "$HOG" = 1 ] || { [ "$HOG" = last ] && [ "$k" = "$N" ]; }; then
		taskset -c 0 sh -c 'while :; do :; done' &
		hog=$! hogged=1
	fi
	echo "repeat: run $k of $N ($rev$([ $hogged = 1 ] && echo ', CPU hog on core 0')): $dir/run$k.log"
	t0=$SECONDS
	(cd "$run/main" && CI=true bash .ci/run) > "$dir/run$k.log" 2>&1
	rc=$?
	secs=$((SECONDS - t0))
	stop_hog
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/run$k.log" | tail -1)
	results+=("run $k$([ $hogged = 1 ] && echo ' (CPU hog)'): exit $rc, $((secs / 60)) min $((secs % 60)) s, ${summary:-no summary line}")
	echo "  ${results[-1]}"
	# "  [unit/test_x] FAIL check: why" lines, as tests/run.sh prints them
	while IFS= read -r line; do
		key=$(sed -E 's/^ *\[([^]]*)\] FAIL ([^: ]*).*/\1: \2/' <<<"$line")
		fails[$key]=$((${fails[$key]:-0} + 1))
	done < <(grep -E '^ *\[[^]]*\] FAIL ' "$dir/run$k.log")
	[ "${KEEP:-0}" = 1 ] || rm -rf "$run"
done

echo
echo "== $N runs of $rev"
printf '%s\n' "${results[@]}"
if [ ${#fails[@]} -eq 0 ]; then
	echo "no check failed in any run"
	exit 0
fi
echo "checks that failed at least once (runs failed, of $N):"
for key in "${!fails[@]}"; do printf '  %d  %s\n' "${fails[$key]}" "$key"; done | sort -rn
exit 1
