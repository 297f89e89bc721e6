#!/usr/bin/env bash
# The web UI in headless Chromium (tests/ui, playwright-core): against a fresh
# `hearth server` loaded with the fixture of tests/ui/fixture.mjs (every view,
# link, error state and export), and against `hearth run` profiling a busy
# workload (needs root). Screenshots of each view go to build/test-output/ui/.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

UI=$HEARTH_ROOT/tests/ui
OUT=${HEARTH_UI_OUT:-$HEARTH_ROOT/build/test-output/ui}
mkdir -p "$OUT"
for need in node /usr/bin/chromium; do
	command -v "$need" > /dev/null ||
		{ fail ui_prerequisites "$need is missing: run scripts/install-deps.sh --test"; finish; }
done
[ -d "$UI/node_modules/playwright-core" ] ||
	{ fail ui_prerequisites "tests/ui/node_modules is missing: run make test-deps (npm ci in tests/ui)"; finish; }

# The fixture server: fresh store, loopback, a free port; under ASan/UBSan when
# that build is there (make test builds it), so every request the UI makes is checked.
SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
node "$UI/ui_test.mjs" "$URL" "$OUT" "$spid" 2> "$T/ui.err"
rc=$?
[ $rc = 0 ] || fail ui_test_script "exit $rc: $(tail -5 "$T/ui.err")"
# The UI test stopped the server (SIGTERM) for its "unreachable" check: it must
# have exited cleanly, with no sanitizer report.
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_ui
else
	fail server_clean_exit_after_ui "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi

# Live: hearth run on this machine with a busy workload.
if [ "$(id -u)" -ne 0 ]; then
	if [ "${CI:-}" = "true" ]; then
		fail ui_live "needs root to load BPF, and CI must run it"
	else
		skip ui_live "needs root to load BPF"
	fi
	finish
fi
start_workload "$W/split" 120 > /dev/null
# The UI embedded in the binary, as `make run` serves it (test_server_web covers --web-dir).
start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 --interval 1 &&
	RURL=$HURL || { fail run_start "$(cat "$T/run.log")"; finish; }
# Stored: enough of the workload's samples for live_table_split's >= 100 (a
# loaded runner stores fewer per second: wait for them, not for the first).
landed() {
	curl -s "$RURL/api/profile?format=folded&query=%7Bprocess%3D%22split%22%7D&from=now-5m" |
		awk '{ s += $NF } /split_hot_b/ { b = 1 } END { exit !(b && s >= 200) }'
}
if wait_until 60 landed; then
	node "$UI/live_test.mjs" "$RURL" split "$OUT" split_hot_a split_hot_b 2> "$T/live.err" ||
		fail ui_live_script "$(tail -5 "$T/live.err")"
	# Real mappings name each frame's module: the executable, the shared library.
	curl -s "$RURL/api/profile?format=tree&maxNodes=5000&query=%7Bprocess%3D%22split%22%7D&from=now-5m" > "$T/live.json"
	ma=$(jq -r '[.. | objects | select(.name? == "split_hot_a") | .module] | first' "$T/live.json")
	mc=$(jq -r '[.. | objects | select(.name? == "lib_hot_c") | .module] | first' "$T/live.json")
	[ "$ma" = split ] && [ "$mc" = libsplitlib.so ] && pass "live_tree_modules ($ma, $mc)" ||
		fail live_tree_modules "split_hot_a in '$ma', lib_hot_c in '$mc'"
else
	fail ui_live "no 200 samples of the workload stored in 60 s: $(tail -3 "$T/run.log")"
fi
finish
