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
