#!/usr/bin/env bash
# Grafana's Pyroscope data source against hearth: the Connect API
# (/querier.v1.QuerierService/*) driven by an outside Connect client
# (tests/clients: @connectrpc/connect-node with code @bufbuild/protoc-gen-es
# generates here from proto/ with Debian's protoc), in binary and JSON, against
# a `hearth server` holding a known fixture; then the wire details Grafana's
# backend and browser rely on, with curl: proto field names and lowerCamelCase,
# int64 as numbers or strings, and Connect errors with their HTTP status.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

CL=$HEARTH_ROOT/tests/clients
for need in node protoc; do
	command -v "$need" > /dev/null ||
		{ fail connect_prerequisites "$need is missing: run scripts/install-deps.sh --test"; finish; }
done
[ -d "$CL/node_modules/@connectrpc/connect-node" ] ||
	{ fail connect_prerequisites "tests/clients/node_modules is missing: run make test-deps (npm ci in tests/clients)"; finish; }

# The client's code, generated from hearth's .proto files by the client's own generator.
mkdir -p "$T/gen"
protoc --plugin=protoc-gen-es="$CL/node_modules/.bin/protoc-gen-es" --es_out="$T/gen" \
	--es_opt=target=js,import_extension=js --proto_path="$HEARTH_ROOT/proto" \
	"$HEARTH_ROOT/proto/querier.proto" "$HEARTH_ROOT/proto/types.proto" \
	"$HEARTH_ROOT/proto/profile.proto" 2> "$T/protoc.err" ||
	{ fail connect_codegen "$(cat "$T/protoc.err")"; finish; }
# Node resolves the generated code's imports from the client package.
ln -s "$CL/node_modules" "$T/node_modules"

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

# The fixture: shop (prod and dev), api, and a memory profile of shop, 10 s each.
now=$(date +%s)
t0=$((now - 120)) t1=$((now - 110))
push() { # name (URL-encoded), body
	local st
	st=$(printf '%b' "$2" | curl -s -o "$T/push.out" -w '%{http_code}' --data-binary @- \
		"$URL/ingest?name=$1&from=$t0&until=$t1&sampleRate=100")
	[ "$st" = 200 ] || fail "fixture_push_$1" "$st $(cat "$T/push.out")"
}
push 'shop%7Benv%3Dprod%7D' 'main;checkout;db 30\nmain;checkout 10\nmain;render 20\n'
push 'shop%7Benv%3Ddev%7D' 'main;render 5\n'
push 'api' 'main;serve 7\n'
push 'shop%7B__profile_type__%3Dmemory%3Ainuse_space%3Abytes%3Aspace%3Abytes%7D' 'main;alloc 4096\n'
from_ms=$(((now - 300) * 1000)) until_ms=$((now * 1000))

node "$HEARTH_ROOT/tests/clients/connect_test.mjs" "$URL" "$T/gen" "$from_ms" "$until_ms" \
	> "$T/client.out" 2> "$T/client.err"
rc=$?
cat "$T/client.out"
grep -q '^PASS' "$T/client.out" && [ $rc = 0 ] ||
	fail connect_client "exit $rc: $(tail -5 "$T/client.err")"

# ---- the wire, with curl ----
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
call() { # method, content type, body -> status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -X POST -H "Content-Type: $2" \
		--data-binary "$3" "$URL/querier.v1.QuerierService/$1"
}
# The same request with proto field names and int64 numbers, and in lowerCamelCase
# with int64 strings: the same answer.
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
st2=$(curl -s -o "$T/fb" -w '%{http_code}' -G "$URL/pyroscope/render" \
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

# A gzipped request (Connect's Content-Encoding), as a client may send one.
printf '{"name":"service_name","start":"%s","end":"%s"}' "$from_ms" "$until_ms" | gzip > "$T/req.gz"
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H 'Content-Encoding: gzip' --data-binary @"$T/req.gz" "$URL/querier.v1.QuerierService/LabelValues")
[ "$st" = 200 ] && [ "$(jq -c .names "$T/ans")" = '["api","shop"]' ] && pass connect_gzip_request ||
	fail connect_gzip_request "$st $(cat "$T/ans")"

# Errors: a Connect error object, the status the protocol gives its code.
cerr() { # name, want status, want code, message substring, method, ctype, body
	local st
	st=$(call "$5" "$6" "$7")
	if [ "$st" = "$2" ] && [ "$(jq -r .code "$T/ans" 2> /dev/null)" = "$3" ] &&
		jq -r .message "$T/ans" | grep -qF -- "$4"; then
		pass "$1"
	else
		fail "$1" "$st $(cat "$T/ans")"
	fi
}
cerr connect_malformed_json 400 invalid_argument "malformed JSON" LabelNames application/json '{"matchers":'
cerr connect_json_not_object 400 invalid_argument "not an object" LabelNames application/json '[1]'
cerr connect_wrong_type 400 invalid_argument "field 'start'" LabelNames application/json '{"start":"soon"}'
cerr connect_int64_range 400 invalid_argument "out of range" LabelNames application/json '{"start":"99999999999999999999"}'
cerr connect_bad_protobuf 400 invalid_argument "malformed protobuf" LabelNames application/proto $'\x0a\xff\xff'
cerr connect_bad_selector 400 invalid_argument "" SelectSeries application/json \
	"{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{a=\",\"step\":10}"
cerr connect_two_group_by 400 invalid_argument "one label" SelectSeries application/json \
	"{\"profileTypeID\":\"$CPU\",\"groupBy\":[\"a\",\"b\"]}"
# every method refuses its bad input
cerr connect_profile_types_bad_range 400 invalid_argument "start is after end" ProfileTypes \
	application/json '{"start":"2000","end":"1000"}'
cerr connect_series_bad_matcher 400 invalid_argument "" Series application/json '{"matchers":["{a"]}'
cerr connect_merge_profile_bad_type 400 invalid_argument "profile_typeID" SelectMergeProfile \
	application/json '{"profileTypeID":"a:b"}'
cerr connect_stats_bad_body 400 invalid_argument "malformed protobuf" GetProfileStats \
	application/proto $'\x08'
cerr connect_negative_max_nodes 400 invalid_argument "max_nodes" SelectMergeStacktraces \
	application/json "{\"profileTypeID\":\"$CPU\",\"maxNodes\":-1}"
cerr connect_label_values_no_name 400 invalid_argument "label name" LabelValues application/json '{}'
cerr connect_call_site_filter_refused 501 unimplemented "stack_trace_selector" SelectMergeStacktraces \
	application/json "{\"profileTypeID\":\"$CPU\",\"stackTraceSelector\":{\"callSite\":[{\"name\":\"main\"}]}}"
cerr connect_tree_format_refused 501 unimplemented "PROFILE_FORMAT_TREE" SelectMergeStacktraces \
	application/json "{\"profileTypeID\":\"$CPU\",\"format\":\"PROFILE_FORMAT_TREE\"}"
cerr connect_average_refused 501 unimplemented "AVERAGE" SelectSeries application/json \
	"{\"profileTypeID\":\"$CPU\",\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\"}"
cerr connect_unknown_method 404 unimplemented "no method 'Nope'" Nope application/json '{}'
cerr connect_bad_content_type 415 invalid_argument "Content-Type" LabelNames text/plain '{}'
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H 'Content-Encoding: gzip' --data-binary '{}' "$URL/querier.v1.QuerierService/LabelNames")
[ "$st" = 400 ] && jq -r .message "$T/ans" | grep -q "not valid gzip" && pass connect_bad_gzip ||
	fail connect_bad_gzip "$st $(cat "$T/ans")"
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H 'Content-Encoding: br' --data-binary '{}' "$URL/querier.v1.QuerierService/LabelNames")
[ "$st" = 501 ] && [ "$(jq -r .code "$T/ans")" = unimplemented ] && pass connect_unknown_encoding ||
	fail connect_unknown_encoding "$st $(cat "$T/ans")"
st=$(curl -s -o "$T/ans" -w '%{http_code}' "$URL/querier.v1.QuerierService/ProfileTypes")
[ "$st" = 405 ] && [ "$(jq -r .code "$T/ans")" = unimplemented ] && pass connect_get_refused ||
	fail connect_get_refused "$st $(cat "$T/ans")"
# Grafana's health check is ProfileTypes with an empty binary body.
st=$(curl -s -o "$T/ans" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' \
	--data-binary '' "$URL/querier.v1.QuerierService/ProfileTypes")
[ "$st" = 200 ] && [ -s "$T/ans" ] && pass connect_health_check_binary ||
	fail connect_health_check_binary "$st"

kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_connect
else
	fail server_clean_exit_after_connect "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
