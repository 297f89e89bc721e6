#!/usr/bin/env bash
# The web UI behind --auth-token-file (issue 30, item 3) in headless Chromium
# (tests/ui/login_test.mjs): the login page takes the token once, the UI sends
# it, a 401 leads back to the login page. Screenshots go to build/test-output/ui/.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_prerequisites

tok="ui-login-$RANDOM$RANDOM"
echo "$tok" > "$T/token"
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 --auth-token-file "$T/token" &&
	URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
printf 'main;login_work;login_hot 70\nmain;login_work;login_cold 30\n' > "$T/in.folded"
now=$(date +%s)
st=$(http_status "$URL/ingest?name=loginapp&from=$((now - 60))&until=$now" "$T/ing" \
	-H "Authorization: Bearer $tok" --data-binary @"$T/in.folded")
[ "$st" = 200 ] || { fail ingest "$st: $(cat "$T/ing")"; finish; }
# the page itself needs no token; its data does
page=$(http_status "$URL/login.html" "$T/login.html")
api=$(http_status "$URL/api/labels" "$T/labels")
if [ "$page$api" = 200401 ] && grep -q 'id="token"' "$T/login.html"; then
	pass login_page_open_api_closed
else
	fail login_page_open_api_closed "login.html $page, /api/labels $api"
fi
node "$UI/login_test.mjs" "$URL" "$tok" "$OUT" 2> "$T/ui.err"
rc=$?
[ $rc = 0 ] || fail ui_login_script "exit $rc: $(tail -5 "$T/ui.err")"
finish
