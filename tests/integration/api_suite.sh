#!/usr/bin/env bash
# The HTTP API suite, one file for both storage backends: the same fixtures
# pushed in every ingest format (Pyroscope /ingest folded, lines, pprof raw and
# multipart; OTLP protobuf and JSON), then every query answered with the values
# the fixtures imply: series, label names and values, /api/profile as
# tree/topjson/top/folded/pprof/svg, diff, timeline, regex selectors,
# Pyroscope's render/render-diff/labels/label-values, Grafana's Connect API
# (querier.v1, an outside Connect client in binary and JSON, and the wire with
# curl), /debug/pprof/profile through go tool pprof, retention, and a server
# restarted on the same store answering from what is stored.
#
#   api_suite.sh embedded     hearth server --data DIR
#   api_suite.sh clickhouse   hearth server --store clickhouse://... (a private
#                             clickhouse-server, clickhouse_lib.sh)
#   (or HEARTH_TEST_STORE=embedded|clickhouse; test_api_embedded.sh and
#   test_api_clickhouse.sh are the runner's two entries)
#
# On ClickHouse the profiles go through two hearth servers sharing one database
# (split between them) and to an embedded-store server as well, and every query
# the suite asserts is also answered the same by all three (the "xcheck" list).
# The server under test is the ASan/UBSan build, which must exit cleanly.
# Where the backends differ is said once, in "Differences" below.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
STORE=${1:-${HEARTH_TEST_STORE:-embedded}}
case $STORE in
embedded) ;;
clickhouse) . "$(dirname "$0")/clickhouse_lib.sh" ;;
*)
	fail api_suite_backend "unknown backend '$STORE' (embedded or clickhouse)"
	finish
	;;
esac
command -v jq > /dev/null || { fail api_prerequisites "jq is missing"; finish; }
go_env

# ---- Differences between the backends (docs/clickhouse.md, "Differences") ----
# 1. Timeline steps: ClickHouse counts a profile in the step its time falls in,
#    the embedded store where its 1-minute rollup starts (steps >= 1 min). The
#    fixtures' times and the query ranges are minute-aligned, so both answer
#    the same and the suite asserts one value for both.
# 2. /metrics' store gauges (bytes, rows, distinct stacks and series) are
#    per-backend estimates: not asserted here (test_server_ingest.sh asserts the
#    embedded counters).
# 3. Retention: the embedded store deletes chunks, ClickHouse drops whole day
#    partitions; both drop a profile 10 days old at the first maintenance tick
#    (the suite checks that through the API on both, and on ClickHouse that the
#    day's partitions are gone).
# 4. Only on ClickHouse: the cross-check with an embedded server, two servers on
#    one database, rows in ClickHouse, `hearth run --store`, and --store's
#    refusals (bad URL, unknown schema version). These are about the ClickHouse
#    backend itself, so they have no embedded counterpart.
on_clickhouse() { [ "$STORE" = clickhouse ]; }
# Known bugs are not differences: the suite asserts the right answer on both
# backends. A check listed here for the backend under test prints SKIP naming
# the bug while it fails, and FAIL once it passes, so the entry goes with the fix.
declare -A KNOWN_BUG=()
pass() {
	local name=${1%% *}
	if [ -n "${KNOWN_BUG[$name]+x}" ]; then
		echo "FAIL $name: passes on $STORE now: remove its KNOWN_BUG entry"
		FAILS=$((FAILS + 1))
	else
		echo "PASS $1"
	fi
}
fail() {
	if [ -n "${KNOWN_BUG[$1]+x}" ]; then
		skip "$1" "known bug on $STORE: ${KNOWN_BUG[$1]} (got: $(cut -c1-200 <<< "$2"))"
	else
		echo "FAIL $1: $2"
		FAILS=$((FAILS + 1))
	fi
}

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
if on_clickhouse; then
	start_clickhouse start
	CH=${CH_URLS[0]}
	STORE_ARGS=(--store "$CH")
else
	STORE_ARGS=(--data "$T/data")
fi
HEARTH=$SERVER_BIN start_hearth "$T/s.log" server "${STORE_ARGS[@]}" --listen 127.0.0.1:0 &&
	S=$HURL SPID_S=$SPID || { fail "server_start_$STORE" "$(cat "$T/s.log")"; finish; }
S2=$S
if on_clickhouse; then
	start_hearth "$T/s2.log" server --store "$CH" --listen 127.0.0.1:0 && S2=$HURL ||
		{ fail clickhouse_server2_start "$(cat "$T/s2.log")"; finish; }
	start_hearth "$T/e.log" server --data "$T/edata" --listen 127.0.0.1:0 && E=$HURL ||
		{ fail embedded_reference_start "$(cat "$T/e.log")"; finish; }
fi
pass "servers_start_$STORE ($S)"

# Minute-aligned times (difference 1). Each section has its own window, so its
# answers hold only its own fixture.
NOW=$(($(date +%s) / 60 * 60))
A=$((NOW - 1800))  # core: ingest formats, /api queries
P=$((NOW - 2700))  # Pyroscope render
O=$((NOW - 3300))  # OTLP
X=$((NOW - 3900))  # svg, topjson, modules
C=$((NOW - 240))   # Connect: the newest fixture (GetProfileStats' newest <= end)
OLD=$((NOW - 10 * 86400)) # past retention (7 d)

# send VIA PATH FILE [curl args]: POST FILE to server VIA (S or S2) and, on
# ClickHouse, to the embedded reference E; every answer must be 200.
send() {
	local via=$1 path=$2 file=$3 a b=200 name
	shift 3
	name=$(echo "${path#/ingest\?}" | tr -c 'a-zA-Z0-9' _ | cut -c1-50)
	a=$(http_status "${!via}$path" "$T/send.s" --data-binary @"$file" "$@")
	on_clickhouse && b=$(http_status "$E$path" "$T/send.e" --data-binary @"$file" "$@")
	if [ "$a$b" = 200200 ]; then
		pass "ingest_$name"
	else
		fail "ingest_$name" "$STORE answered $a $(head -c 300 "$T/send.s"); embedded $b $(head -c 300 "$T/send.e" 2> /dev/null)"
	fi
}
# send_multipart VIA PATH FILE: the same with the profile as a multipart form field
send_multipart() {
	local via=$1 path=$2 file=$3 a b=200
	a=$(http_status "${!via}$path" "$T/send.s" -F "profile=@$file")
	on_clickhouse && b=$(http_status "$E$path" "$T/send.e" -F "profile=@$file")
	[ "$a$b" = 200200 ] && pass "ingest_multipart" ||
		fail ingest_multipart "$STORE answered $a $(cat "$T/send.s"); embedded $b"
}
get() { curl -s --max-time 30 "$S$1"; }
# want NAME GOT EXPECTED: an exact value.
want() {
	if [ "$2" = "$3" ]; then pass "$1 ($(cut -c1-80 <<< "$3"))"; else fail "$1" "got '$2', want '$3'"; fi
}
# xcheck NAME PATH NORMALIZER: on ClickHouse, the three servers answer PATH the
# same (clickhouse_lib.sh's `same`), checked at the end, when all data is in.
XCHECK=()
xcheck() { XCHECK+=("$1|$2|$3"); }

# ---- a profile past retention, pushed first: gone after the first tick ----
printf 'main;ancient 5\n' > "$T/old.folded"
st=$(http_status "$S/ingest?name=ancient&from=$OLD&until=$((OLD + 10))" "$T/old.out" --data-binary @"$T/old.folded")
old_total() { get "/api/profile?format=tree&query=ancient&from=$((OLD - 60))&until=$((OLD + 60))" | jq -r .total; }
[ "$st" = 200 ] && [ "$(old_total)" = 5 ] && pass old_profile_stored_before_retention_tick ||
	fail old_profile_stored_before_retention_tick "status $st, total $(old_total)"

# ---- core: every /ingest format, then /api ----
GOPROF=$HEARTH_ROOT/tests/fuzz/corpus/fuzz_pprof/go_cpu.pb.gz
W1=$((A + 300)) W2=$((A + 600))
printf 'main;serve;parse 70\nmain;serve;render 40\nmain;gc 13\n' > "$T/web1.folded"
printf 'main;serve;parse 20\nmain;serve;compress 9\n' > "$T/web2.folded"
printf 'main;query;scan 55\nmain;query;sort 31\nmain;flush 6\n' > "$T/db.folded"
printf 'a;b\na;b\na;c\nz\n' > "$T/in.lines"
send S "/ingest?name=web%7Benv%3Dprod%7D&from=$W1&until=$((W1 + 10))&sampleRate=100&spyName=curl" "$T/web1.folded"
send S2 "/ingest?name=web%7Benv%3Dcanary%7D&from=$W2&until=$((W2 + 10))&sampleRate=100" "$T/web2.folded"
send S2 "/ingest?name=db%7Benv%3Dprod%7D&from=$W2&until=$((W2 + 10))&sampleRate=100" "$T/db.folded"
send S "/ingest?name=lineapp&format=lines&from=$W1&until=$((W1 + 10))" "$T/in.lines"
send S2 "/ingest?name=goapp&format=pprof&from=$W2&until=$((W2 + 10))" "$GOPROF"
send_multipart S "/ingest?name=gomulti&format=pprof&from=$W1&until=$((W1 + 10))" "$GOPROF"

R="from=$A&until=$((A + 900))"
want series_count "$(get "/api/series?$R" | jq length)" 6
want series_web_prod "$(get "/api/series?$R" | jq -c '[.[] | select(.labels.__name__ == "web") | .labels.env] | sort')" '["canary","prod"]'
xcheck series "/api/series?$R" norm_json
want labels "$(get "/api/labels?$R" | jq -c '[.[] | select(. == "env" or . == "__name__")] | sort')" '["__name__","env"]'
xcheck labels "/api/labels?$R" norm_json
want env_values "$(get "/api/label/env/values?$R" | jq -c .)" '["canary","prod"]'
xcheck env_values "/api/label/env/values?$R" norm_json
want name_values "$(get "/api/label/__name__/values?$R" | jq -c .)" '["db","goapp","gomulti","lineapp","web"]'
xcheck names "/api/label/__name__/values?$R" norm_json

# folded back with the pushed totals, per series and per format
folded_total() { awk '{ s += $NF } END { print s + 0 }'; }
get "/api/profile?format=folded&query=%7Benv%3D%22prod%22%2C__name__%3D%22web%22%7D&$R" > "$T/web.folded"
want folded_total "$(folded_total < "$T/web.folded")" 123
want folded_stack "$(grep -cx 'main;serve;parse 70' "$T/web.folded")" 1
xcheck folded "/api/profile?format=folded&$R" sorted
get "/api/profile?format=folded&query=lineapp%7B%7D&$R" | sort > "$T/lines.folded"
want lines_ingest "$(tr '\n' '|' < "$T/lines.folded")" 'a;b 2|a;c 1|z 1|'
# pprof: a real Go CPU profile, raw body and multipart; totals as go tool pprof sees them
gowant=$(go tool pprof -top "$GOPROF" 2> /dev/null | grep -oE 'of [0-9.]+[a-z]* total' | head -1)
for app in goapp gomulti; do
	curl -s -o "$T/$app.pb.gz" "$S/api/profile?format=pprof&query=$app%7B%7D&$R"
	got=$(go tool pprof -top "$T/$app.pb.gz" 2> /dev/null | grep -oE 'of [0-9.]+[a-z]* total' | head -1)
	[ -n "$gowant" ] && [ "$got" = "$gowant" ] && pass "pprof_${app}_same_totals ($got)" ||
		fail "pprof_${app}_same_totals" "want '$gowant' got '$got'"
done
xcheck pprof "/api/profile?format=pprof&query=goapp&$R" pprof_top
xcheck pprof_labelled "/api/profile?format=pprof&$R" pprof_top

# trees: totals, the regex selector, maxNodes, the top rows the tree carries
want tree_web_total "$(get "/api/profile?format=tree&query=web&$R" | jq .total)" 152
want tree_web_children "$(get "/api/profile?format=tree&query=web&$R" |
	jq -c '[.tree.children[0].children[] | [.name, .total]] | sort')" '[["gc",13],["serve",139]]'
get "/api/profile?format=tree&query=web&topRows=5&$R" > "$T/webtop.json"
want tree_top_rows "$(jq -c '[.top.rows[] | [.name, .self]]' "$T/webtop.json")" \
	'[["parse",90],["render",40],["gc",13],["compress",9],["main",0]]'
xcheck tree_web "/api/profile?format=tree&query=web&topRows=5&$R" norm_json
REGEX='%7B__name__%3D~%22web%7Cdb%22%2Cenv!%3D%22canary%22%7D'
want tree_regex_total "$(get "/api/profile?format=tree&query=$REGEX&$R" | jq .total)" 215
xcheck tree_regex "/api/profile?format=tree&query=$REGEX&$R" norm_json
want tree_all_total "$(get "/api/profile?format=tree&query=%7B__name__%3D~%22web%7Cdb%7Clineapp%22%7D&$R" | jq .total)" 248
xcheck tree_all "/api/profile?format=tree&$R" norm_json
get "/api/profile?format=tree&query=goapp&maxNodes=30&$R" > "$T/go30.json"
want tree_go_max_nodes "$(jq '[.. | objects | select(has("total"))] | length <= 31' "$T/go30.json")" true
want tree_go_samples "$(jq -c '[.unit, .total]' "$T/go30.json")" '["samples",42]'
xcheck tree_go_nanos "/api/profile?format=tree&query=goapp&maxNodes=30&$R" norm_json
want topjson "$(get "/api/profile?format=topjson&query=db&$R" | jq -c '[.total, (.rows[:3][] | [.name, .self, .total])]')" \
	'[92,["scan",55,55],["sort",31,31],["flush",6,6]]'
xcheck topjson "/api/profile?format=topjson&$R" norm_json
get "/api/profile?format=top&query=db&$R" > "$T/db.top"
want top_text_rows "$(awk '$NF == "scan" || $NF == "sort" || $NF == "flush" { print $NF }' "$T/db.top" | tr '\n' ' ')" 'scan sort flush '
xcheck top_text "/api/profile?format=top&query=db&$R" sorted

# diff and timelines
DIFF="/api/diff?left=web%7Benv%3D%22prod%22%7D&right=web%7Benv%3D%22canary%22%7D&$R"
want diff_sides "$(get "$DIFF" | jq -c '[.left, .right]')" '[123,29]'
xcheck diff "$DIFF" norm_json
want diff_two_ranges "$(get "/api/diff?left=web%7B%7D&right=lineapp%7B%7D&leftfrom=$A&leftuntil=$((A + 900))&rightfrom=$A&rightuntil=$((A + 900))" |
	jq -c '[.left, .right]')" '[152,4]'
TL="/api/timeline?step=60s&groupBy=__name__&$R"
want timeline_by_name "$(get "$TL" | jq -c '[.groups[] | select(.group == "web" or .group == "db") | [.group, (.values | add), (.values | length)]] | sort')" \
	'[["db",92,15],["web",152,15]]'
want timeline_steps "$(get "$TL" | jq -c '[.groups[] | select(.group == "web") | .values | to_entries[] | select(.value > 0) | [.key, .value]]')" '[[5,123],[10,29]]'
xcheck timeline_by_name "$TL" norm_json
want timeline_by_env "$(get "/api/timeline?groupBy=env&query=%7Benv%3D~%22.%2B%22%7D&$R" | jq -c '[.groups[] | [.group, (.values | add)]] | sort')" \
	'[["canary",29],["prod",215]]'
xcheck timeline_by_env "/api/timeline?groupBy=env&query=%7Benv%3D~%22.%2B%22%7D&$R" norm_json
xcheck timeline_all "/api/timeline?step=10s&$R" norm_json

# ---- Pyroscope's HTTP API: /pyroscope/render, render-diff, labels, label-values ----
push_text() { # via, name (URL-encoded), from, until, body
	printf '%b' "$5" > "$T/body.folded"
	send "$1" "/ingest?name=$2&from=$3&until=$4&sampleRate=100" "$T/body.folded"
}
# Before (P-200) and after (P-100): checkout got slower.
push_text S 'shop%7Benv%3Dprod%7D' $((P - 200)) $((P - 190)) 'main;checkout 10\nmain;render 20\n'
push_text S2 'shop%7Benv%3Dprod%7D' $((P - 100)) $((P - 90)) 'main;checkout;db 30\nmain;render 25\n'
push_text S 'api' $((P - 100)) $((P - 90)) 'main;serve 7\n'
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
pget() { # path, curl -G args...: status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -G "$S$1" "${@:2}"
}
st=$(pget /pyroscope/render --data-urlencode "query=$CPU{service_name=\"shop\"}" \
	--data-urlencode "from=$((P - 300))" --data-urlencode "until=$P")
cp "$T/ans" "$T/render.json"
if [ "$st" = 200 ] &&
	[ "$(jq -c '.flamebearer.names' "$T/render.json")" = '["total","main","render","checkout","db"]' ] &&
	[ "$(jq '.flamebearer.numTicks' "$T/render.json")" = 850000000 ] &&
	[ "$(jq '.flamebearer.maxSelf' "$T/render.json")" = 450000000 ] &&
	[ "$(jq -c '.flamebearer.levels[0]' "$T/render.json")" = "[0,850000000,0,0]" ] &&
	[ "$(jq '[.flamebearer.levels[] | length % 4] | add' "$T/render.json")" = 0 ] &&
	[ "$(jq -r '.metadata.format, .metadata.units' "$T/render.json" | tr '\n' ' ')" = "single nanoseconds " ]; then
	pass render_flamebearer
else
	fail render_flamebearer "$st $(head -c 600 "$T/render.json")"
fi
# Level 2 is render (x 0, the larger) then checkout right after it (offset 0); db,
# alone on level 3 under checkout, starts at checkout's x: 450 ms from the left.
if [ "$(jq -c '.flamebearer.levels[2]' "$T/render.json")" = '[0,450000000,450000000,2,0,400000000,100000000,3]' ] &&
	[ "$(jq -c '.flamebearer.levels[3]' "$T/render.json")" = '[450000000,300000000,300000000,4]' ]; then
	pass render_levels_offsets
else
	fail render_levels_offsets "$(jq -c '.flamebearer.levels' "$T/render.json")"
fi
# timeline: totals per step summing to numTicks
if [ "$(jq '[.timeline.samples[]] | add' "$T/render.json")" = 850000000 ] &&
	[ "$(jq '.timeline.durationDelta > 0 and .timeline.startTime > 0' "$T/render.json")" = true ]; then
	pass render_timeline
else
	fail render_timeline "$(jq -c .timeline "$T/render.json")"
fi
# hearth's own selector syntax works too (APP{...}: __name__), counting samples
st=$(pget /pyroscope/render --data-urlencode 'query=api{}' --data-urlencode "from=$((P - 300))" --data-urlencode "until=$P")
[ "$st" = 200 ] && [ "$(jq .flamebearer.numTicks "$T/ans")" = 7 ] &&
	[ "$(jq -r .metadata.units "$T/ans")" = samples ] && pass render_hearth_selector ||
	fail render_hearth_selector "$st $(head -c 300 "$T/ans")"
st=$(pget /pyroscope/render --data-urlencode "query=$CPU{}" --data-urlencode "from=$((P - 300))" \
	--data-urlencode "until=$P" --data-urlencode max-nodes=2)
[ "$st" = 200 ] && [ "$(jq '[.flamebearer.levels[] | length / 4] | add' "$T/ans")" -le 2 ] &&
	pass render_max_nodes || fail render_max_nodes "$st $(head -c 300 "$T/ans")"
st=$(pget /pyroscope/render-diff --data-urlencode "leftQuery=$CPU{service_name=\"shop\"}" \
	--data-urlencode "leftFrom=$((P - 210))" --data-urlencode "leftUntil=$((P - 150))" \
	--data-urlencode "rightQuery=$CPU{service_name=\"shop\"}" \
	--data-urlencode "rightFrom=$((P - 150))" --data-urlencode "rightUntil=$P")
if [ "$st" = 200 ] && [ "$(jq .leftTicks "$T/ans")" = 300000000 ] &&
	[ "$(jq .rightTicks "$T/ans")" = 550000000 ] &&
	[ "$(jq -r .metadata.format "$T/ans")" = double ] &&
	[ "$(jq '[.flamebearer.levels[] | length % 7] | add' "$T/ans")" = 0 ] &&
	[ "$(jq -c '.flamebearer.levels[0]' "$T/ans")" = '[0,300000000,0,0,550000000,0,0]' ]; then
	pass render_diff
else
	fail render_diff "$st $(head -c 600 "$T/ans")"
fi
st=$(pget /pyroscope/label-values --data-urlencode label=service_name --data-urlencode "from=$((P - 300))" --data-urlencode "until=$P")
[ "$st" = 200 ] && [ "$(jq -c . "$T/ans")" = '["api","shop"]' ] && pass pyroscope_label_values ||
	fail pyroscope_label_values "$st $(cat "$T/ans")"
st=$(pget /pyroscope/label-values --data-urlencode label=env --data-urlencode "until=$P" \
	--data-urlencode "query=$CPU{service_name=\"api\"}" --data-urlencode "from=$((P - 300))")
[ "$st" = 200 ] && [ "$(jq -c . "$T/ans")" = '[]' ] && pass pyroscope_label_values_with_query ||
	fail pyroscope_label_values_with_query "$st $(cat "$T/ans")"
st=$(pget /pyroscope/labels --data-urlencode "query=$CPU{}" --data-urlencode "from=$((P - 300))" --data-urlencode "until=$P")
[ "$st" = 200 ] && jq -e 'index("service_name") and index("__profile_type__") and index("env")' "$T/ans" > /dev/null &&
	pass pyroscope_labels || fail pyroscope_labels "$st $(cat "$T/ans")"
xcheck pyroscope_render "/pyroscope/render?query=$CPU%7B%7D&from=$((P - 300))&until=$P" norm_json

# ---- OTLP profiles: protobuf (Debian's protoc encodes the fixture) and JSON ----
FX=$HEARTH_ROOT/tests/fixtures/otlp
REQ=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
if command -v protoc > /dev/null; then
	sed -e "s/@TIME@/${O}000000000/g" "$FX/cpu.txtpb" |
		protoc -I "$HEARTH_ROOT/proto/otlp" --encode="$REQ" profiles_service.proto > "$T/cpu.bin"
	send S "/v1development/profiles" "$T/cpu.bin" -H 'Content-Type: application/x-protobuf'
else
	fail otlp_protoc "protoc is not installed (protobuf-compiler)"
fi
OR="from=$((O - 300))&until=$((O + 300))"
ofolded() { curl -s --max-time 30 -G "$S/api/profile?$OR" --data-urlencode "query=$1" --data-urlencode format=folded; }
ofolded 'shop{}' | sort > "$T/otlp.folded"
want otlp_protobuf_stacks "$(tr '\n' '|' < "$T/otlp.folded")" 'shopd;main;work;cold 10|shopd;main;work;hot 30|'
# the resource attributes as labels (docs/api.md, "OTLP profiles"); the type is the
# series' profileType
want otlp_resource_labels "$(get "/api/series?$OR" | jq -c '[.[] | select(.labels.service_name == "shop") | .labels + {"__profile_type__": .profileType}] | sort_by(.comm // "")')" \
	'[{"__name__":"shop","container":"c0ffee","host":"web-1","process":"shopd","service_name":"shop","__profile_type__":"process_cpu:cpu:nanoseconds:cpu:nanoseconds"},{"__name__":"shop","comm":"worker-1","container":"c0ffee","host":"web-1","process":"shopd","service_name":"shop","__profile_type__":"process_cpu:cpu:nanoseconds:cpu:nanoseconds"}]'
want otlp_label_selector "$(ofolded '{service_name="shop",container="c0ffee",host="web-1",process="shopd"}' | folded_total)/$(ofolded '{service_name="shop",comm="worker-1"}' | folded_total)" 40/30
# samples/count with a 10 ms period is 10,000,000 ns a sample
curl -s --max-time 30 -G "$S/api/profile?$OR" --data-urlencode 'query=shop{}' --data-urlencode format=top > "$T/otlp.top"
grep -qE '(400ms|0\.4s|400000000)' "$T/otlp.top" && pass otlp_cpu_time_from_period ||
	fail otlp_cpu_time_from_period "$(head -5 "$T/otlp.top")"
sed -e "s/@TIME@/${O}000000000/g" "$FX/cpu.json" | gzip -c > "$T/cpu.json.gz"
send S2 "/v1development/profiles" "$T/cpu.json.gz" -H 'Content-Type: application/json' -H 'Content-Encoding: gzip'
ofolded 'shopjson{pid="4242",container="c0ffee"}' | sort > "$T/otlpjson.folded"
want otlp_json_gzip "$(tr '\n' '|' < "$T/otlpjson.folded")" 'main;work;cold 10|main;work;hot 30|'
xcheck otlp_series "/api/series?$OR" norm_json
xcheck otlp_folded "/api/profile?format=folded&$OR" sorted

# ---- what the web UI asks: svg, topjson, the tree's top rows, modules ----
printf 'main;work;hot 70\nmain;work;cold 25\nmain;idle 5\n' > "$T/webapp.folded"
send S "/ingest?name=webapp&from=$((X - 60))&until=$((X - 50))" "$T/webapp.folded"
send S2 "/ingest?name=goweb&format=pprof&from=$((X - 60))&until=$((X - 50))" "$GOPROF"
Q="query=webapp%7B%7D&from=$((X - 120))&until=$X"
st=$(http_status "$S/api/profile?format=svg&$Q" "$T/p.svg" -D "$T/hdr.svg")
names=$(grep -oE 'data-name="[^"]*"' "$T/p.svg" | sort -u | tr '\n' ' ')
if [ "$st" = 200 ] && grep -qi '^content-type: image/svg+xml' "$T/hdr.svg" &&
	xmllint --noout "$T/p.svg" 2> "$T/xmllint" &&
	for n in main work hot cold idle; do grep -q "data-name=\"$n\"" "$T/p.svg" || exit 1; done; then
	pass "svg_profile ($names)"
else
	fail svg_profile "status $st, names: $names $(head -c 300 "$T/xmllint")"
fi
# topjson: the web UI's top table, the text top's rows (self = pprof's flat) as JSON
curl -s -D "$T/hdr.top" -o "$T/top.json" "$S/api/profile?format=topjson&$Q"
want topjson_rows "$(jq -c '[.total, (.rows[] | [.name, .self, .total])]' "$T/top.json")" \
	'[100,["hot",70,70],["cold",25,25],["idle",5,5],["main",0,100],["work",0,95]]'
want topjson_content_type "$(awk 'tolower($1) == "content-type:" { sub(/\r$/, ""); print $2 }' "$T/hdr.top")" application/json
want tree_with_top_rows "$(get "/api/profile?format=tree&topRows=2&$Q" | jq -c '[.total, .tree.total, (.top.rows[] | [.name, .self, .total])]')" \
	'[100,100,["hot",70,70],["cold",25,25]]'
get "/api/profile?format=tree&maxNodes=100000&$Q" > "$T/tree100k"
want max_nodes_100000_accepted "$(jq -r .total "$T/tree100k")" 100
want diff_max_nodes_100000 "$(get "/api/diff?left=webapp%7B%7D&right=webapp%7B%7D&leftfrom=$((X - 120))&leftuntil=$X&rightfrom=$((X - 120))&rightuntil=$X&maxNodes=100000" | jq -r .left)" 100
# a pprof with mappings names each frame's binary; text profiles have no module key
get "/api/profile?format=tree&query=goweb%7B%7D&from=$((X - 120))&until=$X" > "$T/gotree"
mods=$(jq -r '[.. | objects | .module? // empty] | unique | join(",")' "$T/gotree" 2> /dev/null)
if [ -n "$mods" ] && [ "$(jq -r '.tree | has("module")' "$T/gotree")" = false ] && ! grep -q / <<< "$mods"; then
	pass "tree_modules ($mods)"
else
	fail tree_modules "modules '$mods': $(head -c 300 "$T/gotree")"
fi
grep -q '"module"' "$T/tree100k" && fail tree_no_module_when_unknown "$(head -c 300 "$T/tree100k")" ||
	pass tree_no_module_when_unknown
xcheck web_topjson "/api/profile?format=topjson&$Q" norm_json
xcheck web_modules "/api/profile?format=tree&query=goweb%7B%7D&from=$((X - 120))&until=$X" norm_json

# ---- processes apart (issue 30): pid/tid in the stack, groupBy, modules, unnamed code ----
# tests/clients/task_pprof.py: what the agent pushes, every stack ending with its task
# location (pid 100: 8 samples, pid 200: 9); "main" is in two binaries.
K=$((X - 300))
python3 "$HEARTH_ROOT/tests/clients/task_pprof.py" > "$T/task.pb"
send S "/ingest?name=tasks&format=pprof&from=$K&until=$((K + 10))" "$T/task.pb"
KR="query=tasks%7B%7D&from=$((K - 60))&until=$((K + 60))"
kq() { # selector, extra args: the tree's total
	curl -s -G "$S/api/profile" --data-urlencode "query=tasks{$1}" -d format=tree \
		-d from=$((K - 60)) -d until=$((K + 60)) | jq -c .total
}
get "/api/profile?format=tree&$KR" > "$T/ktree"
want task_location_stripped "$(jq -c '[.total, [.tree.children[] | .name]]' "$T/ktree")" '[17,["main"]]'
want task_no_series_per_pid "$(get "/api/series?$KR" | jq -c '[.[].labels | has("pid"), .process]')" '[false,"svc"]'
want task_filter_pid "$(kq 'pid="100"'),$(kq 'pid="200"'),$(kq 'tid="201"'),$(kq 'pid=~"1.."'),$(kq 'pid!="100"')" 8,9,9,8,9
want group_by_pid_tree "$(get "/api/profile?format=tree&groupBy=pid&$KR" | jq -c '[.tree.children[] | [.name, .total, (.children | map([.name, .module]))]] | sort')" \
	'[["pid=100",8,[["main","app"]]],["pid=200",9,[["main","other"]]]]'
want group_by_label_tree "$(get "/api/profile?format=tree&groupBy=process&$KR" | jq -c '[.tree.children[] | [.name, .total]]')" '[["process=svc",17]]'
want group_by_top "$(get "/api/profile?format=topjson&groupBy=tid&$KR" | jq -c '[.rows[] | select(.name | startswith("tid=")) | [.name, .total]] | sort')" \
	'[["tid=101",8],["tid=201",9]]'
want group_by_diff "$(get "/api/diff?left=tasks%7B%7D&right=tasks%7Bpid%3D%22200%22%7D&leftfrom=$((K - 60))&leftuntil=$((K + 60))&rightfrom=$((K - 60))&rightuntil=$((K + 60))&groupBy=pid" | jq -c '[.left, .right, ([.tree.children[] | [.name, .total]] | sort)]')" \
	'[17,9,[["pid=100",[8,0]],["pid=200",[9,9]]]]'
want module_not_borrowed "$(jq -c '[.tree.children[] | [.name, has("module")]]' "$T/ktree")" '[["main",false]]'
want unnamed_per_object "$(jq -c '[.. | objects | select(.name? // "" | startswith("libfoo")) | [.name, .total]]' "$T/ktree")" '[["libfoo.so.1 [no symbols]",10]]'
want unnamed_addresses "$(get "/api/profile?format=topjson&unnamed=addresses&$KR" | jq -c '[.rows[] | select(.name | startswith("libfoo")) | [.name, .self]] | sort')" \
	'[["libfoo.so.1+0x1f0",3],["libfoo.so.1+0x2a0",7]]'
want unnamed_bad_value "$(http_status "$S/api/profile?format=tree&unnamed=some&$KR" "$T/kbad")" 400
xcheck group_by_pid "/api/profile?format=tree&groupBy=pid&$KR" norm_json
# the thread's name (comm) is the task location's function: filter and group by it
want task_filter_comm "$(kq 'comm="other-w"'),$(kq 'comm=~"app-.*"'),$(kq 'comm="nope"')" 9,8,0
want group_by_comm_tree "$(get "/api/profile?format=tree&groupBy=comm&$KR" | jq -c '[.tree.children[] | [.name, .total]] | sort')" \
	'[["comm=app-main",8],["comm=other-w",9]]'
# every output merged as a profile (query_profile: folded, svg, top, pprof, hearth
# query, Connect's SelectMergeProfile, /debug/pprof/profile?query=) strips the task
# frame and applies pid/tid/comm matchers; pprof carries the task as the sample
# labels pid and tid (numbers, as hearth record writes them) and comm
kp() { # selector, format
	curl -s -G "$S/api/profile" --data-urlencode "query=tasks{$1}" -d "format=$2" \
		-d from=$((K - 60)) -d until=$((K + 60))
}
want task_stripped_folded "$(kp '' folded | sort | paste -sd'|')" 'svc;main;libfoo.so.1 [no symbols] 10|svc;main;work 7'
want task_filter_folded "$(kp 'comm="other-w"' folded | sort | paste -sd'|')" 'svc;main;libfoo.so.1 [no symbols] 7|svc;main;work 2'
want task_filter_pid_folded "$(kp 'pid="100",tid="101"' folded | sort | paste -sd'|')" 'svc;main;libfoo.so.1 [no symbols] 3|svc;main;work 5'
kp 'pid=~".+"' svg > "$T/task.svg"
grep -q '>main' "$T/task.svg" && ! grep -q 'task\]' "$T/task.svg" && pass task_stripped_svg ||
	fail task_stripped_svg "$(grep -o 'task[^<]*' "$T/task.svg" | head -3)"
kp '' top > "$T/task.top"
grep -q main "$T/task.top" && ! grep -q 'task\]' "$T/task.top" && pass task_stripped_top ||
	fail task_stripped_top "$(cat "$T/task.top")"
kp '' pprof > "$T/task.pb.gz"
gtop() { go tool pprof -sample_index=0 "$@" -top "$T/task.pb.gz" 2> /dev/null | grep -oE 'accounting for [0-9]+,' | grep -oE '[0-9]+'; }
want task_pprof_tagfocus "$(gtop),$(gtop -tagfocus=pid=100),$(gtop -tagfocus=tid=201),$(gtop -tagfocus=comm=other-w)" 17,8,9,9
want task_pprof_no_task_frame "$(go tool pprof -raw "$T/task.pb.gz" 2> /dev/null | grep -c 'task\]')" 0
want task_pprof_filtered "$(kp 'pid="200"' pprof > "$T/task200.pb.gz" && go tool pprof -sample_index=0 -top "$T/task200.pb.gz" 2> /dev/null | grep -oE 'accounting for [0-9]+,')" 'accounting for 9,'
"$HEARTH" query --server "$S" --from $((K - 60)) --until $((K + 60)) --format folded 'tasks{tid="101"}' > "$T/task.cli" 2>&1
want task_cli_folded "$(sort "$T/task.cli" | paste -sd'|')" 'svc;main;libfoo.so.1 [no symbols] 3|svc;main;work 5'
xcheck task_folded "/api/profile?format=folded&$KR" sorted
# the timeline and one function's series read the stacks when pid/tid/comm is named
ktl() { # selector, groupBy: [group, sum] per group, in K's one-minute step
	curl -s -G "$S/api/timeline" --data-urlencode "query=tasks{$1}" -d "groupBy=$2" -d step=60s \
		-d from=$((K - 60)) -d until=$((K + 60)) | jq -c '[.groups[] | [.group, (.values | add)]] | sort'
}
want timeline_task_filter "$(ktl 'pid="100"' ''),$(ktl 'comm="other-w"' ''),$(ktl 'tid!="101"' process)" \
	'[["",8]],[["",9]],[["svc",9]]'
want timeline_group_by_task "$(ktl '' pid),$(ktl '' tid),$(ktl 'pid=~".*"' comm)" \
	'[["100",8],["200",9]],[["101",8],["201",9]],[["app-main",8],["other-w",9]]'
want timeline_whole "$(ktl '' '')" '[["",17]]'
kfs() { # selector, function: [sum of values, sum of totals]
	curl -s -G "$S/api/function-series" --data-urlencode "query=tasks{$1}" -d "function=$2" -d step=60s \
		-d from=$((K - 60)) -d until=$((K + 60)) | jq -c '[(.values | add), (.totals | add)]'
}
want function_series_task "$(kfs '' work),$(kfs 'pid="200"' work),$(kfs 'comm="app-main"' main)" '[7,17],[2,9],[8,8]'
xcheck timeline_group_by_pid "/api/timeline?groupBy=pid&step=60s&$KR" norm_json
xcheck function_series_pid "/api/function-series?function=work&step=60s&query=tasks%7Bpid%3D%22200%22%7D&from=$((K - 60))&until=$((K + 60))" norm_json
xcheck task_folded_comm "/api/profile?format=folded&query=tasks%7Bcomm%3D%22app-main%22%7D&from=$((K - 60))&until=$((K + 60))" sorted

# ---- Grafana's Connect API (querier.v1) ----
# An outside client (tests/clients: @connectrpc/connect-node, code generated here
# from proto/ by @bufbuild/protoc-gen-es with Debian's protoc), binary and JSON.
push_text S 'shop%7Benv%3Dprod%7D' $((C - 120)) $((C - 110)) 'main;checkout;db 30\nmain;checkout 10\nmain;render 20\n'
push_text S2 'shop%7Benv%3Ddev%7D' $((C - 120)) $((C - 110)) 'main;render 5\n'
push_text S 'api' $((C - 120)) $((C - 110)) 'main;serve 7\n'
push_text S2 'shop%7B__profile_type__%3Dmemory%3Ainuse_space%3Abytes%3Aspace%3Abytes%7D' $((C - 120)) $((C - 110)) 'main;alloc 4096\n'
from_ms=$(((C - 300) * 1000)) until_ms=$(($(date +%s) * 1000))
CL=$HEARTH_ROOT/tests/clients
if ! command -v node > /dev/null || ! command -v protoc > /dev/null; then
	fail connect_prerequisites "node or protoc is missing: run scripts/install-deps.sh --test"
elif [ ! -d "$CL/node_modules/@connectrpc/connect-node" ]; then
	fail connect_prerequisites "tests/clients/node_modules is missing: run make test-deps (npm ci in tests/clients)"
else
	mkdir -p "$T/gen"
	if protoc --plugin=protoc-gen-es="$CL/node_modules/.bin/protoc-gen-es" --es_out="$T/gen" \
		--es_opt=target=js,import_extension=js --proto_path="$HEARTH_ROOT/proto" \
		"$HEARTH_ROOT/proto/querier.proto" "$HEARTH_ROOT/proto/types.proto" \
		"$HEARTH_ROOT/proto/profile.proto" 2> "$T/protoc.err"; then
		ln -s "$CL/node_modules" "$T/node_modules" # the generated code's imports
		node "$CL/connect_test.mjs" "$S" "$T/gen" "$from_ms" "$until_ms" > "$T/client.out" 2> "$T/client.err"
		rc=$?
		# the client's lines, through pass and fail (KNOWN_BUG); its exit 1 is
		# explained by its FAIL lines
		while read -r verdict rest; do
			case $verdict in
			PASS) pass "$rest" ;;
			FAIL) fail "${rest%%:*}" "${rest#*: }" ;;
			*) echo "$verdict $rest" ;;
			esac
		done < "$T/client.out"
		grep -q '^PASS' "$T/client.out" && { [ $rc = 0 ] || grep -q '^FAIL' "$T/client.out"; } ||
			fail connect_client "exit $rc: $(tail -5 "$T/client.err")"
	else
		fail connect_codegen "$(cat "$T/protoc.err")"
	fi
fi
# The wire, with curl: proto field names and int64 numbers, lowerCamelCase and
# int64 strings: the same answer.
call() { # method, content type, body -> status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -X POST -H "Content-Type: $2" \
		--data-binary "$3" "$S/querier.v1.QuerierService/$1"
}
st1=$(call SelectMergeStacktraces application/json \
	"{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"api\\\"}\",\"start\":$from_ms,\"end\":$until_ms,\"max_nodes\":100}")
cp "$T/ans" "$T/ans1"
st2=$(call SelectMergeStacktraces 'application/json; charset=utf-8' \
	"{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"api\\\"}\",\"start\":\"$from_ms\",\"end\":\"$until_ms\",\"maxNodes\":\"100\"}")
if [ "$st1" = 200 ] && [ "$st2" = 200 ] && cmp -s "$T/ans" "$T/ans1" &&
	[ "$(jq -c '.flamegraph.names' "$T/ans")" = '["total","main","serve"]' ] &&
	[ "$(jq -r '.flamegraph.total' "$T/ans")" = 70000000 ]; then
	pass json_field_names_and_int64_forms
else
	fail json_field_names_and_int64_forms "$st1 $st2: $(cat "$T/ans1") / $(cat "$T/ans")"
fi
# Connect's flame graph and /pyroscope/render's flamebearer are written from one
# typed tree: for the same query, the same names, levels, total and maxSelf.
sel='{service_name="shop"}'
st1=$(call SelectMergeStacktraces application/json \
	"$(jq -cn --arg t "$CPU" --arg s "$sel" --arg f "$from_ms" --arg u "$until_ms" \
		'{profileTypeID:$t,labelSelector:$s,start:$f,end:$u,maxNodes:"3"}')")
st2=$(curl -s -o "$T/fb" -w '%{http_code}' -G "$S/pyroscope/render" \
	--data-urlencode "query=$CPU$sel" --data-urlencode "from=$from_ms" \
	--data-urlencode "until=$until_ms" --data-urlencode "max-nodes=3")
a=$(jq -c '.flamegraph | [.names, (.levels | map(.values | map(tonumber))),
	(.total | tonumber), (.maxSelf | tonumber)]' "$T/ans" 2> /dev/null)
b=$(jq -c '.flamebearer | [.names, .levels, .numTicks, .maxSelf]' "$T/fb" 2> /dev/null)
if [ "$st1" = 200 ] && [ "$st2" = 200 ] && [ -n "$a" ] && [ "$a" = "$b" ] &&
	[ "$(jq -c '.flamegraph.names' "$T/ans")" = '["total","main","checkout"]' ]; then
	pass connect_flamegraph_is_the_flamebearer
else
	fail connect_flamegraph_is_the_flamebearer "$st1 $st2: $a / $b"
fi

# SelectMergeProfile in JSON (the profile.proto message profile/ builds, written
# as JSON, not a pprof read back): its CPU time is the flame graph's total.
st=$(call SelectMergeProfile application/json \
	"$(jq -cn --arg t "$CPU" --arg s "$sel" --arg f "$from_ms" --arg u "$until_ms" \
		'{profileTypeID:$t,labelSelector:$s,start:$f,end:$u}')")
sum=$(jq '[.sample[].value[1] | tonumber] | add' "$T/ans" 2> /dev/null)
types=$(jq -c '[.sampleType[] | [.type, .unit] | map(tonumber)]' "$T/ans" 2> /dev/null)
if [ "$st" = 200 ] && [ "$sum" = "$(jq '.flamebearer.numTicks' "$T/fb")" ] &&
	[ "$(jq -r '.stringTable[.sampleType[1].unit | tonumber]' "$T/ans")" = nanoseconds ]; then
	pass connect_merge_profile_json
else
	fail connect_merge_profile_json "$st sum $sum types $types: $(head -c 300 "$T/ans")"
fi

# The agent's task frames (tests/clients/task_pprof.py, pushed above at K):
# SelectMergeProfile strips them and applies pid/comm, the task as sample labels;
# SelectMergeStacktraces and /pyroscope/render (the flame tree) strip them too.
ksel='{service_name="tasks",comm="other-w"}'
st=$(call SelectMergeProfile application/json \
	"$(jq -cn --arg t "$CPU" --arg s "$ksel" --arg f $(((K - 60) * 1000)) --arg u $(((K + 60) * 1000)) \
		'{profileTypeID:$t,labelSelector:$s,start:$f,end:$u}')")
got=$(jq -c '[([.sample[].value[0] | tonumber] | add), ([.stringTable[] | select(test("\\[task"))] | length),
	([.stringTable[.sample[0].label[].key | tonumber]] | sort)]' "$T/ans" 2> /dev/null)
want connect_merge_profile_task "$st $got" '200 [9,0,["comm","pid","process","service_name","tid"]]'
st=$(call SelectMergeStacktraces application/json \
	"$(jq -cn --arg t "$CPU" --arg s '{service_name="tasks",pid="100"}' --arg f $(((K - 60) * 1000)) --arg u $(((K + 60) * 1000)) \
		'{profileTypeID:$t,labelSelector:$s,start:$f,end:$u,maxNodes:"100"}')")
want connect_stacktraces_task "$st $(jq -c '[.flamegraph.names, (.flamegraph.total | tonumber)]' "$T/ans" 2> /dev/null)" \
	'200 [["total","main","work","libfoo.so.1 [no symbols]"],80000000]'
st=$(curl -s -o "$T/fb" -w '%{http_code}' -G "$S/pyroscope/render" \
	--data-urlencode "query=$CPU{service_name=\"tasks\",comm=\"other-w\"}" --data-urlencode "from=$(((K - 60) * 1000))" \
	--data-urlencode "until=$(((K + 60) * 1000))")
want render_task "$st $(jq -c '[.flamebearer.names, .flamebearer.numTicks]' "$T/fb" 2> /dev/null)" \
	'200 [["total","main","libfoo.so.1 [no symbols]","work"],90000000]'

# A gzipped request (Connect's Content-Encoding), as a client may send one.
printf '{"name":"service_name","start":"%s","end":"%s"}' "$from_ms" "$until_ms" | gzip > "$T/req.gz"
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H 'Content-Encoding: gzip' --data-binary @"$T/req.gz" "$S/querier.v1.QuerierService/LabelValues")
[ "$st" = 200 ] && [ "$(jq -c .names "$T/ans")" = '["api","shop"]' ] && pass connect_gzip_request ||
	fail connect_gzip_request "$st $(cat "$T/ans")"
# Grafana's health check is ProfileTypes with an empty binary body.
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' \
	--data-binary '' "$S/querier.v1.QuerierService/ProfileTypes")
[ "$st" = 200 ] && [ -s "$T/ans" ] && pass connect_health_check_binary || fail connect_health_check_binary "$st"

# ---- one function over time: /api/function-series and /metrics/functions ----
# Two steps of 60 s with known values: slow_path appears in stacks as leaf and
# as caller (self differs from total), once twice in one stack (counted once),
# in two series (summed); the third step has no data.
FS=$((NOW - 4800))
printf 'main;work;slow_path 30\nmain;slow_path 10\nmain;slow_path;memcpy 20\nmain;idle 60\n' > "$T/fs1.folded"
printf 'main;slow_path 10\n' > "$T/fs1b.folded"
printf 'main;work;slow_path 15\nmain;slow_path;slow_path;memcpy 5\nmain;idle 30\n' > "$T/fs2.folded"
send S "/ingest?name=fsapp%7Benv%3Da%7D&from=$FS&until=$((FS + 10))&sampleRate=100" "$T/fs1.folded"
send S2 "/ingest?name=fsapp%7Benv%3Db%7D&from=$FS&until=$((FS + 10))&sampleRate=100" "$T/fs1b.folded"
send S2 "/ingest?name=fsapp%7Benv%3Da%7D&from=$((FS + 60))&until=$((FS + 70))&sampleRate=100" "$T/fs2.folded"
FSR="query=fsapp&from=$FS&until=$((FS + 180))&step=60s&function=slow_path"
fsget() { get "/api/function-series?$FSR&$1"; }
want fseries_total "$(fsget '' | jq -c '[.unit, .kind, .normalize, .values, .totals]')" \
	'["samples","total","value",[70,20,0],[130,50,0]]'
want fseries_self "$(fsget kind=self | jq -c '[.kind, .values, .totals]')" '["self",[50,15,0],[130,50,0]]'
want fseries_times "$(fsget kind=self | jq -c '[.from, .until, .step, .times] | map(tostring)')" \
	"[\"${FS}000000000\",\"$((FS + 180))000000000\",\"60000000000\",\"[${FS}000000000,$((FS + 60))000000000,$((FS + 120))000000000]\"]"
# share in percent of the step's total; rate per second of the step
want fseries_share "$(fsget 'kind=self&normalize=share' | jq -c '[.unit, (.values | map(. * 1e6 | round)), .totals]')" \
	'["%",[38461538,30000000,0],[100,100,0]]'
want fseries_rate "$(fsget normalize=rate | jq -c '[.unit, (.values, .totals | map(. * 60 | round))]')" \
	'["samples/s",[70,20,0],[130,50,0]]'
want fseries_one_series "$(get "/api/function-series?query=fsapp%7Benv%3D%22b%22%7D&from=$FS&until=$((FS + 180))&step=60s&function=slow_path&kind=self" | jq -c .values)" '[10,0,0]'
want fseries_unknown_function "$(get "/api/function-series?query=fsapp&from=$FS&until=$((FS + 180))&step=60s&function=nope" | jq -c '[.values, .totals]')" '[[0,0,0],[130,50,0]]'
xcheck fseries_total "/api/function-series?$FSR" norm_json
xcheck fseries_self_share "/api/function-series?$FSR&kind=self&normalize=share" norm_json
# each bad parameter: 400 naming it
fsbad() { # name, query string, word the error must hold
	local st
	st=$(http_status "$S/api/function-series?$2" "$T/fsbad")
	[ "$st" = 400 ] && jq -r .error "$T/fsbad" | grep -q -- "$3" && pass "$1" ||
		fail "$1" "$st $(cat "$T/fsbad")"
}
fsbad fseries_function_required "query=fsapp&from=$FS&until=$((FS + 180))" function
fsbad fseries_function_too_long "query=fsapp&function=$(printf 'f%.0s' {1..1100})" function
fsbad fseries_bad_kind "$FSR&kind=cum" kind
fsbad fseries_bad_normalize "$FSR&normalize=percent" normalize
fsbad fseries_bad_step "query=fsapp&function=slow_path&from=now-1d&step=1s" step
fsbad fseries_zero_step "query=fsapp&function=slow_path&step=0" step
fsbad fseries_bad_selector "query=fsapp%7B&function=slow_path" selector
fsbad fseries_bad_range "query=fsapp&function=slow_path&from=$((FS + 60))&until=$FS" from

# /metrics/functions: the top-k functions by self over the last window, read
# with a strict parser of the text format (tests/clients/prom_text_check.py).
TM=$(($(date +%s) - 30))
printf 'main;hot 300\nmain;warm 100\nmain;cold;hot 50\nmain;cold 20\n' > "$T/fm.folded"
send S "/ingest?name=fnmetrics&from=$TM&until=$((TM + 10))&sampleRate=100" "$T/fm.folded"
st=$(http_status "$S/metrics/functions?query=fnmetrics&k=2&window=1h" "$T/fm.txt")
if [ "$st" = 200 ] && python3 "$HEARTH_ROOT/tests/clients/prom_text_check.py" < "$T/fm.txt" > "$T/fm.json"; then
	pass metrics_functions_parses
else
	fail metrics_functions_parses "$st $(cat "$T/fm.json" 2> /dev/null) $(head -c 400 "$T/fm.txt")"
fi
# CPU seconds per second of the hour: hot's self is 350 samples of 10 ms = 3.5 s
want metrics_functions_values "$(jq -sc 'map([(.name | sub("hearth_"; "")), .labels.function, .labels.selector, (.value * 3600 * 100 | round)])' "$T/fm.json")" \
	'[["function_self_seconds_per_second","hot","fnmetrics",350],["function_self_seconds_per_second","warm","fnmetrics",100],["function_total_seconds_per_second","hot","fnmetrics",350],["function_total_seconds_per_second","warm","fnmetrics",100],["selection_seconds_per_second",null,"fnmetrics",470]]'
want metrics_functions_help_type "$(grep -c '^# TYPE hearth_[a-z_]* gauge$' "$T/fm.txt")/$(grep -c '^# HELP ' "$T/fm.txt")" 3/3
# k bounds the series: at most 2k + 1 lines of samples
st=$(http_status "$S/metrics/functions?k=100&window=1h" "$T/fm100.txt")
n=$(grep -vc '^#' "$T/fm100.txt")
[ "$st" = 200 ] && [ "$n" -le 201 ] && pass "metrics_functions_bounded ($n series)" ||
	fail metrics_functions_bounded "$st, $n series"
mbad() { # name, query string, word
	local st
	st=$(http_status "$S/metrics/functions?$2" "$T/mbad")
	[ "$st" = 400 ] && jq -r .error "$T/mbad" | grep -q -- "$3" && pass "$1" ||
		fail "$1" "$st $(cat "$T/mbad")"
}
mbad metrics_functions_k_zero "k=0" "k '0'"
mbad metrics_functions_k_over "k=101" "k '101'"
mbad metrics_functions_bad_window "window=2h" window
mbad metrics_functions_bad_selector "query=%7Ba%3D" selector

# ---- /debug/pprof/profile through go tool pprof ----
# A profile pushed during the wait (through the other server, on ClickHouse) is
# in the answer. When the server begins its 3 s window is not observable from
# here, so one is pushed every 0.3 s until the answer comes: those pushed a
# second or more into the window are in it, however late the request arrived.
(curl -s --max-time 30 -o "$T/live.pb.gz" "$S/debug/pprof/profile?seconds=3") &
lp=$!
printf 'main;livework 50\n' > "$T/live.folded"
pushes=0
while kill -0 "$lp" 2> /dev/null; do
	st=$(http_status "$S2/ingest?name=live&from=$(date +%s)&until=$(($(date +%s) + 1))" "$T/lv" --data-binary @"$T/live.folded")
	pushes=$((pushes + 1))
	[ "$st" = 200 ] || break
	sleep 0.3 # the pace of the pushes
done
wait $lp
if [ "$st" = 200 ] && go tool pprof -top "$T/live.pb.gz" 2> /dev/null | grep -q livework; then
	pass debug_pprof_profile_via_go_tool_pprof
else
	fail debug_pprof_profile_via_go_tool_pprof "$pushes pushes during the window, the last answered $st $(cat "$T/lv"); $(go tool pprof -top "$T/live.pb.gz" 2>&1 | tail -3)"
fi

# ---- the diff's significance (docs/regressions.md): six 10 s windows a side,
# `hot` twice as large on the right, `steady` the same; exact counts, so the
# verdicts are certain ----
G=$((NOW - 4800))
printf 'main;steady 1000\nmain;hot 1000\n' > "$T/sig_a.folded"
printf 'main;steady 1000\nmain;hot 2000\n' > "$T/sig_b.folded"
for i in 0 1 2 3 4 5; do
	send S "/ingest?name=sigapp&from=$((G + 10 * i))&until=$((G + 10 * i + 10))&sampleRate=100" "$T/sig_a.folded"
	send S "/ingest?name=sigapp&from=$((G + 60 + 10 * i))&until=$((G + 70 + 10 * i))&sampleRate=100" "$T/sig_b.folded"
done
SIG="/api/diff?left=sigapp%7B%7D&right=sigapp%7B%7D&leftfrom=$G&leftuntil=$((G + 60))&rightfrom=$((G + 60))&rightuntil=$((G + 120))"
want diff_significance "$(get "$SIG&normalize=rate&confidence=0.99" | jq -c '.significance | [.confidence, .normalize, .intervals, .seconds, (.note | length > 20)]')" '[0.99,"rate",[6,6],[60,60],true]'
want diff_rate_verdicts "$(get "$SIG&normalize=rate" | jq -c '[.functions[] | select(.name == "hot" or .name == "steady") | [.name, .selfDiff.verdict, .selfDiff.low > 0]]')" '[["hot","up",true],["steady","noise",false]]'
want diff_share_verdicts "$(get "$SIG" | jq -c '[.functions[] | [.name, .selfDiff.verdict, .totalDiff.verdict]] | sort')" '[["hot","up","up"],["main","noise","noise"],["steady","down","down"]]'
want diff_share_values "$(get "$SIG" | jq -c '.functions[] | select(.name == "hot") | [.selfDiff.left, .selfDiff.right] | map(. * 100 | round)')" '[5000,6667]'
want diff_significant_first "$(get "$SIG&normalize=rate" | jq -r '.functions[0].name')" hot
want diff_bad_confidence "$(http_status "$S$SIG&confidence=2" "$T/sig.err")$(jq -r '.error | test("confidence")' "$T/sig.err")" 400true
want diff_bad_normalize "$(http_status "$S$SIG&normalize=median" "$T/sig.err")$(jq -r '.error | test("normalize")' "$T/sig.err")" 400true
# interval=: the statistics' intervals chosen (two 30 s ones a side), bounded
want diff_interval "$(get "$SIG&normalize=rate&interval=30s" | jq -c '.significance | [.intervals, .seconds]')" '[[2,2],[60,60]]'
want diff_bad_interval "$(http_status "$S$SIG&interval=500ms" "$T/sig.err")$(jq -r '.error | test("interval")' "$T/sig.err")" 400true
xcheck diff_significance "$SIG&normalize=rate" norm_json

# ---- regressions (docs/regressions.md): the same sigapp windows, the right one
# the window and the left its previous baseline; exact counts: hot 100 -> 200
# samples/s is listed, steady is not ----
REG="/api/regressions?query=sigapp%7B%7D&from=$((G + 60))&until=$((G + 120))"
want regressions_rate "$(get "$REG" | jq -c '[.unit, .normalize, .kind, .confidence, .tested, .window.intervals, .baseline.intervals, .baseline.from == '"$G"'000000000, (.note | length > 20), [.functions[] | [.name, .before, .after, .change, .verdict, .relative, (.low > 0), (.series.times | length), (.series.values | add)]]]')" \
	'["samples/s","rate","self",0.99,2,6,6,true,true,[["hot",100,200,100,"up",1,true,12,1800]]]'
want regressions_total_share "$(get "$REG&kind=total&normalize=share&baselineFrom=$G&baselineUntil=$((G + 60))" | jq -c '[.unit, .kind, .tested, ([.functions[] | [.name, .verdict]] | sort)]')" \
	'["pp","total",3,[["hot","up"],["steady","down"]]]'
want regressions_limit "$(get "$REG&kind=total&limit=1" | jq -c '[.functions[] | .name]')" '["hot"]'
want regressions_empty_baseline "$(get "$REG&baseline=7d" | jq -c '[.functions, .baseline.intervals, .window.intervals, (.note | test("baseline holds no data"))]')" '[[],0,6,true]'
for bad in baseline=2d kind=leaf limit=0 limit=1001 confidence=2 normalize=median baselineFrom=$G \
	"baseline=1d&baselineFrom=$G&baselineUntil=$((G + 60))" "baselineFrom=$((G + 60))&baselineUntil=$G"; do
	name=${bad%%=*}
	[ "$bad" = "baselineFrom=$G" ] && name=baselineUntil
	want "regressions_bad_${bad//[^a-zA-Z0-9]/_}" "$(http_status "$S$REG&$bad" "$T/reg.err")$(jq -r --arg n "$name" '.error | contains($n)' "$T/reg.err")" 400true
done
xcheck regressions "$REG" norm_json
# the CLI: the same table as text, and --json as the API's
"$HEARTH" query --server "$S" --regressions 'sigapp{}' --from $((G + 60)) --until $((G + 120)) > "$T/reg.txt" 2>&1
if grep -q '^# window .* against baseline .*confidence 0.99 over the 2 functions tested' "$T/reg.txt" &&
	grep -Eq '^hot +100 +200 +\+100 .*\+100\.0%$' "$T/reg.txt" && ! grep -q steady "$T/reg.txt"; then
	pass cli_regressions_table
else
	fail cli_regressions_table "$(head -c 600 "$T/reg.txt")"
fi
want cli_regressions_json "$("$HEARTH" query --server "$S" --regressions --json --kind total 'sigapp{}' --from $((G + 60)) --until $((G + 120)) | jq -c '[.kind, [.functions[].name]]')" '["total",["hot","main"]]'
want cli_regressions_bad_baseline "$("$HEARTH" query --server "$S" --regressions --baseline 2d > /dev/null 2>&1; echo $?)" 2

# ---- ClickHouse only (difference 4) ----
if on_clickhouse; then
	# shellcheck disable=SC2034 # read by same (clickhouse_lib.sh)
	SERVERS="E S S2"
	for x in "${XCHECK[@]}"; do
		IFS='|' read -r name path norm <<< "$x"
		same "$name" "$path" "$norm"
	done
	n=$(ch_sql "$CH" "SELECT count() FROM hearth.samples")
	[ "${n:-0}" -gt 10 ] && pass "samples_in_clickhouse ($n rows)" || fail samples_in_clickhouse "$n"
	# hearth run --store: the local agent's profiles go to ClickHouse, and the
	# servers read them (only as root: the agent samples with BPF).
	if [ "$(id -u)" = 0 ]; then
		start_hearth "$T/run.log" run --store "$CH" --listen 127.0.0.1:0 --interval 1 -F 49 &&
			rpid=$SPID || fail run_start "$(cat "$T/run.log")"
		run_seen() { curl -s "$S2/api/label/host/values?from=now-5m" | grep -q "$(hostname)"; }
		if [ -n "${rpid:-}" ] && wait_until 20 run_seen; then
			pass run_store_clickhouse
		else
			fail run_store_clickhouse "$(curl -s "$S2/api/series?from=now-5m" | head -c 300); $(tail -3 "$T/run.log")"
		fi
		[ -n "${rpid:-}" ] && kill "$rpid"
	else
		skip run_store_clickhouse "needs root to load BPF"
	fi
	# Refusals: a bad URL (usage error), another scheme, a database of another
	# schema version.
	"$HEARTH" server --store clickhouse://127.0.0.1/x --listen 127.0.0.1:0 2> "$T/bad1.err"
	rc=$?
	{ [ $rc = 2 ] || [ $rc = 1 ]; } && grep -q "clickhouse://127.0.0.1/x" "$T/bad1.err" && pass bad_store_url ||
		fail bad_store_url "exit $rc: $(cat "$T/bad1.err")"
	"$HEARTH" server --store postgres://x --listen 127.0.0.1:0 2> "$T/bad2.err"
	rc=$?
	[ $rc = 2 ] && grep -q "neither 'local' nor" "$T/bad2.err" && pass bad_store_kind ||
		fail bad_store_kind "exit $rc: $(cat "$T/bad2.err")"
	ch_sql "$CH" "CREATE DATABASE future" > /dev/null
	ch_sql "$CH" "CREATE TABLE future.hearth_schema (version UInt32) ENGINE = TinyLog" > /dev/null
	ch_sql "$CH" "INSERT INTO future.hearth_schema VALUES (99)" > /dev/null
	timeout 20 "$HEARTH" server --store "${CH%/hearth}/future" --listen 127.0.0.1:0 2> "$T/ver.err"
	rc=$?
	[ $rc = 1 ] && grep -q "schema version 99" "$T/ver.err" && pass unknown_schema_refused ||
		fail unknown_schema_refused "exit $rc: $(cat "$T/ver.err")"
fi

# ---- retention (difference 3): the first maintenance tick (60 s after the
# server started) drops the 10-day-old profile; the recent data stay ----
old_gone() { [ "$(old_total)" = 0 ]; }
ch_old_gone() {
	[ "$(ch_sql "$CH" "SELECT count() FROM system.parts WHERE database = 'hearth' AND active AND partition = toString(toDate($OLD))")" = 0 ]
}
if wait_until 90 old_gone; then
	pass retention_drops_old_profile
else
	fail retention_drops_old_profile "the profile of $OLD still answers $(old_total)"
fi
if on_clickhouse; then
	wait_until 30 ch_old_gone && pass retention_drops_old_partitions ||
		fail retention_drops_old_partitions "$(ch_sql "$CH" "SELECT table, partition FROM system.parts WHERE database = 'hearth' AND active" | tr '\n' ' ')"
fi
want retention_keeps_recent "$(get "/api/profile?format=tree&query=web&$R" | jq .total)" 152

# The server under test (ASan/UBSan) exits cleanly after all of it.
kill "$SPID_S" 2> /dev/null
wait "$SPID_S"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/s.log"; then
	pass server_clean_exit
else
	fail server_clean_exit "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/s.log")"
fi

# A server started afterwards on the same store answers from what is stored:
# the data, and GetProfileStats (Grafana's "is there data" question), though
# this process ingested nothing.
if start_hearth "$T/s3.log" server "${STORE_ARGS[@]}" --listen 127.0.0.1:0; then
	want restart_keeps_data "$(curl -s "$HURL/api/profile?format=tree&query=web&$R" | jq .total)" 152
	curl -s -o "$T/stats.json" -X POST -H 'Content-Type: application/json' --data-binary '{}' \
		"$HURL/querier.v1.QuerierService/GetProfileStats"
	got=$(jq -c '[.dataIngested == true, (.oldestProfileTime // 0 | tonumber) > 0,
		(.newestProfileTime // 0 | tonumber) >= ('"$C"' - 120) * 1000]' "$T/stats.json" 2>&1)
	[ "$got" = '[true,true,true]' ] && pass profile_stats_after_restart ||
		fail profile_stats_after_restart "[data, oldest > 0, newest >= the Connect fixture's] is $got: $(head -c 200 "$T/stats.json")"
else
	fail server_restart "$(cat "$T/s3.log")"
fi
finish
