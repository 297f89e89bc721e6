#!/usr/bin/env bash
# Processes apart and unnamed code in the UI (issue 30, items 1 and 8, and the
# diff's range boxes of item 7) in headless Chromium (tests/ui/groupby_test.mjs)
# against a fresh `hearth server` holding agent-shaped pprofs the test writes: the
# whole machine grouped by process by default, grouping off, by pid and tid,
# unnamed code per object and per address, the grouped diff, dates in the diff's
# boxes. Screenshots go to build/test-output/ui/groupby-*.png.
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
node "$UI/groupby_test.mjs" "$URL" "$OUT" > "$T/groupby.out" 2> "$T/ui.err"
rc=$?
cat "$T/groupby.out"
FAILS=$((FAILS + $(grep -c '^FAIL ' "$T/groupby.out")))
[ $rc = 0 ] || fail ui_groupby_script "exit $rc: $(tail -5 "$T/ui.err")"
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_ui_groupby
else
	fail server_clean_exit_after_ui_groupby "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
