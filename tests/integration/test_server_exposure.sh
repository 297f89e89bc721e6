#!/usr/bin/env bash
# What hearth exposes (issue 12, item 11): the agent's own listener takes the
# token too; a listen address beyond loopback without a token is warned about
# loudly; the data directory is private; --web-dir serves neither dotfiles nor
# files that symlinks lead outside it; a request path cannot forge a log line.
# test-runner: light (it waits on its servers: 0.9 CPU-s in 6 s, in a clean run)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

# ---- listening beyond loopback without a token ----
# 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails after the
# warning, so nothing is ever exposed by this test.
"$HEARTH" server --data "$T/dw" --listen 192.0.2.1:0 > /dev/null 2> "$T/wide.err"
echo s3cret > "$T/token"
"$HEARTH" server --data "$T/dw2" --listen 192.0.2.1:0 --auth-token-file "$T/token" \
	> /dev/null 2> "$T/wide_tok.err"
if grep -q 'WARNING.*192.0.2.1:0.*no --auth-token-file' "$T/wide.err" &&
	! grep -q WARNING "$T/wide_tok.err"; then
	pass wide_listen_without_token_warns
else
	fail wide_listen_without_token_warns "no token: $(cat "$T/wide.err"); token: $(cat "$T/wide_tok.err")"
fi

# ---- the data directory ----
mkdir -p "$T/web/sub" "$T/outside"
echo '<html>ui</html>' > "$T/web/index.html"
echo 'password=hunter2' > "$T/web/.env"
echo 'outside secret' > "$T/outside/secret.txt"
ln -s "$T/outside/secret.txt" "$T/web/leak.txt"
ln -s "$T/outside" "$T/web/sub/out"
ln -s "$T/web/index.html" "$T/web/alias.html" # inside: still served
mkdir -p "$T/old" && chmod 755 "$T/old"       # a data directory from before
start_hearth "$T/s.log" server --data "$T/new/data" --listen 127.0.0.1:0 --web-dir "$T/web" \
	--log-level debug &&
	U=$HURL || { fail server_start "$(cat "$T/s.log")"; finish; }
modes="$(stat -c %a "$T/new/data") $(stat -c %a "$T/new/data/hearth.db")"
if [ "$modes" = "700 600" ]; then
	pass data_dir_private
else
	fail data_dir_private "data directory and hearth.db modes are $modes, want 700 600"
fi
start_hearth "$T/s_old.log" server --data "$T/old" --listen 127.0.0.1:0 && old=$SPID ||
	fail server_old_start "$(cat "$T/s_old.log")"
if [ "$(stat -c %a "$T/old")" = 700 ] && grep -q "$T/old" "$T/s_old.log"; then
	pass old_data_dir_made_private
else
	fail old_data_dir_made_private "mode $(stat -c %a "$T/old"): $(cat "$T/s_old.log")"
fi
kill "$old" 2>/dev/null

# ---- --web-dir ----
get() { curl -s -o "$T/body" -w '%{http_code}' --max-time 5 "$U$1"; }
st_index=$(get /index.html)
st_alias=$(get /alias.html)
st_env=$(get /.env)
grep -q hunter2 "$T/body" && st_env="$st_env (content served)"
st_leak=$(get /leak.txt)
grep -q 'outside secret' "$T/body" && st_leak="$st_leak (content served)"
st_dir=$(get /sub/out/secret.txt)
grep -q 'outside secret' "$T/body" && st_dir="$st_dir (content served)"
if [ "$st_index$st_alias" = 200200 ] && [[ $st_env == 4?? ]] && [[ $st_leak == 4?? ]] &&
	[[ $st_dir == 4?? ]]; then
	pass web_dir_no_dotfiles_no_symlinks_out
else
	fail web_dir_no_dotfiles_no_symlinks_out "index $st_index, alias $st_alias, .env $st_env, symlinked file $st_leak, symlinked dir $st_dir"
fi

# ---- log lines ----
curl -s -o /dev/null --max-time 5 "$U/nope%0Ats=2026-01-01T00:00:00Z%20level=error%20forged=1"
curl -s -o /dev/null --max-time 5 "$U/nope%0D%1B%5B2J%22"
if ! grep -q '^ts=2026-01-01T00:00:00Z' "$T/s.log" && grep -q 'path=/nope\\x0ats=' "$T/s.log" &&
	! grep -q $'\x1b' "$T/s.log" && ! grep -q $'\r' "$T/s.log"; then
	pass log_path_escaped
else
	fail log_path_escaped "$(grep -a nope -A1 "$T/s.log" | cat -v | head -4)"
fi

# ---- the agent's own listener ----
if [ "$(id -u)" -ne 0 ]; then
	skip agent_listener_takes_token "needs root to load BPF"
	finish
fi
start_hearth "$T/sa.log" server --data "$T/da" --listen 127.0.0.1:0 --auth-token-file "$T/token" &&
	SURL=$HURL || { fail server_a_start "$(cat "$T/sa.log")"; finish; }
start_hearth "$T/agent.log" agent --server "$SURL" --auth-token-file "$T/token" --interval 1 -F 49 \
	--spool-dir "$T/spool" --listen 127.0.0.1:0 && AURL=$HURL ||
	{ fail agent_start "$(cat "$T/agent.log")"; finish; }
st_none=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$AURL/metrics")
st_pprof=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$AURL/debug/pprof/profile?seconds=1")
st_tok=$(curl -s -o "$T/am" -w '%{http_code}' --max-time 5 -H 'Authorization: Bearer s3cret' "$AURL/metrics")
if [ "$st_none$st_pprof$st_tok" = 401401200 ] && grep -q '^hearth_agent_' "$T/am"; then
	pass agent_listener_takes_token
else
	fail agent_listener_takes_token "no token: /metrics $st_none, /debug/pprof/profile $st_pprof; token: $st_tok"
fi
finish
