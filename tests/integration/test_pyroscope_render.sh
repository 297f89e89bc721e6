#!/usr/bin/env bash
# Pyroscope's HTTP API on hearth: GET /pyroscope/render (flamebearer JSON),
# /pyroscope/render-diff, /pyroscope/labels and /pyroscope/label-values against
# a known fixture, checked with jq against hearth's own /api answers; and bad
# input on each endpoint: a 4xx with a message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

now=$(date +%s)
push() { # name (URL-encoded), from, until, body
	local st
	st=$(printf '%b' "$4" | curl -s -o "$T/push.out" -w '%{http_code}' --data-binary @- \
		"$URL/ingest?name=$1&from=$2&until=$3&sampleRate=100")
	[ "$st" = 200 ] || fail "fixture_push_$1" "$st $(cat "$T/push.out")"
}
# Before (t-200 s) and after (t-100 s): checkout got slower.
push 'shop%7Benv%3Dprod%7D' $((now - 200)) $((now - 190)) 'main;checkout 10\nmain;render 20\n'
push 'shop%7Benv%3Dprod%7D' $((now - 100)) $((now - 90)) 'main;checkout;db 30\nmain;render 25\n'
push 'api' $((now - 100)) $((now - 90)) 'main;serve 7\n'
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
from=$((now - 300))

get() { # path+query -> status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -G "$URL$1" "${@:2}"
}

# render: flamebearer of the typed query, numTicks the tree's total (ns), levels of 4.
st=$(get /pyroscope/render --data-urlencode "query=$CPU{service_name=\"shop\"}" \
	--data-urlencode "from=$from" --data-urlencode until=now)
cp "$T/ans" "$T/render.json"
own=$(curl -s -G "$URL/api/profile" --data-urlencode "query={service_name=\"shop\"}" \
	--data-urlencode format=tree --data-urlencode "from=$from" | jq .total)
if [ "$st" = 200 ] &&
	[ "$(jq -c '.flamebearer.names' "$T/render.json")" = '["total","main","render","checkout","db"]' ] &&
	[ "$(jq '.flamebearer.numTicks' "$T/render.json")" = $((own * 10000000)) ] &&
	[ "$(jq '.flamebearer.maxSelf' "$T/render.json")" = 450000000 ] &&
	[ "$(jq -c '.flamebearer.levels[0]' "$T/render.json")" = "[0,$((own * 10000000)),0,0]" ] &&
	[ "$(jq '[.flamebearer.levels[] | length % 4] | add' "$T/render.json")" = 0 ] &&
	[ "$(jq -r '.metadata.format, .metadata.units' "$T/render.json" | tr '\n' ' ')" = "single nanoseconds " ]; then
	pass render_flamebearer
else
	fail render_flamebearer "$st own=$own $(head -c 600 "$T/render.json")"
fi
# Level 2 is render (x 0, the larger) then checkout right after it (offset 0); db,
# alone on level 3 under checkout, starts at checkout's x: 450 ms from the left.
if [ "$(jq -c '.flamebearer.levels[2]' "$T/render.json")" = '[0,450000000,450000000,2,0,400000000,100000000,3]' ] &&
	[ "$(jq -c '.flamebearer.levels[3]' "$T/render.json")" = '[450000000,300000000,300000000,4]' ]; then
	pass render_levels_offsets
else
	fail render_levels_offsets "$(jq -c '.flamebearer.levels' "$T/render.json")"
fi
# timeline: totals per step summing to numTicks.
if [ "$(jq '[.timeline.samples[]] | add' "$T/render.json")" = "$(jq .flamebearer.numTicks "$T/render.json")" ] &&
	[ "$(jq '.timeline.durationDelta > 0 and .timeline.startTime > 0' "$T/render.json")" = true ]; then
	pass render_timeline
else
	fail render_timeline "$(jq -c .timeline "$T/render.json")"
fi
# hearth's own selector syntax works too (APP{...}: __name__), counting samples.
st=$(get /pyroscope/render --data-urlencode 'query=api{}' --data-urlencode "from=$from")
[ "$st" = 200 ] && [ "$(jq .flamebearer.numTicks "$T/ans")" = 7 ] &&
	[ "$(jq -r .metadata.units "$T/ans")" = samples ] && pass render_hearth_selector ||
	fail render_hearth_selector "$st $(head -c 300 "$T/ans")"
# maxNodes prunes, as /api/profile does.
st=$(get /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode "from=$from" \
	--data-urlencode max-nodes=2)
[ "$st" = 200 ] && [ "$(jq '[.flamebearer.levels[] | length / 4] | add' "$T/ans")" -le 2 ] &&
	pass render_max_nodes || fail render_max_nodes "$st $(head -c 300 "$T/ans")"

# render-diff: before vs after; 7 numbers per node, ticks per side.
st=$(get /pyroscope/render-diff --data-urlencode "leftQuery=$CPU{service_name=\"shop\"}" \
	--data-urlencode "leftFrom=$((now - 210))" --data-urlencode "leftUntil=$((now - 150))" \
	--data-urlencode "rightQuery=$CPU{service_name=\"shop\"}" \
	--data-urlencode "rightFrom=$((now - 150))" --data-urlencode "rightUntil=now")
if [ "$st" = 200 ] && [ "$(jq .leftTicks "$T/ans")" = 300000000 ] &&
	[ "$(jq .rightTicks "$T/ans")" = 550000000 ] &&
	[ "$(jq -r .metadata.format "$T/ans")" = double ] &&
	[ "$(jq '[.flamebearer.levels[] | length % 7] | add' "$T/ans")" = 0 ] &&
	[ "$(jq -c '.flamebearer.levels[0]' "$T/ans")" = '[0,300000000,0,0,550000000,0,0]' ]; then
	pass render_diff
else
	fail render_diff "$st $(head -c 600 "$T/ans")"
fi

# labels and label-values.
st=$(get /pyroscope/label-values --data-urlencode label=service_name --data-urlencode "from=$from")
[ "$st" = 200 ] && [ "$(jq -c . "$T/ans")" = '["api","shop"]' ] && pass label_values ||
	fail label_values "$st $(cat "$T/ans")"
st=$(get /pyroscope/label-values --data-urlencode label=env \
	--data-urlencode "query=$CPU{service_name=\"api\"}" --data-urlencode "from=$from")
[ "$st" = 200 ] && [ "$(jq -c . "$T/ans")" = '[]' ] && pass label_values_with_query ||
	fail label_values_with_query "$st $(cat "$T/ans")"
st=$(get /pyroscope/labels --data-urlencode "query=$CPU{}" --data-urlencode "from=$from")
[ "$st" = 200 ] && jq -e 'index("service_name") and index("__profile_type__") and index("env")' "$T/ans" > /dev/null &&
	pass labels || fail labels "$st $(cat "$T/ans")"

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
bad render_bad_from 400 "" /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode from=yesterday
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
