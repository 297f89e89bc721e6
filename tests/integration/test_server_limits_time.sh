#!/usr/bin/env bash
# Limits of time and values (docs/api.md "Limits: time and values") on
# build/hearth-asan, whose UBSan aborts on any signed overflow: each case is
# answered (a 4xx naming the value, or a saturated figure), the server never
# aborts, and /ingest and /api read unix times by the same rule.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

ASAN_BIN=$HEARTH_ROOT/build/hearth-asan
[ -x "$ASAN_BIN" ] || { fail limits_time "build/hearth-asan is missing (make build/hearth-asan)"; finish; }
MAX=9223372036854775807
N=0

# A (new) hearth-asan server on the same store: sets URL and SLOG.
fresh() {
	N=$((N + 1))
	SLOG=$T/server.$N.log
	HEARTH=$ASAN_BIN start_hearth "$SLOG" server --data "$T/data" --listen 127.0.0.1:0 ||
		{ fail "server_start_$N" "$(cat "$SLOG")"; finish; }
	URL=$HURL
}

# PASS name when the condition held and the server is alive with no sanitizer
# report; FAIL naming the answer (or the report) otherwise. A dead server is
# replaced so later cases still run.
check() { # name, condition (0/1), answer
	local report
	report=$(grep -m3 -E 'runtime error|Sanitizer' "$SLOG")
	if [ "$2" = 1 ] && [ -z "$report" ] && kill -0 "$SPID" 2>/dev/null; then
		pass "$1"
	else
		fail "$1" "${report:-$3}"
		kill -0 "$SPID" 2>/dev/null && [ -z "$report" ] || fresh
	fi
}

# A pprof (uncompressed protobuf) with one sample per VALUE, each on its own
# stack, at TIME_NS for DUR_NS: profile.proto fields written by hand.
pprof() { # out, time_ns, dur_ns, values...
	python3 - "$@" << 'EOF'
import sys
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
def field(n, wire, payload):
    key = varint(n << 3 | wire)
    return key + (varint(payload) if wire == 0 else varint(len(payload)) + payload)
out, t, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
vals = [int(v) for v in sys.argv[4:]]
strings = ["", "samples", "count", "cpu", "nanoseconds"] + ["f%d" % i for i in range(len(vals))]
msg = field(1, 2, field(1, 0, 1) + field(2, 0, 2))  # sample_type samples/count
msg += field(1, 2, field(1, 0, 3) + field(2, 0, 4))  # cpu/nanoseconds
for i, v in enumerate(vals):
    msg += field(2, 2, field(1, 2, varint(i + 1)) + field(2, 2, varint(v) + varint(0)))
    msg += field(4, 2, field(1, 0, i + 1) + field(4, 2, field(1, 0, i + 1)))
    msg += field(5, 2, field(1, 0, i + 1) + field(2, 0, 5 + i))
for s in strings:
    msg += field(6, 2, s.encode())
msg += field(9, 0, t) + field(10, 0, dur)
msg += field(11, 2, field(1, 0, 3) + field(2, 0, 4)) + field(12, 0, 10000000)
open(out, "wb").write(msg)
EOF
}

post() { # path, body-file -> status (answer in $T/ans)
	http_status "$URL$1" "$T/ans" --data-binary @"$2"
}

fresh
NOW=$(date +%s)
printf 'main;work 5\n' > "$T/small.folded"

# 1. A unix time past int64 ns: refused by /ingest and by /api alike (before:
#    until=99999999999 overflowed, UBSan aborted, the normal build stored 2216).
for t in 99999999999 20000000000 9223372037; do
	st=$(post "/ingest?name=big&until=$t" "$T/small.folded")
	st2=$(http_status "$URL/api/profile?from=1&until=$t" "$T/ans2")
	check "unix_time_${t}_refused_by_ingest_and_api" \
		"$([ "$st" = 400 ] && [ "$st2" = 400 ] && grep -q "invalid time ..$t" "$T/ans" &&
			grep -q "invalid time ..$t" "$T/ans2" && echo 1)" "ingest $st $(cat "$T/ans"); api $st2 $(cat "$T/ans2")"
done
# The same digits in ms mean the same instant on both paths.
MS=$(((NOW - 30) * 1000))
st=$(post "/ingest?name=msapp&from=$MS&until=$((MS + 10000))" "$T/small.folded")
curl -s "$URL/api/profile?format=folded&query=msapp%7B%7D&from=$((MS - 1000))&until=$((MS + 1000))" > "$T/ms.out"
check unix_ms_same_instant_on_ingest_and_api "$([ "$st" = 200 ] && grep -q 'main;work 5' "$T/ms.out" && echo 1)" \
	"ingest $st $(cat "$T/ans"); api $(cat "$T/ms.out")"
# /ingest reads the /api syntax too.
st=$(post "/ingest?name=relapp&from=now-20s&until=now-10s" "$T/small.folded")
check ingest_reads_now_relative "$([ "$st" = 200 ] && echo 1)" "$st $(cat "$T/ans")"

# 2. Times beyond the clock skew are refused with the time and the skew named
#    (the duration clamp is checked against retention in test_server).
st=$(post "/ingest?name=future&from=$((NOW + 86400))&until=$((NOW + 86410))" "$T/small.folded")
check folded_a_day_ahead_refused "$([ "$st" = 400 ] && grep -q 'clock skew of 600 s' "$T/ans" && echo 1)" \
	"$st $(cat "$T/ans")"
pprof "$T/future.pb" $(((NOW + 365 * 86400) * 1000000000)) 10000000000 5
st=$(post "/ingest?name=future&format=pprof" "$T/future.pb")
check pprof_a_year_ahead_refused "$([ "$st" = 400 ] && grep -q 'clock skew' "$T/ans" && echo 1)" \
	"$st $(cat "$T/ans")"
st=$(post "/ingest?name=old&from=now-15250w&until=now" "$T/small.folded")
check time_before_1970_refused "$([ "$st" = 400 ] && grep -q 'not after 1970' "$T/ans" && echo 1)" \
	"$st $(cat "$T/ans")"
rej=$(metric "$URL" 'hearth_rejected_requests_total{reason="bad_time"}')
check time_refusals_counted_as_bad_time "$([ "${rej:-0}" -ge 6 ] && echo 1)" "bad_time $rej"

# 3. Values: folded count x period, and pprof samples of INT64_MAX on two
#    stacks, saturate at INT64_MAX in every total (before: tree total -2).
printf 'main;huge 9007199254740992\n' > "$T/huge.folded"
st=$(post "/ingest?name=hugefold&sampleRate=1&from=$((NOW - 40))&until=$((NOW - 30))" "$T/huge.folded")
check folded_count_times_period_no_overflow "$([ "$st" = 200 ] && echo 1)" "$st $(cat "$T/ans")"
# Pyroscope's render path adds those totals too: two folded stacks of 2^53 at
# sampleRate=1 (each saturated to INT64_MAX at ingest) made UBSan abort on
# /pyroscope/render and /pyroscope/render-diff (issue 24, item 9).
printf 'main;huge 9007199254740992\nmain;other 9007199254740992\n' > "$T/huge2.folded"
st=$(post "/ingest?name=hugerender&sampleRate=1&from=$((NOW - 40))&until=$((NOW - 30))" "$T/huge2.folded")
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
st2=$(curl -s -o "$T/render.json" -w '%{http_code}' --max-time 30 -G "$URL/pyroscope/render" \
	--data-urlencode "query=$CPU{service_name=\"hugerender\"}" --data-urlencode "from=$((NOW - 100))" \
	--data-urlencode "until=$((NOW + 100))")
check render_int64max_sums_saturate \
	"$([ "$st" = 200 ] && [ "$st2" = 200 ] && grep -q "\"numTicks\":$MAX," "$T/render.json" && echo 1)" \
	"ingest $st; render $st2 $(head -c 300 "$T/render.json")"
st2=$(curl -s -o "$T/rdiff.json" -w '%{http_code}' --max-time 30 -G "$URL/pyroscope/render-diff" \
	--data-urlencode "leftQuery=$CPU{service_name=\"hugerender\"}" \
	--data-urlencode "rightQuery=$CPU{service_name=\"hugerender\"}" \
	--data-urlencode "leftFrom=$((NOW - 100))" --data-urlencode "leftUntil=$((NOW + 100))" \
	--data-urlencode "rightFrom=$((NOW - 100))" --data-urlencode "rightUntil=$((NOW + 100))")
check render_diff_int64max_sums_saturate \
	"$([ "$st2" = 200 ] && grep -q "\"numTicks\":$MAX," "$T/rdiff.json" && echo 1)" \
	"render-diff $st2 $(head -c 300 "$T/rdiff.json")"
pprof "$T/max.pb" $(((NOW - 30) * 1000000000)) 10000000000 $MAX $MAX
st=$(post "/ingest?name=maxapp&format=pprof" "$T/max.pb")
RANGE="from=$((NOW - 100))&until=$((NOW + 100))"
curl -s "$URL/api/profile?query=maxapp%7B%7D&$RANGE" > "$T/tree.json"
check pprof_int64max_tree_total_saturates \
	"$([ "$st" = 200 ] && grep -q "\"total\":$MAX,\"tree\"" "$T/tree.json" && echo 1)" \
	"ingest $st $(cat "$T/ans"); $(head -c 300 "$T/tree.json")"
# (the text top prints through a double, as go tool pprof does: 2^63 - 1 shows as 2^63)
curl -s "$URL/api/profile?format=top&query=maxapp%7B%7D&$RANGE" > "$T/top.txt"
check pprof_int64max_top_saturates \
	"$(grep -q "Total samples = 922337203685477580[78]$" "$T/top.txt" && ! grep -q -- '-[0-9]' "$T/top.txt" &&
		echo 1)" "$(head -5 "$T/top.txt")"
curl -s "$URL/api/timeline?query=maxapp%7B%7D&$RANGE" > "$T/tl.json"
check pprof_int64max_timeline_saturates \
	"$(grep -q "$MAX" "$T/tl.json" && ! grep -q -- ',-[0-9]' "$T/tl.json" && echo 1)" "$(head -c 300 "$T/tl.json")"
# Every other writer of those sums (issue 24: "a test that feeds INT64_MAX through
# every writer"): the API's formats and the diff (of maxapp), and Connect's merges
# (of hugerender, whose CPU time is INT64_MAX ns per stack), on the ASan
# build, answered 200 with no negative figure (a wrapped sum) and no sanitizer report.
for fmt in folded svg pprof topjson; do
	st=$(curl -s -o "$T/w.$fmt" -w '%{http_code}' --max-time 30 \
		"$URL/api/profile?format=$fmt&query=maxapp%7B%7D&$RANGE")
	check "writer_${fmt}_int64max_saturates" \
		"$([ "$st" = 200 ] && ! grep -aqE -- '(^| |:|")-[0-9]' "$T/w.$fmt" && echo 1)" \
		"$st $(head -c 300 "$T/w.$fmt")"
done
st=$(curl -s -o "$T/w.diff" -w '%{http_code}' --max-time 30 \
	"$URL/api/diff?left=maxapp%7B%7D&right=maxapp%7B%7D&leftfrom=$((NOW - 100))&leftuntil=$((NOW + 100))&rightfrom=$((NOW - 100))&rightuntil=$((NOW + 100))")
# (the sums: the tree's and the table's self and total; a change and its
# interval may be negative)
check writer_diff_int64max_saturates \
	"$([ "$st" = 200 ] && grep -q "$MAX" "$T/w.diff" && jq -e '[(.tree | .. | objects | (.self[]?, .total[]?)),
		(.functions[] | (.self[], .total[])), .left, .right] | all(. >= 0)' "$T/w.diff" > /dev/null && echo 1)" \
	"$st $(head -c 300 "$T/w.diff")"
for m in SelectMergeStacktraces SelectMergeProfile; do
	st=$(curl -s -o "$T/w.$m" -w '%{http_code}' --max-time 30 -H 'Content-Type: application/json' \
		--data-binary "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"hugerender\\\"}\",\"start\":\"$(((NOW - 100) * 1000))\",\"end\":\"$(((NOW + 100) * 1000))\"}" \
		"$URL/querier.v1.QuerierService/$m")
	check "writer_connect_${m}_int64max_saturates" \
		"$([ "$st" = 200 ] && grep -q "$MAX" "$T/w.$m" && ! grep -q -- '[[,:]"\?-[0-9]' "$T/w.$m" && echo 1)" \
		"$st $(head -c 300 "$T/w.$m")"
done
pprof "$T/neg.pb" $(((NOW - 30) * 1000000000)) 10000000000 5 -3
st=$(post "/ingest?name=negapp&format=pprof" "$T/neg.pb")
check pprof_negative_sample_refused "$([ "$st" = 400 ] && grep -q 'negative' "$T/ans" && echo 1)" \
	"$st $(cat "$T/ans")"
for _ in 1 2; do post "/ingest?name=maxapp&format=pprof" "$T/max.pb" > /dev/null; done
m=$(metric "$URL" hearth_ingested_samples_total)
check ingested_samples_counter_saturates "$([ "$m" = 18446744073709551615 ] && echo 1)" "counter $m"

# 4. Scan and timeline ranges near INT64_MAX: answered, never an abort.
st=$(http_status "$URL/api/profile?query=maxapp%7B%7D&from=1&until=$MAX" "$T/ans")
check scan_range_to_int64max "$([ "$st" = 200 ] && grep -q "\"total\":$MAX" "$T/ans" && echo 1)" "$st $(head -c 200 "$T/ans")"
st=$(http_status "$URL/api/profile?from=$((MAX - 10))&until=$MAX" "$T/ans")
check scan_last_10ns_of_int64 "$([ "$st" = 200 ] && grep -q '"total":0,' "$T/ans" && echo 1)" "$st $(head -c 200 "$T/ans")"
for q in "from=1&until=$MAX&step=9223372036s" "from=now-15250w&until=$MAX&step=15250w" \
	"from=0&until=$MAX" "from=now-15250w&until=now"; do
	st=$(http_status "$URL/api/timeline?$q" "$T/ans")
	check "timeline_range_${q//[^a-z0-9]/_}" "$([ "$st" = 200 ] || [ "$st" = 400 ] && echo 1)" \
		"$st $(head -c 200 "$T/ans")"
done
st=$(http_status "$URL/api/profile?from=1&until=now&step=9999999999" "$T/ans")
check step_seconds_overflow_refused "$([ "$st" = 400 ] && grep -q 9999999999 "$T/ans" && echo 1)" \
	"$st $(head -c 200 "$T/ans")"
finish
