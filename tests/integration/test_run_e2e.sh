#!/usr/bin/env bash
# hearth run as the README starts it: profiles the machine continuously; the
# series list the running processes, the top table of a busy workload shows its
# functions, and `go tool pprof -top` reads /debug/pprof/profile?seconds=3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root run_e2e
go_env

wl=$(start_workload "$W/split" 60)
cd "$T" || exit 1
# Default data directory (./hearth-data); a free port instead of the default one.
start_hearth "$T/run.log" run --listen 127.0.0.1:0 --interval 5 && rpid=$SPID URL=$HURL ||
	{ fail run_start "$(cat "$T/run.log")"; finish; }
grep -q "open $URL" "$T/run.log" && pass prints_url || fail prints_url "$(cat "$T/run.log")"

series_ready() {
	curl -s "$URL/api/series?from=now-5m" > "$T/series.json"
	grep -q '"process":"split"' "$T/series.json"
}
if wait_until 30 series_ready; then
	n=$(grep -o '"process":"[^"]*"' "$T/series.json" | sort -u | wc -l)
	pass "series_list_processes ($n processes)"
else
	fail series_list_processes "$(head -c 500 "$T/series.json")"
fi
curl -s "$URL/api/profile?format=top&query=%7Bprocess%3D%22split%22%7D&from=now-5m" > "$T/top.txt"
if grep -q split_hot_a "$T/top.txt" && grep -q split_hot_b "$T/top.txt"; then
	pass top_shows_workload_functions
else
	fail top_shows_workload_functions "$(head -20 "$T/top.txt")"
fi
# go tool pprof waits 1.5x the seconds by default; on a loaded 2-core runner the
# agent thread can be that late (the live window already goes before the interval's
# build, src/agent/agent.c flush_due): this check is about reading the profile.
go tool pprof -timeout 60 -top "$URL/debug/pprof/profile?seconds=3" > "$T/gotop.txt" 2> "$T/gotop.err"
rc=$?
if [ $rc -eq 0 ] && grep -q split_hot_a "$T/gotop.txt"; then
	pass go_tool_pprof_debug_profile
else
	fail go_tool_pprof_debug_profile "exit $rc: $(cat "$T/gotop.err") $(head -10 "$T/gotop.txt")"
fi
[ -d "$T/hearth-data" ] && pass default_data_dir || fail default_data_dir "no ./hearth-data"
curl -s "$URL/metrics" > "$T/metrics"
grep -qE '^hearth_agent_samples_total [1-9]' "$T/metrics" && grep -qE '^hearth_ingested_profiles_total [1-9]' "$T/metrics" &&
	pass run_metrics || fail run_metrics "$(grep -E 'agent_samples|ingested_profiles' "$T/metrics")"
# hearth query against the running server.
"$HEARTH" query '{process="split"}' --server "$URL" --from now-5m --format top > "$T/qs.txt" 2> "$T/qs.err"
grep -q split_hot_a "$T/qs.txt" && pass query_server || fail query_server "$(cat "$T/qs.err") $(head -5 "$T/qs.txt")"
# pid, tid and comm live in each stack's task location (docs/storage.md, "Series
# identity"), not in series labels: the workload's pid selects its stacks, its
# thread's name groups them, and no answer shows the [task] frame. (Other split
# processes may run beside this test: the workload's share is at most the whole.)
# All four answers over one range that ends at U, once the store holds every
# interval that starts before U (the agent stores them in order: one that
# starts after U is stored last), so none of them sees more data than another.
U=$(($(date +%s%N) / 1000000))
after_u() {
	curl -s -G "$URL/api/profile" --data-urlencode "query={process=\"split\"}" -d format=tree \
		-d "from=$U" > "$T/au.json"
	[ "$(jq -r '.total // 0' "$T/au.json")" -gt 0 ] 2> /dev/null
}
wait_until 30 after_u || fail task_range "no interval after $U stored within 30 s"
ttotal() { # selector [groupBy]
	curl -s -G "$URL/api/profile" --data-urlencode "query=$1" -d format=tree -d from=now-5m \
		-d "until=$U" -d "groupBy=${2:-}" > "$T/tt.json"
	jq -r .total "$T/tt.json"
}
all=$(ttotal '{process="split"}') mine=$(ttotal "{process=\"split\",pid=\"$wl\"}")
none=$(ttotal '{process="split",pid="1"}') bycomm=$(ttotal "{pid=\"$wl\"}" comm)
comms=$(jq -c '[.tree.children[].name]' "$T/tt.json")
if [ "${mine:-0}" -gt 0 ] && [ "$mine" -le "${all:-0}" ] && [ "$none" = 0 ] && [ "$bycomm" = "$mine" ] &&
	[ "$comms" = '["comm=split"]' ]; then
	pass task_pid_comm_per_stack
else
	fail task_pid_comm_per_stack "all $all, pid $wl: $mine, pid 1: $none, by comm $bycomm $comms"
fi
curl -s -G "$URL/api/profile" --data-urlencode "query={pid=\"$wl\"}" -d format=pprof -d from=now-5m -o "$T/task.pb.gz"
if go tool pprof -raw "$T/task.pb.gz" 2> /dev/null | grep -q "pid:\[$wl\]" &&
	! go tool pprof -raw "$T/task.pb.gz" 2> /dev/null | grep -q 'task\]'; then
	pass task_pprof_labels
else
	fail task_pprof_labels "$(go tool pprof -raw "$T/task.pb.gz" 2>&1 | grep -E 'pid|task' | head -5)"
fi
curl -s "$URL/" > "$T/index.html"
cmp -s "$T/index.html" "$HEARTH_ROOT/web/index.html" && pass index_page_is_web_ui ||
	fail index_page_is_web_ui "$(head -c 300 "$T/index.html")"
kill "$rpid"
wait "$rpid"
rc=$?
[ $rc -eq 0 ] && pass clean_exit || fail clean_exit "exit $rc: $(tail -3 "$T/run.log")"
# hearth query on the data directory, after the server stopped.
"$HEARTH" query '{process="split"}' --data "$T/hearth-data" --from now-10m --format top > "$T/q.txt" 2> "$T/q.err"
grep -q split_hot_a "$T/q.txt" && pass query_data_dir || fail query_data_dir "$(cat "$T/q.err") $(head -5 "$T/q.txt")"
# The timeline of one pid sums its stacks as the tree does (on the stopped
# store: nothing arrives between the two answers).
# (whole minutes around all the data, and a step of a minute: the timeline's
# steps cover the range as the tree does)
qf=$((($(date +%s) - 600) / 60 * 60)) qu=$((($(date +%s) + 120) / 60 * 60))
dq() { "$HEARTH" query "{pid=\"$wl\"}" --data "$T/hearth-data" --from "$qf" --until "$qu" --json --format "$@"; }
tl=$(dq timeline --step 60s 2> "$T/dq.err" | jq '[.groups[].values[]] | add') tr=$(dq tree 2>> "$T/dq.err" | jq .total)
[ -n "$tl" ] && [ "$tl" = "$tr" ] && [ "$tr" -gt 0 ] && pass task_timeline_pid ||
	fail task_timeline_pid "timeline $tl, tree $tr $(cat "$T/dq.err")"
kill "$wl" 2>/dev/null
finish
