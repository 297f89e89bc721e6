# Shared helpers for integration tests (sourced). Each check prints
# "PASS name" or "FAIL name: why"; the script's exit code is the number of failures.
set -u
HEARTH_ROOT=${HEARTH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
HEARTH=${HEARTH:-$HEARTH_ROOT/build/hearth}
W=$HEARTH_ROOT/build/workloads
T=$(mktemp -d /tmp/hearth-it-XXXXXX)
FAILS=0
BG_PIDS=()

cleanup_lib() {
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup_lib EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILS=$((FAILS + 1)); }
skip() { # name, reason: a skip is a failure under CI when the reason is missing root/BPF
	echo "SKIP $1: $2"
}

# Tests that load BPF need root; outside CI they are skipped with the reason,
# under CI (CI=true) that is a failure.
need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		if [ "${CI:-}" = "true" ]; then
			echo "FAIL $1: needs root to load BPF, and CI must run it"
			exit 1
		fi
		skip "$1" "needs root to load BPF"
		exit 0
	fi
}

# Starts a workload in the background; prints its pid (the workload prints its pid first).
start_workload() { # cmd args...
	local out=$T/wl.$RANDOM
	"$@" > "$out" &
	BG_PIDS+=($!)
	local pid=$!
	for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
	echo "$pid"
}

# Waits until a command succeeds (every 0.1 s), at most SECONDS (may be
# fractional); returns 1 at the deadline. Every wait in a test is one of these.
wait_for() { # seconds, command...
	local end=$1 t0=$EPOCHREALTIME
	shift
	while :; do
		"$@" && return 0
		awk -v a="$t0" -v b="$EPOCHREALTIME" -v s="$end" 'BEGIN { exit !(b - a >= s) }' && return 1
		sleep 0.1
	done
}

# Waits until FILE has at least N lines (a child's announcements), at most SECONDS.
wait_lines() { # file, n, seconds
	wait_for "$3" awk -v n="$2" 'END { exit !(NR >= n) }' "$1"
}

# Sampling noise of a share, the binomial way. A share p estimated from n
# independent samples has a standard deviation of sqrt(p(1-p)/n); a check that
# allows 4 of them fails by chance in about 1 run in 16,000.
# share_tol TRUTH_PCT N [EXTRA_POINTS]: the allowed distance in points, 4 standard
# deviations plus EXTRA (a stated systematic allowance), printed with 2 decimals.
share_tol() {
	awk -v p="$1" -v n="$2" -v x="${3:-0}" 'BEGIN {
		p /= 100; if (n < 1) n = 1; printf "%.2f", 400 * sqrt(p * (1 - p) / n) + x }'
}
# share_ok GOT_PCT TRUTH_PCT N [EXTRA_POINTS]: true when GOT is within share_tol.
share_ok() {
	awk -v g="$1" -v t="$2" -v tol="$(share_tol "$2" "$3" "${4:-0}")" \
		'BEGIN { d = g - t; if (d < 0) d = -d; exit !(d <= tol) }'
}
# two_share_tol P1_PCT N1 P2_PCT N2 [EXTRA]: 4 standard deviations of the difference
# of two independent estimates (two samplers of the same process at once).
two_share_tol() {
	awk -v p="$1" -v n="$2" -v q="$3" -v m="$4" -v x="${5:-0}" 'BEGIN {
		p /= 100; q /= 100; if (n < 1) n = 1; if (m < 1) m = 1
		printf "%.2f", 400 * sqrt(p * (1 - p) / n + q * (1 - q) / m) + x }'
}

# Workloads that measure their own truth (split, goleaf) print their pid, then a
# `cpu ...` line of cumulative CPU times each time they get SIGUSR1.
# start_truth OUT CMD...: starts CMD with its output in OUT; sets TRUTH_PID and
# TRUTH_OUT; fails unless the pid line comes within 10 s.
start_truth() { # out, command...
	TRUTH_OUT=$1
	shift
	: > "$TRUTH_OUT"
	"$@" > "$TRUTH_OUT" &
	TRUTH_PID=$!
	BG_PIDS+=("$TRUTH_PID")
	wait_lines "$TRUTH_OUT" 1 10
}
# truth_now: asks the workload for its CPU times and prints the `cpu ...` line it
# answers (waited for, 10 s at most); fails when none comes.
truth_now() {
	local n
	n=$(grep -c '^cpu ' "$TRUTH_OUT")
	kill -USR1 "$TRUTH_PID" || return 1
	wait_for 10 awk -v n=$((n + 1)) '/^cpu / { c++ } END { exit !(c >= n) }' "$TRUTH_OUT" || return 1
	awk '/^cpu / { l = $0 } END { print l }' "$TRUTH_OUT"
}
# truth_share BEFORE AFTER I: field I's share (in %) of field TOTAL_I's growth
# between two `cpu ...` lines (2 decimals; nothing when the total did not grow).
truth_share() { # before, after, field, total field
	awk -v b="$1" -v a="$2" -v i="$3" -v t="$4" 'BEGIN { split(b, x, " "); split(a, y, " ")
		if (y[t] > x[t]) printf "%.2f", 100 * (y[i] - x[i]) / (y[t] - x[t]) }'
}

# Go toolchain offline, in a throwaway home.
go_env() {
	export HOME=$T/gohome GOPATH=$T/gohome/go GOCACHE=$T/gocache GOPROXY=off GOFLAGS=-mod=mod
	mkdir -p "$HOME"
}

# Value of column COL (2=flat%, 5=cum%) of the top-table row whose name is NAME.
top_col() { # file, name, col
	awk -v n="$2" -v c="$3" '$NF == n { v = $c; sub("%", "", v); print v; exit }' "$1"
}

finish() {
	exit "$FAILS"
}
