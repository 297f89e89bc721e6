#!/usr/bin/env bash
# The diff as a new user meets it (issue 30, item 7) in headless Chromium
# (tests/ui/diffux_test.mjs) against a fresh `hearth server` holding the fixture of
# tests/ui/fixture.mjs and a pprof with an inlined function: the default diff on a
# store with nothing in the hour before, an empty side said in words, two ranges
# brushed on the timeline, the side-by-side and combined views, one name per
# function in every view. Screenshots go to build/test-output/ui/diffux-*.png.
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

# Under ASan/UBSan when that build is there (make test builds it), as test_ui.sh.
SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
node "$UI/diffux_test.mjs" "$URL" "$OUT" > "$T/diffux.out" 2> "$T/ui.err"
rc=$?
cat "$T/diffux.out"
FAILS=$((FAILS + $(grep -c '^FAIL ' "$T/diffux.out")))
[ $rc = 0 ] || fail ui_diffux_script "exit $rc: $(tail -5 "$T/ui.err")"
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_ui_diffux
else
	fail server_clean_exit_after_ui_diffux "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
