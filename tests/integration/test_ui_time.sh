#!/usr/bin/env bash
# The web UI's time range controls in headless Chromium (tests/ui/time_test.mjs)
# against a fresh `hearth server` loaded with tests/ui/fixture.mjs, in a time zone
# that is not UTC: presets, local and zoned dates, the picker, brushing that fills
# the boxes with dates, refused times outlined on their own box. Screenshots go to
# build/test-output/ui/time-*.png.
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

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
TZ=America/New_York node "$UI/time_test.mjs" "$URL" "$OUT" 2> "$T/ui.err"
rc=$?
[ $rc = 0 ] || fail ui_time_script "exit $rc: $(tail -5 "$T/ui.err")"
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_ui_time
else
	fail server_clean_exit_after_ui_time "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
