#!/usr/bin/env bash
# The agent survives a server restart: while the server is down its profiles
# wait in the spool (retried with backoff); once the server is back every one
# of them arrives, none dropped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root agent_restart

start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 && spid=$SPID URL=$HURL ||
	{ fail server_start "$(cat "$T/server.log")"; finish; }
PORT=${URL##*:}
start_hearth "$T/agent.log" agent --server "$URL" --interval 1 -F 49 \
	--spool-dir "$T/spool" --listen 127.0.0.1:0 && apid=$SPID AURL=$HURL || { fail agent_start "$(cat "$T/agent.log")"; finish; }
sent_some() { [ "$(metric "$AURL" hearth_agent_sent_total)" -gt 0 ] 2>/dev/null; }
wait_until 20 sent_some || fail first_push "$(tail -3 "$T/agent.log")"
kill -9 "$spid"
{ wait "$spid"; } 2> /dev/null # gone, its port free for the restart
# failed attempts, summed over reasons (connect while the server is down)
send_fails() {
	curl -s --max-time 10 "$AURL/metrics" |
		awk '$1 ~ /^hearth_agent_send_failures_total[{]/ { s += $2 } END { print s + 0 }'
}
# Two profiles (one a second) wait in the spool and a send has failed. The deadline
# is generous: on a loaded 2-core runner one interval's build (symbolizing the
# host) took longer than 10 s, and only one profile had come in 20 s.
spooling() {
	queued=$(metric "$AURL" hearth_agent_spool_profiles) fails=$(send_fails)
	[ "${queued:-0}" -ge 2 ] && [ "${fails:-0}" -ge 1 ]
}
if wait_for 90 spooling; then
	pass "spooled_while_down ($queued queued, $fails failed attempts)"
else
	fail spooled_while_down "after 90 s with the server down: queued $queued (want >= 2), failed sends $fails (want >= 1)"
fi
start_hearth "$T/server2.log" server --data "$T/data" --listen "127.0.0.1:$PORT" && spid=$SPID URL=$HURL ||
	{ fail server_restart "$(cat "$T/server2.log")"; finish; }
drained() { [ "$(metric "$AURL" hearth_agent_spool_profiles)" = 0 ]; }
if wait_until 30 drained; then
	pass spool_drained_after_restart
else
	fail spool_drained_after_restart "$(metric "$AURL" hearth_agent_spool_profiles) still queued"
fi
# Everything the agent sent is on the server, nothing dropped or refused.
sent=$(metric "$AURL" hearth_agent_sent_total)
dropped=$(metric "$AURL" hearth_agent_spool_dropped_total)
rejected=$(metric "$AURL" hearth_agent_rejected_total)
stored=$(metric "$URL" hearth_store_profiles)
if [ "${sent:-0}" -gt "$queued" ] && [ "${stored:-0}" -ge "$sent" ] && [ "$dropped" = 0 ] && [ "$rejected" = 0 ]; then
	pass "no_profile_lost ($sent sent, $stored stored)"
else
	fail no_profile_lost "sent $sent stored $stored dropped $dropped rejected $rejected"
fi
kill "$apid"
wait "$apid" 2>/dev/null
finish
