#!/usr/bin/env bash
# Off-CPU and wall-clock profiles stored, queried, diffed and exported like CPU
# ones (issue 28, consumer side), against a fresh `hearth server` (the ASan
# build when there): pprofs written as hearth's producer writes them
# (offcpu_view_pprof.py: sample type off_cpu|wall/nanoseconds, the `reason`
# label, a leaf "[off-cpu: REASON]" frame, the [task] location) go in through
# POST /ingest without a type; every read route answers them in nanoseconds, by
# reason, never mixed with CPU; go tool pprof reads the export; Grafana's
# Connect client lists and reads the types. Expected figures come from the
# fixture's own output (reason, ms).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

OFF=off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds
WALL=wall:wall:nanoseconds:wall:nanoseconds
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
GEN=$HEARTH_ROOT/tests/integration/offcpu_view_pprof.py
NOW=$(date +%s)
A=$((NOW - 600)) B=$((NOW - 300)) FROM=$((NOW - 900))
MS=1000000

# Window A: the fixture once; window B: twice its values (the diff's change).
python3 "$GEN" off_cpu "$T/offA.pb.gz" $A 1 > "$T/offA.truth" &&
	python3 "$GEN" off_cpu "$T/offB.pb.gz" $B 2 > "$T/offB.truth" &&
	python3 "$GEN" wall "$T/wall.pb.gz" $A 1 > "$T/wall.truth" ||
	{ fail fixture "offcpu_view_pprof.py failed"; finish; }
sum_ms() { awk '{ s += $2 } END { print s + 0 }' "$1"; }
OFF_A=$(sum_ms "$T/offA.truth") OFF_B=$(sum_ms "$T/offB.truth")
OFF_MS=$((OFF_A + OFF_B))
SLEEP_MS=$(($(awk '$1 == "sleep" { print $2 }' "$T/offA.truth") + $(awk '$1 == "sleep" { print $2 }' "$T/offB.truth")))
IO_MS=$(($(awk '$1 == "io" { print $2 }' "$T/offA.truth") + $(awk '$1 == "io" { print $2 }' "$T/offB.truth")))
WALL_MS=$(sum_ms "$T/wall.truth")
CPU_SAMPLES=50

post() { # name, query string, body file|@text
	local st
	if [ "${3#@}" != "$3" ]; then
		st=$(curl -s -o "$T/ans" -w '%{http_code}' --data-binary "${3#@}" "$URL/ingest?$2")
	else
		st=$(curl -s -o "$T/ans" -w '%{http_code}' --data-binary @"$3" "$URL/ingest?$2")
	fi
	[ "$st" = 200 ] || fail "$1" "$st $(cat "$T/ans")"
}
# No __profile_type__ anywhere: the server knows each type by its sample type.
post ingest_off_a "name=shop&format=pprof" "$T/offA.pb.gz"
post ingest_off_b "name=shop&format=pprof" "$T/offB.pb.gz"
post ingest_wall "name=shop&format=pprof" "$T/wall.pb.gz"
post ingest_cpu "name=shop&from=$A&until=$((A + 10))" "@main;serve;parse $CPU_SAMPLES"

get() { # path, curl args... -> body in $T/ans, status printed
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -G "$URL$1" --data-urlencode "from=$FROM" \
		--data-urlencode "until=$((NOW + 60))" "${@:2}"
}
expect_json() { # name, jq filter that must print true, path, curl args...
	local st
	st=$(get "${@:3}")
	if [ "$st" = 200 ] && [ "$(jq -r "$2" "$T/ans" 2> /dev/null)" = true ]; then
		pass "$1"
	else
		fail "$1" "$st $(head -c 600 "$T/ans")"
	fi
}
sel() { printf '{__profile_type__="%s"%s}' "$1" "${2:+,$2}"; }

# ---- series and labels ----
expect_json series_types "[.[] | .profileType] | unique == [\"$OFF\", \"$CPU\", \"$WALL\"]" /api/series
expect_json series_reason_label \
	"[.[] | select(.profileType == \"$OFF\") | .labels.reason] | sort == [\"io\",\"lock\",\"runqueue\",\"sleep\"]" /api/series
expect_json wall_running_reason "[.[] | select(.profileType == \"$WALL\") | .labels.reason] | index(\"running\") != null" /api/series
expect_json label_values_reason 'sort == ["io","lock","running","runqueue","sleep"]' /api/label/reason/values

# ---- /api/profile ----
expect_json profile_off_cpu_ns ".unit == \"nanoseconds\" and .total == $((OFF_MS * MS))" \
	/api/profile --data-urlencode "query=$(sel $OFF)"
expect_json profile_wall_ns ".unit == \"nanoseconds\" and .total == $((WALL_MS * MS))" \
	/api/profile --data-urlencode "query=$(sel $WALL)"
# A selector without a type is CPU only: no waiting time mixed in.
expect_json cpu_selector_not_mixed ".unit == \"samples\" and .total == $CPU_SAMPLES and
	([.. | .name? // empty | select(startswith(\"[off-cpu\"))] | length == 0)" /api/profile --data-urlencode 'query={service_name="shop"}'
expect_json profile_reason_filter ".total == $(((OFF_MS - SLEEP_MS) * MS)) and
	([.. | .name? // empty | select(. == \"[off-cpu: sleep]\")] | length == 0)" \
	/api/profile --data-urlencode "query=$(sel $OFF 'reason!="sleep"')"
expect_json profile_group_by_reason "[.tree.children[] | {(.name): .total}] | add == {
	\"reason=io\": $((IO_MS * MS)), \"reason=sleep\": $((SLEEP_MS * MS)),
	\"reason=lock\": $((240 * MS)), \"reason=runqueue\": $((120 * MS))}" \
	/api/profile --data-urlencode "query=$(sel $OFF)" --data-urlencode groupBy=reason
expect_json profile_leaf_frames "[.tree | .. | .name? // empty | select(startswith(\"[off-cpu: \"))] | unique ==
	[\"[off-cpu: io]\",\"[off-cpu: lock]\",\"[off-cpu: runqueue]\",\"[off-cpu: sleep]\"]" \
	/api/profile --data-urlencode "query=$(sel $OFF)"
expect_json topjson_ns ".unit == \"nanoseconds\" and ([.rows[] | select(.name == \"[off-cpu: io]\") | .self] == [$((IO_MS * MS))])" \
	/api/profile --data-urlencode "query=$(sel $OFF)" --data-urlencode format=topjson
st=$(get /api/profile --data-urlencode "query=$(sel $OFF)" --data-urlencode format=top)
if [ "$st" = 200 ] && grep -q '^Type: off_cpu$' "$T/ans" && grep -qE '^ +[0-9.]+(ms|s) .*\[off-cpu: sleep\]$' "$T/ans"; then
	pass top_text_type_and_time
else
	fail top_text_type_and_time "$st $(head -8 "$T/ans")"
fi

# ---- pprof export, read by go tool pprof ----
st=$(get /api/profile --data-urlencode "query=$(sel $OFF)" --data-urlencode format=pprof)
cp "$T/ans" "$T/off.pb.gz"
if ! command -v go > /dev/null; then
	fail go_tool_pprof "go is missing: run scripts/install-deps.sh --test"
elif [ "$st" = 200 ]; then
	go_env
	go tool pprof -top "$T/off.pb.gz" > "$T/top.txt" 2> "$T/top.err"
	want_total=$(awk -v m=$OFF_MS 'BEGIN { printf "%.2fs", m / 1000 }')
	if grep -q '^Type: off_cpu$' "$T/top.txt" &&
		grep -qE "Total samples = (${OFF_MS}ms|$want_total) " "$T/top.txt" &&
		grep -qE '^ +[0-9.]+(ms|s) .*\[off-cpu: io\] *$' "$T/top.txt"; then
		pass go_tool_pprof_top_in_time
	else
		fail go_tool_pprof_top_in_time "want total $want_total: $(head -8 "$T/top.txt") $(cat "$T/top.err")"
	fi
	go tool pprof -raw "$T/off.pb.gz" > "$T/raw.txt" 2>&1
	grep -q '^PeriodType: off_cpu nanoseconds$' "$T/raw.txt" && grep -q '^off_cpu/nanoseconds' "$T/raw.txt" &&
		pass pprof_sample_and_period_types || fail pprof_sample_and_period_types "$(head -5 "$T/raw.txt")"
	go tool pprof -tagfocus reason=io -top "$T/off.pb.gz" > "$T/io.txt" 2>&1
	io_s=$(awk -v m=$IO_MS 'BEGIN { printf "%gms", m }')
	grep -q "accounting for $io_s, " "$T/io.txt" && ! grep -q 'off-cpu: sleep' "$T/io.txt" &&
		pass pprof_tagfocus_reason || fail pprof_tagfocus_reason "want $io_s: $(head -6 "$T/io.txt")"
else
	fail pprof_export "$st"
fi

# ---- timeline and diff ----
expect_json timeline_by_reason ".unit == \"nanoseconds\" and
	([.groups[] | {(.group): ([.values[] | numbers] | add)}] | add) == {
	\"io\": $((IO_MS * MS)), \"sleep\": $((SLEEP_MS * MS)), \"lock\": $((240 * MS)), \"runqueue\": $((120 * MS))}" \
	/api/timeline --data-urlencode "query=$(sel $OFF)" --data-urlencode groupBy=reason --data-urlencode step=60s
expect_json diff_off_cpu ".unit == \"nanoseconds\" and .left == $((OFF_A * MS)) and .right == $((OFF_B * MS))" \
	/api/diff --data-urlencode "left=$(sel $OFF)" --data-urlencode "right=$(sel $OFF)" \
	--data-urlencode leftfrom=$((A - 5)) --data-urlencode leftuntil=$((A + 15)) \
	--data-urlencode rightfrom=$((B - 5)) --data-urlencode rightuntil=$((B + 15))
st=$(get /api/diff --data-urlencode "left=$(sel $OFF)" --data-urlencode "right=$(sel $WALL)")
[ "$st" = 400 ] && pass diff_two_types_refused || fail diff_two_types_refused "$st $(cat "$T/ans")"
st=$(get /api/profile --data-urlencode 'query={__profile_type__=~".*"}')
[ "$st" = 400 ] && grep -q 'several profile types' "$T/ans" && pass mixed_types_refused ||
	fail mixed_types_refused "$st $(cat "$T/ans")"

# ---- Pyroscope's render ----
expect_json render_off_cpu ".metadata.units == \"nanoseconds\" and .metadata.sampleRate == 1000000000 and
	.flamebearer.numTicks == $((OFF_MS * MS))" /pyroscope/render --data-urlencode "query=$OFF{service_name=\"shop\"}"
expect_json render_wall_reason_filter ".flamebearer.numTicks == $(((WALL_MS - 600) * MS))" \
	/pyroscope/render --data-urlencode "query=$WALL{reason!=\"sleep\"}"

# ---- /metrics/functions: off-CPU seconds per second ----
st=$(curl -s -o "$T/ans" -w '%{http_code}' -G "$URL/metrics/functions" --data-urlencode "query=$(sel $OFF)" \
	--data-urlencode window=1h)
got=$(awk '/^hearth_selection_seconds_per_second/ { print $NF }' "$T/ans")
if [ "$st" = 200 ] && grep -q 'in seconds of off-CPU time' "$T/ans" &&
	awk -v g="$got" -v w=$OFF_MS 'BEGIN { exit !(g > 0 && (g - w / 1e3 / 3600) ^ 2 < 1e-12) }'; then
	pass metrics_functions_seconds
else
	fail metrics_functions_seconds "$st selection $got, want $OFF_MS ms / 3600 s: $(head -3 "$T/ans")"
fi

# ---- hearth query against the server ----
"$HEARTH" query --server "$URL" --from $FROM "$(sel $OFF)" > "$T/q.txt" 2>&1
grep -q '^Type: off_cpu$' "$T/q.txt" && grep -q 'off-cpu: sleep' "$T/q.txt" &&
	pass hearth_query_top || fail hearth_query_top "$(head -5 "$T/q.txt")"

# ---- Grafana's Connect client ----
CL=$HEARTH_ROOT/tests/clients
if ! command -v node > /dev/null || ! command -v protoc > /dev/null; then
	fail connect_prerequisites "node or protoc is missing: run scripts/install-deps.sh --test"
elif [ ! -d "$CL/node_modules/@connectrpc/connect-node" ]; then
	fail connect_prerequisites "tests/clients/node_modules is missing: run make test-deps"
else
	mkdir -p "$T/gen"
	if protoc --plugin=protoc-gen-es="$CL/node_modules/.bin/protoc-gen-es" --es_out="$T/gen" \
		--es_opt=target=js,import_extension=js --proto_path="$HEARTH_ROOT/proto" \
		"$HEARTH_ROOT/proto/querier.proto" "$HEARTH_ROOT/proto/types.proto" \
		"$HEARTH_ROOT/proto/profile.proto" 2> "$T/protoc.err"; then
		ln -s "$CL/node_modules" "$T/node_modules"
		node "$CL/offcpu_connect.mjs" "$URL" "$T/gen" $((FROM * 1000)) $(((NOW + 60) * 1000)) \
			$((OFF_MS * MS)) $((SLEEP_MS * MS)) $((WALL_MS * MS)) $((CPU_SAMPLES * 10 * MS)) \
			> "$T/client.out" 2> "$T/client.err"
		rc=$?
		while read -r verdict rest; do
			case $verdict in
			PASS) pass "$rest" ;;
			FAIL) fail "${rest%%:*}" "${rest#*: }" ;;
			esac
		done < "$T/client.out"
		grep -q '^PASS' "$T/client.out" && { [ $rc = 0 ] || grep -q '^FAIL' "$T/client.out"; } ||
			fail connect_client "exit $rc: $(tail -5 "$T/client.err")"
	else
		fail connect_codegen "$(cat "$T/protoc.err")"
	fi
fi

# ---- a real recording, when this hearth records off-CPU time (root) ----
if [ "$(id -u)" -ne 0 ]; then
	skip real_recording "needs root to load BPF"
elif ! "$HEARTH" record --help 2>&1 | grep -q -- '--off-cpu'; then
	skip real_recording "this hearth has no 'record --off-cpu' (issue 28's producer is not built in)"
elif ! "$HEARTH" record -a --off-cpu -d 1 -q -o "$T/real.pb.gz" 2> "$T/real.err"; then
	fail real_recording "$(tail -3 "$T/real.err")"
else
	# its own total, from the pprof's samples, against what the server answers
	want=$(go tool pprof -raw "$T/real.pb.gz" 2> /dev/null |
		awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+:$/ { t += $1 } END { printf "%.0f", t }')
	rs=$(date +%s)
	post ingest_real "name=real&format=pprof" "$T/real.pb.gz"
	expect_json real_recording_stored "[.[] | select(.labels.__name__ == \"real\") | .profileType] | unique == [\"$OFF\"]" \
		/api/series --data-urlencode "from=$((rs - 120))"
	st=$(curl -s -o "$T/ans" -w '%{http_code}' -G "$URL/api/profile" --data-urlencode "query=real$(sel $OFF)" \
		--data-urlencode "from=$((rs - 120))" --data-urlencode "until=$((rs + 60))" --data-urlencode groupBy=reason \
		--data-urlencode format=topjson) # a table: a real tree can be deeper than jq parses
	if [ "$st" = 200 ] && [ -n "$want" ] && [ "$want" -gt 0 ] && [ "$(jq -r .total "$T/ans")" = "$want" ] &&
		jq -e '[.rows[].name | select(startswith("reason="))] | length > 0' "$T/ans" > /dev/null; then
		pass real_recording_total_by_reason
	else
		fail real_recording_total_by_reason "$st want $want: $(head -c 300 "$T/ans")"
	fi
fi

kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit
else
	fail server_clean_exit "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
