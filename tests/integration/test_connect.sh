#!/usr/bin/env bash
# Grafana's Pyroscope data source against hearth, the wire details with curl:
# every method of the Connect API (/querier.v1.QuerierService/*) refuses bad
# input with a Connect error object and the HTTP status the protocol gives its
# code; encodings, methods and content types it does not take are refused the
# same way; and the ASan build exits cleanly after it. (The answers to good
# requests, from an outside Connect client in binary and JSON and with curl,
# against a known fixture on both backends: api_suite.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

SERVER_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$SERVER_BIN" ] || SERVER_BIN=$HEARTH
HEARTH=$SERVER_BIN start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

# ---- the wire, with curl ----
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
call() { # method, content type, body -> status; answer in $T/ans
	curl -s -o "$T/ans" -w '%{http_code}' --max-time 30 -X POST -H "Content-Type: $2" \
		--data-binary "$3" "$URL/querier.v1.QuerierService/$1"
}
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
kill "$spid" 2> /dev/null
wait "$spid"
src=$?
if [ $src = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$T/server.log"; then
	pass server_clean_exit_after_connect
else
	fail server_clean_exit_after_connect "exit $src: $(grep -m3 -E 'Sanitizer|runtime error' "$T/server.log")"
fi
finish
