#!/usr/bin/env bash
# Issue 30, item 10: the CLI as a new user meets it in the first hour.
#  - --listen with a port out of range: exit 2, one line, no beyond-loopback warning first;
#  - hearth query: tree, series, labels, timeline as text (--json keeps the API's JSON),
#    -o FILE, pprof refused on a terminal, no server -> the URL and what to do;
#  - `go tool pprof` names a profile of several processes "N processes", not a library;
#  - server (and run, agent: the same option) log no line per request by default;
#    --log-level debug (or log-level = debug in the config file) does;
#  - hearth record prints one summary line, -v the rest (needs root: last, skipped without).
# (--print-config round trips: test_config.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

# ---- --listen out of range ----
for cmd in server run agent; do
	extra=(--data "$T/never")
	[ $cmd = agent ] && extra=(--server http://127.0.0.1:1)
	"$HEARTH" $cmd --listen 127.0.0.1:99999 "${extra[@]}" > /dev/null 2> "$T/listen.err"
	rc=$?
	if [ $rc = 2 ] && [ "$(wc -l < "$T/listen.err")" = 1 ] &&
		grep -q "^hearth $cmd: --listen: '127.0.0.1:99999' is not HOST:PORT" "$T/listen.err" &&
		! grep -q WARNING "$T/listen.err" && [ ! -e "$T/never" ]; then
		pass "listen_out_of_range_$cmd"
	else
		fail "listen_out_of_range_$cmd" "rc $rc: $(cat "$T/listen.err")"
	fi
done
# beyond loopback and out of range: still the one usage line, not the warning
"$HEARTH" server --listen 0.0.0.0:70000 --data "$T/never" > /dev/null 2> "$T/listen.err"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$T/listen.err")" = 1 ] && ! grep -q WARNING "$T/listen.err"; then
	pass listen_wide_out_of_range_no_warning
else
	fail listen_wide_out_of_range_no_warning "rc $rc: $(cat "$T/listen.err")"
fi
"$HEARTH" server --log-level loud > /dev/null 2> "$T/level.err"
rc=$?
[ $rc = 2 ] && grep -q "^hearth server: --log-level: unknown level 'loud' (error, warn, info, debug)$" "$T/level.err" &&
	pass bad_log_level || fail bad_log_level "rc $rc: $(cat "$T/level.err")"

# ---- a server with two processes' profiles; no request lines by default ----
start_hearth "$T/s.log" server --data "$T/data" --listen 127.0.0.1:0 && U=$HURL ||
	{ fail server_start "$(cat "$T/s.log")"; finish; }
now=$(date +%s)
for proc in xz python3; do
	printf 'main;work;spin 70\nmain;idle 30\n' |
		curl -s -o /dev/null -X POST --data-binary @- \
			"$U/ingest?name=app%7Bprocess%3D$proc%7D&format=folded&from=$((now - 20))&until=$((now - 10))"
done
curl -s -o /dev/null "$U/"
curl -s -o /dev/null "$U/nope"
q() { "$HEARTH" query --server "$U" --from now-5m "$@"; }

# text, not JSON
q --format labels > "$T/labels.txt" 2>&1
if [ "$(cat "$T/labels.txt")" = "$(printf '__name__\n__profile_type__\nprocess\nservice_name')" ]; then
	pass query_labels_text
else
	fail query_labels_text "$(cat "$T/labels.txt")"
fi
q --format series > "$T/series.txt" 2>&1
if grep -qx 'process_cpu:cpu:nanoseconds:cpu:nanoseconds {__name__="app", process="xz", service_name="app"}' "$T/series.txt" &&
	grep -qx '# 2 series' "$T/series.txt" && ! grep -q '[[]{' "$T/series.txt"; then
	pass query_series_text
else
	fail query_series_text "$(cat "$T/series.txt")"
fi
q --format tree > "$T/tree.txt" 2>&1
if grep -qx '# 200 samples in all' "$T/tree.txt" && grep -qE '^ 70\.00%  70\.00%        spin$' "$T/tree.txt" &&
	grep -qE '^100\.00%   0\.00%    main$' "$T/tree.txt"; then
	pass query_tree_text
else
	fail query_tree_text "$(cat "$T/tree.txt")"
fi
q --format timeline > "$T/timeline.txt" 2>&1
# the two pushes fall in one or two 10 s steps: the column sums to 200
sum=$(awk 'NR > 2 { s += $2 } END { print s }' "$T/timeline.txt")
if head -2 "$T/timeline.txt" | grep -q '^time (UTC) *total$' && [ "$sum" = 200 ] &&
	sed -n 3p "$T/timeline.txt" | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z +[0-9]+$'; then
	pass query_timeline_text
else
	fail query_timeline_text "sum $sum: $(head -5 "$T/timeline.txt")"
fi
# --json: the API's JSON as it was
q --format series --json > "$T/series.json" 2>&1
[ "$(jq length "$T/series.json" 2> /dev/null)" = 2 ] && pass query_series_json ||
	fail query_series_json "$(head -c 300 "$T/series.json")"
q --format tree --json | jq -e '.tree.name == "total" and .total == 200' > /dev/null &&
	pass query_tree_json || fail query_tree_json "not the tree's JSON"
q --format top --json > /dev/null 2> "$T/json.err"
rc=$?
[ $rc = 2 ] && grep -q -- "--json goes with --format tree, series, labels or timeline" "$T/json.err" &&
	pass query_json_needs_a_json_format || fail query_json_needs_a_json_format "rc $rc: $(cat "$T/json.err")"

# pprof: not to a terminal (script gives the command one), to -o FILE
if command -v script > /dev/null; then
	script -qec "$HEARTH query --server $U --from now-5m --format pprof" /dev/null > "$T/tty.out" 2>&1
	rc=$?
	if [ $rc = 2 ] && grep -q "not for a terminal: give -o FILE" "$T/tty.out" && ! grep -qa $'\x1f\x8b' "$T/tty.out"; then
		pass query_pprof_not_to_terminal
	else
		fail query_pprof_not_to_terminal "rc $rc: $(head -c 300 "$T/tty.out" | cat -v)"
	fi
else
	skip query_pprof_not_to_terminal "no script(1) to give the command a terminal"
fi
q --format pprof -o "$T/all.pb.gz" > "$T/o.out" 2>&1
rc=$?
if [ $rc = 0 ] && [ ! -s "$T/o.out" ] && [ "$(head -c2 "$T/all.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
	pass query_output_file
else
	fail query_output_file "rc $rc: $(cat "$T/o.out")"
fi
q --format folded -o "$T/nodir/x.folded" 2> "$T/o.err"
rc=$?
[ $rc = 2 ] && grep -q "^hearth query: -o: cannot write '$T/nodir/x.folded'" "$T/o.err" &&
	pass query_output_unwritable || fail query_output_unwritable "rc $rc: $(cat "$T/o.err")"

# go tool pprof names the two-process profile after neither's library
if command -v go > /dev/null; then
	go_env
	go tool pprof -top "$T/all.pb.gz" > "$T/pptop.txt" 2>&1
	if grep -qx 'File: 2 processes' "$T/pptop.txt" && grep -q ' spin$' "$T/pptop.txt"; then
		pass pprof_file_names_processes
	else
		fail pprof_file_names_processes "$(head -5 "$T/pptop.txt")"
	fi
else
	skip pprof_file_names_processes "no go toolchain"
fi

# no server: the URL and what to do, exit 1
"$HEARTH" query --server http://127.0.0.1:1 --format top > /dev/null 2> "$T/noserver.err"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$T/noserver.err")" = 1 ] &&
	grep -q "no hearth server answers at http://127.0.0.1:1 .*'hearth run'.*--server URL.*--data DIR" "$T/noserver.err"; then
	pass query_no_server_says_what_to_do
else
	fail query_no_server_says_what_to_do "rc $rc: $(cat "$T/noserver.err")"
fi

# the default log level: the startup line, no request lines
kill "$SPID"
wait "$SPID" 2> /dev/null
# the same text from the data directory (its owner, the server, has stopped:
# a data directory has one owner)
"$HEARTH" query --data "$T/data" --from now-5m --format tree > "$T/tree_local.txt" 2>&1
diff -q "$T/tree.txt" "$T/tree_local.txt" > /dev/null && pass query_tree_text_data_dir ||
	fail query_tree_text_data_dir "$(diff "$T/tree.txt" "$T/tree_local.txt")"
if grep -q '^hearth server: serving' "$T/s.log" && ! grep -q 'method=' "$T/s.log"; then
	pass no_request_lines_by_default
else
	fail no_request_lines_by_default "$(head -5 "$T/s.log")"
fi
# log-level = debug from the config file: one line per request, static files too
printf '[server]\nlog-level = debug\n' > "$T/debug.conf"
start_hearth "$T/s2.log" server --config "$T/debug.conf" --data "$T/data2" --listen 127.0.0.1:0 && U2=$HURL ||
	{ fail server2_start "$(cat "$T/s2.log")"; finish; }
curl -s -o /dev/null "$U2/"
curl -s -o /dev/null "$U2/nope"
wait_for 5 grep -q 'path=/nope' "$T/s2.log"
if grep -q 'level=debug method=GET path=/ status=200' "$T/s2.log" &&
	grep -q 'level=debug method=GET path=/nope status=404' "$T/s2.log"; then
	pass log_level_debug_logs_requests
else
	fail log_level_debug_logs_requests "$(cat "$T/s2.log")"
fi
kill "$SPID"
# warn: not even the startup line. It would come before the main loop, so once the
# server listens and then exits on SIGTERM its stderr is complete.
"$HEARTH" server --data "$T/data3" --listen 127.0.0.1:0 --log-level warn > "$T/s3.out" 2> "$T/s3.log" &
s3=$!
BG_PIDS+=($s3)
listening() { ss -Hltnp 2> /dev/null | grep -q "pid=$1,"; }
if wait_for 20 listening "$s3"; then
	kill "$s3"
	wait "$s3"
	rc=$?
	[ $rc = 0 ] && [ ! -s "$T/s3.log" ] && pass log_level_warn_quiet ||
		fail log_level_warn_quiet "rc $rc: $(cat "$T/s3.log")"
else
	fail log_level_warn_quiet "not listening after 20 s: $(cat "$T/s3.log")"
fi

# ---- hearth record: one summary line, -v the details ----
if [ "$(id -u)" -ne 0 ]; then
	skip record_one_summary_line "needs root to load BPF"
	finish
fi
pid=$(start_workload "$W/split" 10)
"$HEARTH" record -p "$pid" -F 199 -d 1 -q -o "$T/r.folded" 2> "$T/r.err"
rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$T/r.err")" = 1 ] && grep -qE '^hearth record: [0-9]+ samples, dropped [0-9]+ samples' "$T/r.err"; then
	pass record_one_summary_line
else
	fail record_one_summary_line "rc $rc: $(cat "$T/r.err")"
fi
"$HEARTH" record -p "$pid" -F 199 -d 1 -q -v -o "$T/r.folded" 2> "$T/rv.err"
rc=$?
if [ $rc = 0 ] && grep -q '^hearth record: unwind: ' "$T/rv.err" && grep -qE '^hearth record: [0-9]+ samples' "$T/rv.err"; then
	pass record_verbose_details
else
	fail record_verbose_details "rc $rc: $(cat "$T/rv.err")"
fi
finish
