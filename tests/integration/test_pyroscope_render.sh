#!/usr/bin/env bash
# Pyroscope's HTTP API on hearth: bad input on each endpoint (/pyroscope/render,
# render-diff, labels, label-values) gets a 4xx with a message, and the ASan
# build exits cleanly after it. (The answers to good queries, against a known
# fixture on both backends: api_suite.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
get() { # path+query -> status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -G "$URL$1" "${@:2}"
}

# Bad input: 4xx with a message naming the problem.
bad() { # name, want status, message substring, path, curl args...
	local st
	st=$(get "$4" "${@:5}")
	if [ "$st" = "$2" ] && jq -r .error "$T/ans" 2> /dev/null | grep -qF -- "$3"; then
		pass "$1"
	else
		fail "$1" "$st $(cat "$T/ans")"
	fi
}
bad render_no_query 400 "missing 'query'" /pyroscope/render
bad render_bad_selector 400 "" /pyroscope/render --data-urlencode "query=$CPU{service_name=}"
bad render_bad_from 400 "from" /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode from=noon
bad render_bad_max_nodes 400 "max-nodes" /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode max-nodes=0
bad render_bad_format 400 "format" /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode format=pprof
bad render_diff_no_right 400 "missing 'rightQuery'" /pyroscope/render-diff --data-urlencode "leftQuery=$CPU{}"
bad render_diff_two_types 400 "different values" /pyroscope/render-diff --data-urlencode "leftQuery=$CPU{}" \
	--data-urlencode 'rightQuery=memory:inuse_objects:count:space:bytes{}'
bad label_values_no_label 400 "missing 'label'" /pyroscope/label-values
bad label_values_bad_query 400 "" /pyroscope/label-values --data-urlencode label=env --data-urlencode 'query={a'
bad labels_bad_until 400 "" /pyroscope/labels --data-urlencode until=tomorrow
bad pyroscope_unknown 404 "no such endpoint" /pyroscope/nope
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST "$URL/pyroscope/render")
[ "$st" = 405 ] && pass render_post_refused || fail render_post_refused "$st"

kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_render
else
	fail server_clean_exit_after_render "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
