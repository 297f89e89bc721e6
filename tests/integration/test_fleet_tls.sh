#!/usr/bin/env bash
# docs/install.md's fleet recipe, end to end, from the page's own text (issue 30,
# item 3): its openssl and token commands, its [server] and [agent] sections
# (SERVER -> localhost, /etc/hearth and the credential directory -> $T/etc, port 0).
# The server answers HTTPS only, the token is still required on it, curl and
# `hearth query` reach it with the certificate as CA and not without it; the agent
# pushes over HTTPS (root: BPF) and refuses a server its CAs do not vouch for;
# `hearth run` serves HTTPS too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
command -v openssl > /dev/null || { fail prerequisites "openssl is missing: run scripts/install-deps.sh --test"; finish; }

DOC=$HEARTH_ROOT/docs/install.md
mkdir -p "$T/etc"
# The indented (code) lines of the fleet section, in order, blocks apart by a blank line.
awk '/^## A fleet/ { on = 1; next } on && /^## / { exit }
	on && /^       / { sub(/^       /, ""); print; blank = 0; next }
	on && /^$/ && !blank { print ""; blank = 1 }' "$DOC" > "$T/recipe"
local_paths() { # the recipe's names for this test's
	sed -e "s|/run/credentials/hearth-server.service/token|$T/etc/server.token|" \
		-e "s|/run/credentials/hearth-server.service/cert|$T/etc/server.crt|" \
		-e "s|/run/credentials/hearth-server.service/key|$T/etc/server.key|" \
		-e "s|/etc/hearth/|$T/etc/|g" -e 's|SERVER|localhost|g' -e 's|0\.0\.0\.0:4100|127.0.0.1:0|'
}
grep -E '^(openssl|head) ' "$T/recipe" | local_paths > "$T/setup.sh"
awk '/^\[server\]/ { on = 1 } on && /^$/ { exit } on' "$T/recipe" | local_paths > "$T/server.conf"
awk '/^\[agent\]/ { on = 1 } on && /^$/ { exit } on' "$T/recipe" | local_paths > "$T/agent.conf"
if [ "$(wc -l < "$T/setup.sh")" = 2 ] && grep -q '^tls-key = ' "$T/server.conf" &&
	grep -q '^tls-ca = ' "$T/agent.conf" && grep -q '^server = https://localhost:4100$' "$T/agent.conf"; then
	pass recipe_read
else
	fail recipe_read "commands: $(cat "$T/setup.sh"); server: $(cat "$T/server.conf"); agent: $(cat "$T/agent.conf")"
	finish
fi
(cd "$T" && bash -e "$T/setup.sh") > "$T/setup.log" 2>&1 ||
	{ fail recipe_commands "$(tail -5 "$T/setup.log")"; finish; }
CA=$T/etc/server.crt
TOK=$(cat "$T/etc/server.token")
cp "$T/etc/server.token" "$T/etc/agent.token"

start_hearth "$T/server.log" server --config "$T/server.conf" --data "$T/data" &&
	spid=$SPID || { fail server_start "$(cat "$T/server.log")"; finish; }
PORT=${HURL##*:}
U=https://localhost:$PORT
[[ $HURL == https://* ]] && pass server_prints_https_url || fail server_prints_https_url "$HURL"

# ---- curl ----
st_health=$(http_status "$U/healthz" "$T/h" --cacert "$CA")
st_none=$(http_status "$U/api/labels" "$T/l0" --cacert "$CA")
st_tok=$(http_status "$U/api/labels" "$T/l1" --cacert "$CA" -H "Authorization: Bearer $TOK")
st_login=$(http_status "$U/login.html" "$T/login" --cacert "$CA")
if [ "$st_health$st_none$st_tok$st_login" = 200401200200 ]; then
	pass https_token_still_required
else
	fail https_token_still_required "/healthz $st_health, /api/labels without token $st_none, with $st_tok, login.html $st_login"
fi
curl -s -o /dev/null --max-time 5 "$U/healthz"
rc_noca=$?
curl -s -o /dev/null --max-time 5 "http://localhost:$PORT/healthz"
rc_plain=$?
if [ $rc_noca = 60 ] && [ $rc_plain != 0 ]; then
	pass unverified_and_plain_http_refused
else
	fail unverified_and_plain_http_refused "curl without the CA: rc $rc_noca (want 60); plain http: rc $rc_plain"
fi

# ---- a profile pushed over HTTPS, read back with hearth query ----
now=$(date +%s)
printf 'main;fleet_work;fleet_hot 70\n' > "$T/in.folded"
st=$(http_status "$U/ingest?name=fleetapp&from=$((now - 30))&until=$now" "$T/ing" --cacert "$CA" \
	-H "Authorization: Bearer $TOK" --data-binary @"$T/in.folded")
"$HEARTH" query --server "$U" --tls-ca "$CA" --auth-token-file "$T/etc/server.token" \
	--format folded --from now-5m > "$T/q.out" 2> "$T/q.err"
q_rc=$?
"$HEARTH" query --server "$U" --auth-token-file "$T/etc/server.token" --format folded \
	--from now-5m > /dev/null 2> "$T/q_noca.err"
q_noca=$?
if [ "$st" = 200 ] && [ $q_rc = 0 ] && grep -q 'fleet_hot 70' "$T/q.out" && [ $q_noca != 0 ]; then
	pass query_over_https
else
	fail query_over_https "ingest $st; query rc $q_rc: $(head -c 300 "$T/q.out" "$T/q.err"); without --tls-ca rc $q_noca"
fi

# ---- a bad pair stops the server with GnuTLS's reason ----
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$T/other.key" 2> /dev/null
timeout 10 "$HEARTH" server --data "$T/bad" --listen 127.0.0.1:0 --tls-cert "$CA" \
	--tls-key "$T/other.key" > /dev/null 2> "$T/bad.err"
bad_rc=$?
if [ $bad_rc = 1 ] && grep -q 'do not match' "$T/bad.err"; then
	pass mismatched_key_refused
else
	fail mismatched_key_refused "rc $bad_rc: $(cat "$T/bad.err")"
fi

# ---- beyond loopback, a token over plain HTTP gets a note (TEST-NET-1: the bind fails) ----
"$HEARTH" server --data "$T/w1" --listen 192.0.2.1:0 --auth-token-file "$T/etc/server.token" \
	> /dev/null 2> "$T/wide_plain.err"
"$HEARTH" server --data "$T/w2" --listen 192.0.2.1:0 --auth-token-file "$T/etc/server.token" \
	--tls-cert "$CA" --tls-key "$T/etc/server.key" > /dev/null 2> "$T/wide_tls.err"
if grep -q 'note: listening on 192.0.2.1:0 over plain HTTP' "$T/wide_plain.err" &&
	! grep -q 'note:' "$T/wide_tls.err" && grep -q 'cannot listen on 192.0.2.1:0' "$T/wide_tls.err"; then
	pass clear_text_token_noted
else
	fail clear_text_token_noted "plain: $(cat "$T/wide_plain.err"); TLS: $(cat "$T/wide_tls.err")"
fi

# ---- the agent (root: BPF) ----
if [ "$(id -u)" -ne 0 ]; then
	if [ "${CI:-}" = "true" ]; then fail agent_over_https "needs root to load BPF, and CI must run it"; finish; fi
	skip agent_over_https "needs root to load BPF"
	finish
fi
sed -i "s|https://localhost:4100|$U|" "$T/agent.conf"
start_workload "$W/split" 60 > /dev/null
start_hearth "$T/agent.log" agent --config "$T/agent.conf" --interval 1 -F 49 \
	--spool-dir "$T/spool" --listen 127.0.0.1:0 && AURL=$HURL ||
	{ fail agent_start "$(cat "$T/agent.log")"; finish; }
landed() {
	curl -s --cacert "$CA" -H "Authorization: Bearer $TOK" \
		"$U/api/profile?format=folded&query=%7Bprocess%3D%22split%22%7D&from=now-5m" > "$T/agent.folded" &&
		grep -q split_hot "$T/agent.folded"
}
if wait_until 40 landed; then
	pass agent_over_https
else
	fail agent_over_https "no split profile in 40 s: $(tail -3 "$T/agent.log"); $(curl -s -H "Authorization: Bearer $TOK" "$AURL/metrics" | grep -E 'sent_total|failures_total')"
fi
# Without tls-ca the system's CAs do not vouch for the certificate: nothing is sent.
grep -v '^tls-ca' "$T/agent.conf" > "$T/agent_noca.conf"
start_hearth "$T/agent2.log" agent --config "$T/agent_noca.conf" --interval 1 -F 49 \
	--spool-dir "$T/spool2" --listen 127.0.0.1:0 && A2=$HURL ||
	{ fail agent2_start "$(cat "$T/agent2.log")"; finish; }
refused() {
	[ "$(metric_tok "$A2" 'hearth_agent_send_failures_total{reason="connect"}')" -ge 2 ] 2> /dev/null
}
metric_tok() { # url, name: as metric(), with the token the agent's listener takes
	curl -s --max-time 10 -H "Authorization: Bearer $TOK" "$1/metrics" | awk -v n="$2" '$1 == n { print $2; exit }'
}
if wait_until 30 refused && [ "$(metric_tok "$A2" hearth_agent_sent_total)" = 0 ] &&
	grep -q 'cannot reach the server (SSL certificate problem' "$T/agent2.log"; then
	pass agent_refuses_unverified_server
else
	fail agent_refuses_unverified_server "$(curl -s -H "Authorization: Bearer $TOK" "$A2/metrics" | grep -E 'sent_total|failures_total'); $(tail -2 "$T/agent2.log")"
fi

# ---- hearth run serves HTTPS too ----
kill "$spid" 2> /dev/null
start_hearth "$T/run.log" run --data "$T/rundata" --listen 127.0.0.1:0 -F 49 --interval 1 \
	--tls-cert "$CA" --tls-key "$T/etc/server.key" && RURL=$HURL ||
	{ fail run_start "$(cat "$T/run.log")"; finish; }
st_run=$(http_status "https://localhost:${RURL##*:}/healthz" "$T/rh" --cacert "$CA")
if [[ $RURL == https://* ]] && [ "$st_run" = 200 ]; then
	pass run_serves_https
else
	fail run_serves_https "URL $RURL, /healthz $st_run"
fi
finish
