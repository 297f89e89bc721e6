#!/usr/bin/env bash
# Crash safety: profiles are pushed continuously; the server is killed with
# SIGKILL in the middle, restarted on the same data directory, and every
# profile it acknowledged (2xx) must be there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 && spid=$SPID URL=$HURL ||
	{ fail server_start "$(cat "$T/server.log")"; finish; }
PORT=${URL##*:}
printf 'main;crash;a 5\nmain;crash;b 3\n' > "$T/p.folded"
NOW=$(date +%s)
: > "$T/acked"
# The pusher records the id of every acknowledged profile.
(
	i=0
	while [ $i -lt 100000 ]; do
		i=$((i + 1))
		st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --data-binary @"$T/p.folded" \
			"$URL/ingest?name=crash%7Bseq%3D$i%7D&from=$((NOW - 30))&until=$((NOW - 20))")
		[ "$st" = 200 ] && echo "$i" >> "$T/acked"
	done
) &
pusher=$!
BG_PIDS+=($pusher)
# SIGKILL in the middle of the pushes: once 50 are acknowledged (the check wants
# more than 5), while the pusher goes on.
wait_lines "$T/acked" 50 30 ||
	fail pushes_acknowledged "$(cat "$T/acked" 2> /dev/null | wc -l) acknowledged in 30 s (want 50)"
kill -9 "$spid"
{ wait "$spid"; } 2> /dev/null # gone: nothing more is acknowledged, its port is free
kill "$pusher" 2>/dev/null
wait "$pusher" 2>/dev/null
n=$(wc -l < "$T/acked")
start_hearth "$T/server2.log" server --data "$T/data" --listen "127.0.0.1:$PORT" && spid=$SPID URL=$HURL ||
	{ fail server_restart "$(cat "$T/server2.log")"; finish; }
curl -s "$URL/api/label/seq/values?from=$((NOW - 60))&until=$NOW" | tr -d '[]" \n' | tr ',' '\n' | grep . | sort > "$T/stored"
missing=$(sort "$T/acked" | comm -23 - "$T/stored" | head -5)
if [ "$n" -gt 5 ] && [ -z "$missing" ]; then
	pass "sigkill_keeps_acknowledged ($n acknowledged, $(wc -l < "$T/stored") stored)"
else
	fail sigkill_keeps_acknowledged "$n acknowledged; missing: $missing"
fi
# The totals of what was stored are whole profiles (8 samples each).
total=$(curl -s "$URL/api/profile?format=folded&query=crash%7B%7D&from=$((NOW - 60))&until=$NOW" | awk '{ s += $NF } END { print s + 0 }')
stored=$(wc -l < "$T/stored")
[ "$total" = $((stored * 8)) ] && pass no_torn_profiles || fail no_torn_profiles "total $total for $stored profiles"
finish
