#!/usr/bin/env bash
# hearth server's /ingest on the embedded store: auth; every bad input answered
# with a 4xx JSON error naming the problem while the server keeps serving and
# stores nothing of it; the series bound; structured logs and /metrics. (Good
# profiles in every format, read back with their totals: api_suite.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 \
	--max-body-mb 2 --log-level debug && spid=$SPID URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }
NOW=$(date +%s)
FROM=$((NOW - 60)) UNTIL=$((NOW - 50))

# One good profile beside the bad ones: the fixture the checks below count
# against. (Every ingest format read back with its totals is in api_suite.sh, on
# both backends.)
printf 'main;work;hot 70\nmain;work;cold 30\n' > "$T/in.folded"
st=$(http_status "$URL/ingest?name=foldapp%7Benv%3Dtest%7D&from=$FROM&until=$UNTIL&sampleRate=100&spyName=curl" \
	"$T/r1" --data-binary @"$T/in.folded")
[ "$st" = 200 ] && pass fixture_ingest || fail fixture_ingest "status $st: $(cat "$T/r1")"
GOPROF=$HEARTH_ROOT/tests/fuzz/corpus/fuzz_pprof/go_cpu.pb.gz

# Bad input: status, a JSON error naming the problem, nothing stored.
bad() { # name, want-status, want-text, curl args...
	local name=$1 want=$2 text=$3 st
	shift 3
	st=$(http_status "$URL/ingest?$1" "$T/bad.$name" "${@:2}")
	if [ "$st" = "$want" ] && grep -q '^{"error": ".*'"$text" "$T/bad.$name"; then
		pass "bad_input_$name"
	else
		fail "bad_input_$name" "status $st (want $want): $(head -c 300 "$T/bad.$name")"
	fi
}
head -c 2000 /dev/urandom > "$T/random.bin"
head -c 300 "$GOPROF" > "$T/truncated.pb.gz"
printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-after-gzip-header' > "$T/badgzip.bin"
python3 -c '
import sys, zlib
z = zlib.compressobj(9, zlib.DEFLATED, 31)
chunk = bytes(1 << 20)
out = sys.stdout.buffer
for _ in range(257):
    out.write(z.compress(chunk))
out.write(z.flush())' > "$T/bomb.gz"
head -c $((3 << 20)) /dev/zero > "$T/big.bin"
bad malformed_pprof 400 "malformed pprof" "name=x&format=pprof" --data-binary @"$T/random.bin"
bad truncated_pprof 400 "pprof" "name=x&format=pprof" --data-binary @"$T/truncated.pb.gz"
bad invalid_gzip 400 "pprof" "name=x&format=pprof" --data-binary @"$T/badgzip.bin"
bad decompression_bomb 413 "memory budget" "name=x&format=pprof" --data-binary @"$T/bomb.gz"
bad body_too_large 413 "over the limit" "name=x" --data-binary @"$T/big.bin"
bad unknown_format 400 "unknown format 'xml'" "name=x&format=xml" --data-binary @"$T/in.folded"
bad from_after_until 400 "'from' is after 'until'" "name=x&from=$UNTIL&until=$FROM" --data-binary @"$T/in.folded"
labels=$(seq -s, 0 40 | sed 's/\([0-9]*\)/k\1=v/g')
bad too_many_labels 400 "too many labels" "name=x%7B$labels%7D" --data-binary @"$T/in.folded"
bad bad_label_name 400 "invalid label name" "name=x%7B9x%3Dy%7D" --data-binary @"$T/in.folded"
bad malformed_folded 400 "malformed folded" "name=x" --data-binary 'just words'
bad no_name 400 "missing 'name'" "" --data-binary @"$T/in.folded"
for q in '%7Bprocess%3D%3D%22x%22%7D' '%7Bprocess%3D~%22(%22%7D' '%7Bprocess%22%7D'; do
	st=$(http_status "$URL/api/profile?query=$q" "$T/badq")
	if [ "$st" = 400 ] && grep -q '^{"error": ' "$T/badq"; then
		pass "bad_matcher_$q"
	else
		fail "bad_matcher_$q" "status $st: $(cat "$T/badq")"
	fi
done
st=$(http_status "$URL/api/profile?from=now&until=now-1h" "$T/badr")
[ "$st" = 400 ] && grep -q after "$T/badr" && pass query_from_after_until || fail query_from_after_until "$st $(cat "$T/badr")"
# Nothing of the rejected requests was stored: only the good names exist.
curl -s "$URL/api/label/__name__/values?from=$((FROM - 10))&until=now" > "$T/names2.json"
if [ "$(jq -c . "$T/names2.json")" = '["foldapp"]' ] && kill -0 "$spid" && curl -sf "$URL/healthz" > /dev/null; then
	pass rejected_stored_nothing_and_still_serving
else
	fail rejected_stored_nothing_and_still_serving "$(cat "$T/names2.json")"
fi
# a client's 4xx is a request line, at debug (--log-level debug above)
grep -q 'level=debug method=POST path=/ingest status=413' "$T/server.log" && pass structured_log ||
	fail structured_log "$(tail -3 "$T/server.log")"
curl -s --max-time 20 "$URL/metrics" > "$T/metrics"
if grep -q 'hearth_rejected_requests_total{reason="decompression_bomb"} 1' "$T/metrics" &&
	grep -q '^hearth_ingested_profiles_total 1' "$T/metrics" && grep -q hearth_query_duration_seconds_bucket "$T/metrics"; then
	pass metrics
else
	fail metrics "$(grep -E 'rejected|ingested' "$T/metrics")"
fi
kill "$spid"

# Too many series: 429 once the store's bound is reached.
start_hearth "$T/server2.log" server --data "$T/data2" --listen 127.0.0.1:0 \
	--max-series 5 && spid=$SPID URL=$HURL || { fail server2_start "$(cat "$T/server2.log")"; finish; }
for i in $(seq 8); do
	st=$(http_status "$URL/ingest?name=s%7Bi%3D$i%7D" "$T/ser" --data-binary @"$T/in.folded")
	[ "$st" = 200 ] || break
done
[ "$st" = 429 ] && grep -q '^{"error": ' "$T/ser" && pass too_many_series || fail too_many_series "$st $(cat "$T/ser")"
kill "$spid"

# Auth: everything but /healthz needs the bearer token.
echo "tok-$RANDOM" > "$T/token"
start_hearth "$T/server3.log" server --data "$T/data3" --listen 127.0.0.1:0 \
	--auth-token-file "$T/token" && spid=$SPID URL=$HURL || { fail server3_start "$(cat "$T/server3.log")"; finish; }
a=$(http_status "$URL/healthz" "$T/a1")
b=$(http_status "$URL/api/labels" "$T/a2")
c=$(http_status "$URL/ingest?name=x" "$T/a3" --data-binary @"$T/in.folded")
d=$(http_status "$URL/api/labels" "$T/a4" -H "Authorization: Bearer $(cat "$T/token")")
if [ "$a$b$c$d" = 200401401200 ] && grep -q Bearer "$T/a2"; then
	pass auth_token
else
	fail auth_token "$a $b $c $d"
fi
kill "$spid"
# A usage error exits 2 with one sentence.
"$HEARTH" server --listen nonsense --data "$T/d4" 2> "$T/use.err"
rc=$?
[ $rc -eq 2 ] && grep -q "nonsense" "$T/use.err" && [ "$(wc -l < "$T/use.err")" = 1 ] && pass bad_listen || fail bad_listen "exit $rc $(cat "$T/use.err")"
"$HEARTH" server --retention forever 2> "$T/use2.err"
rc=$?
[ $rc -eq 2 ] && grep -q "forever" "$T/use2.err" && pass bad_retention || fail bad_retention "exit $rc $(cat "$T/use2.err")"
finish
