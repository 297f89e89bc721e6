#!/usr/bin/env bash
# The whole API on the ClickHouse backend: the same profiles (folded, lines,
# pprof) pushed to an embedded-store server and, split between them, to two
# `hearth server --store clickhouse://...` sharing one database; every query
# (series, labels, values, profile as tree/topjson/top/folded/pprof, diff,
# timeline, regex selectors) answers the same from all three, and
# /debug/pprof/profile works through go tool pprof. Also: --store refuses a bad
# URL, and a database of an unknown schema version, with a clear error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
go_env

start_clickhouse start
CH=${CH_URLS[0]}
start_hearth "$T/e.log" server --data "$T/data" --listen 127.0.0.1:0 && E=$HURL ||
	{ fail embedded_start "$(cat "$T/e.log")"; finish; }
start_hearth "$T/c1.log" server --store "$CH" --listen 127.0.0.1:0 && C1=$HURL ||
	{ fail clickhouse_server_start "$(cat "$T/c1.log")"; finish; }
start_hearth "$T/c2.log" server --store "$CH" --listen 127.0.0.1:0 && C2=$HURL ||
	{ fail clickhouse_server2_start "$(cat "$T/c2.log")"; finish; }
pass "clickhouse_servers_start ($CH)"
# A day past retention (7 d), written straight into ClickHouse: the servers'
# minutely maintenance drops its partitions (checked at the end).
OLD=$(($(date +%s) - 10 * 86400))
ch_sql "$CH" "INSERT INTO hearth.samples VALUES (toDate($OLD), intDiv($OLD, 3600), ${OLD}000000000, 10000000000, 1, 2, 3, 4)"
ch_sql "$CH" "INSERT INTO hearth.stacks VALUES (toDate($OLD), 2, [])"

# Minute-aligned times: the embedded store counts a profile in the step where its
# 1-minute rollup starts (docs/clickhouse.md, "Differences"), ClickHouse where it starts.
NOW=$(($(date +%s) / 60 * 60))
W1=$((NOW - 600)) W2=$((NOW - 300))
printf 'main;serve;parse 70\nmain;serve;render 40\nmain;gc 13\n' > "$T/web1.folded"
printf 'main;serve;parse 20\nmain;serve;compress 9\n' > "$T/web2.folded"
printf 'main;query;scan 55\nmain;query;sort 31\nmain;flush 6\n' > "$T/db.folded"
printf 'a;b\na;b\na;c\nz\n' > "$T/in.lines"
GOPROF=$HEARTH_ROOT/tests/fuzz/corpus/fuzz_pprof/go_cpu.pb.gz

# push NAME QUERY FILE [curl args]: to the embedded server and to ClickHouse
# server NAME (C1 or C2), both must answer 200.
push() {
	local via=$1 q=$2 file=$3 a b
	shift 3
	a=$(http_status "$E/ingest?$q" "$T/pe" --data-binary @"$file" "$@")
	b=$(http_status "${!via}/ingest?$q" "$T/pc" --data-binary @"$file" "$@")
	if [ "$a$b" = 200200 ]; then
		pass "ingest_${via}_$(echo "$q" | tr -c 'a-z0-9' _ | cut -c1-40)"
	else
		fail "ingest_$via" "$q: embedded $a $(cat "$T/pe"), clickhouse $b $(cat "$T/pc")"
	fi
}
push C1 "name=web%7Benv%3Dprod%7D&from=$W1&until=$((W1 + 10))&sampleRate=100" "$T/web1.folded"
push C2 "name=web%7Benv%3Dcanary%7D&from=$W2&until=$((W2 + 10))&sampleRate=100" "$T/web2.folded"
push C2 "name=db%7Benv%3Dprod%7D&from=$W2&until=$((W2 + 10))&sampleRate=100" "$T/db.folded"
push C1 "name=lineapp&format=lines&from=$W1&until=$((W1 + 10))" "$T/in.lines"
push C2 "name=goapp&format=pprof&from=$W2&until=$((W2 + 10))" "$GOPROF"

R="from=$((NOW - 900))&until=$NOW"
SERVERS="E C1 C2"
same series "/api/series?$R" norm_json
same labels "/api/labels?$R" norm_json
same env_values "/api/label/env/values?$R" norm_json
same names "/api/label/__name__/values?$R" norm_json
same tree_all "/api/profile?format=tree&$R" norm_json
same tree_web "/api/profile?format=tree&query=web&topRows=5&$R" norm_json
same tree_regex "/api/profile?format=tree&query=%7B__name__%3D~%22web%7Cdb%22%2Cenv!%3D%22canary%22%7D&$R" norm_json
same tree_go_nanos "/api/profile?format=tree&query=goapp&maxNodes=30&$R" norm_json
same topjson "/api/profile?format=topjson&$R" norm_json
same top_text "/api/profile?format=top&query=db&$R" sorted
same folded "/api/profile?format=folded&$R" sorted
same pprof "/api/profile?format=pprof&query=goapp&$R" pprof_top
same pprof_labelled "/api/profile?format=pprof&$R" pprof_top
same diff "/api/diff?left=web%7Benv%3D%22prod%22%7D&right=web%7Benv%3D%22canary%22%7D&$R" norm_json
same timeline_by_name "/api/timeline?step=60s&groupBy=__name__&$R" norm_json
same timeline_by_env "/api/timeline?groupBy=env&query=%7Benv%3D~%22.%2B%22%7D&$R" norm_json
same timeline_all "/api/timeline?step=10s&$R" norm_json

# The totals are the pushed ones (not two equal wrong answers).
tot=$(curl -s "$C1/api/profile?format=tree&query=web&$R" | jq .total)
[ "$tot" = 152 ] && pass web_total_152 || fail web_total_152 "got $tot"

# /debug/pprof/profile: a profile pushed during the wait (through the other
# server) is in the answer, as go tool pprof reads it. When the server begins its
# 3 s window is not observable from here, so one is pushed every 0.3 s until the
# answer comes: those pushed a second or more into the window (their whole-second
# start inside it) are in it, however late the request reached the server.
(curl -s --max-time 30 -o "$T/live.pb.gz" "$C1/debug/pprof/profile?seconds=3") &
lp=$!
printf 'main;livework 50\n' > "$T/live.folded"
pushes=0
while kill -0 "$lp" 2> /dev/null; do
	st=$(http_status "$C2/ingest?name=live&from=$(date +%s)&until=$(($(date +%s) + 1))" "$T/lv" --data-binary @"$T/live.folded")
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

# The data lives in ClickHouse: samples rows, one per (series, time, stack).
n=$(ch_sql "$CH" "SELECT count() FROM hearth.samples")
[ "${n:-0}" -gt 10 ] && pass "samples_in_clickhouse ($n rows)" || fail samples_in_clickhouse "$n"

# hearth run --store: the local agent's profiles go to ClickHouse, and the other
# servers read them (only as root: the agent samples with BPF).
if [ "$(id -u)" = 0 ]; then
	start_hearth "$T/run.log" run --store "$CH" --listen 127.0.0.1:0 --interval 1 -F 49 &&
		rpid=$SPID || fail run_start "$(cat "$T/run.log")"
	run_seen() { curl -s "$C2/api/label/host/values?from=now-5m" | grep -q "$(hostname)"; }
	if [ -n "${rpid:-}" ] && wait_until 20 run_seen; then
		pass run_store_clickhouse
	else
		fail run_store_clickhouse "$(curl -s "$C2/api/series?from=now-5m" | head -c 300); $(tail -3 "$T/run.log")"
	fi
	[ -n "${rpid:-}" ] && kill "$rpid"
else
	skip run_store_clickhouse "needs root to load BPF"
fi

# Retention: the old day's partitions are dropped, today's data stays.
old_gone() {
	[ "$(ch_sql "$CH" "SELECT count() FROM system.parts WHERE database = 'hearth' AND active AND partition = toString(toDate($OLD))")" = 0 ]
}
if wait_until 75 old_gone && [ "$(curl -s "$C1/api/profile?format=tree&query=web&$R" | jq .total)" = 152 ]; then
	pass retention_drops_old_days
else
	fail retention_drops_old_days "$(ch_sql "$CH" "SELECT table, partition FROM system.parts WHERE database = 'hearth' AND active" | tr '\n' ' ')"
fi

# Refusals: a bad URL (usage error, exit 2), an unreachable server, a database
# of another schema version.
"$HEARTH" server --store clickhouse://127.0.0.1/x --listen 127.0.0.1:0 2> "$T/bad1.err"
rc=$?
[ $rc = 2 ] || [ $rc = 1 ] && grep -q "clickhouse://127.0.0.1/x" "$T/bad1.err" && pass bad_store_url ||
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
finish
