#!/usr/bin/env bash
# The web UI's smaller gaps (issue 30, item 9) in headless Chromium
# (tests/ui/gaps_test.mjs) against a fresh `hearth server` holding the fixture of
# tests/ui/fixture.mjs and one 300-frame stack: the table's order and zoom in the
# URL, a deep graph in the flame orientation (page and SVG export), one colour per
# function, dark mode, refresh, maxNodes, the loading indicator, the toolbar on a
# bad regex, the graph above the fold at 1024x768. Screenshots go to
# build/test-output/ui/gaps-*.png (with the deep SVG, gaps-deep.svg).
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
node "$UI/gaps_test.mjs" "$URL" "$OUT" > "$T/gaps.out" 2> "$T/ui.err"
rc=$?
cat "$T/gaps.out"
FAILS=$((FAILS + $(grep -c '^FAIL ' "$T/gaps.out")))
[ $rc = 0 ] || fail ui_gaps_script "exit $rc: $(tail -5 "$T/ui.err")"
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_ui_gaps
else
	fail server_clean_exit_after_ui_gaps "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
