# Helpers of the Chromium UI tests (sourced after lib.sh and server_lib.sh).
# UI: tests/ui; OUT: where screenshots go (HEARTH_UI_OUT, default
# build/test-output/ui).
UI=$HEARTH_ROOT/tests/ui
OUT=${HEARTH_UI_OUT:-$HEARTH_ROOT/build/test-output/ui}
mkdir -p "$OUT"

# node, Chromium and playwright-core are there, or the test fails saying how to
# install them.
ui_prerequisites() {
	local need
	for need in node /usr/bin/chromium; do
		command -v "$need" > /dev/null ||
			{ fail ui_prerequisites "$need is missing: run scripts/install-deps.sh --test"; finish; }
	done
	[ -d "$UI/node_modules/playwright-core" ] ||
		{ fail ui_prerequisites "tests/ui/node_modules is missing: run make test-deps (npm ci in tests/ui)"; finish; }
}

# Runs tests/ui/SCRIPT (with its URL and OUT arguments, and the environment
# assignments given, e.g. TZ=...) against a fresh `hearth server` — under
# ASan/UBSan when that build is there (make test builds it) — counts its FAIL
# lines, checks the server exits cleanly, and finishes the test.
ui_run() { # script.mjs, name, [VAR=value...]
	local script=$1 name=$2 bin=$HEARTH_ROOT/build/hearth-asan rc src spid URL
	shift 2
	ui_prerequisites
	[ -x "$bin" ] || bin=$HEARTH
	HEARTH=$bin start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
		spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
	env "$@" node "$UI/$script" "$URL" "$OUT" > "$T/$name.out" 2> "$T/ui.err"
	rc=$?
	cat "$T/$name.out"
	FAILS=$((FAILS + $(grep -c '^FAIL ' "$T/$name.out")))
	[ $rc = 0 ] || fail "ui_${name}_script" "exit $rc: $(tail -5 "$T/ui.err")"
	kill "$spid" 2> /dev/null
	wait "$spid"
	src=$?
	if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
		pass "server_clean_exit_after_ui_$name"
	else
		fail "server_clean_exit_after_ui_$name" "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
	fi
	finish
}
