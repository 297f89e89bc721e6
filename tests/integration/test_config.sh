#!/usr/bin/env bash
# The config file (docs/config.md): settings reach the command, flags override them,
# --print-config shows the effective settings and where each came from, and every
# mistake (unknown key or section, bad value, bad syntax, missing --config file) is
# exit 2 with a message naming the file and line. Needs no root: nothing samples.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

conf=$T/hearth.conf
cat > "$conf" <<CONF
# global part: every command that has the option
freq = 49
symbol-cache-mb = 64

[record]
duration = 3
top = 5

[agent]
server = http://10.1.2.3:4100
host = "  web 1 # not a comment  "
idle = true
spool-mb = 8

[server]
data = $T/data-from-conf
listen = 127.0.0.1:0
retention = 2d
CONF

# record: global + section values, a flag overriding the file, the line each came from
out=$("$HEARTH" record --config "$conf" --print-config -d 7 2>&1)
rc=$?
# each setting follows a comment line naming where it came from ("key: FILE line N")
has() { grep -qx -- "$2" <<<"$1" && grep -B1 -x -- "$2" <<<"$1" | head -1 | grep -qx -- "$3"; }
if [ $rc = 0 ] && has "$out" "freq = 49" "# freq: $conf line 2" &&
	has "$out" "symbol-cache-mb = 64" "# symbol-cache-mb: $conf line 3" &&
	has "$out" "top = 5" "# top: $conf line 7" &&
	has "$out" "duration = 7" "# duration: command line" && grep -q '^# output: default' <<<"$out"; then
	pass record_print_config
else
	fail record_print_config "rc $rc: $out"
fi

# agent: quoted value kept byte for byte, boolean, its own section; the output is itself
# a valid config file that gives the same settings
out=$("$HEARTH" agent --config "$conf" --print-config 2>&1)
rc=$?
if [ $rc = 0 ] && has "$out" 'host = "  web 1 # not a comment  "' "# host: $conf line 11" &&
	has "$out" "idle = true" "# idle: $conf line 12" &&
	has "$out" "server = http://10.1.2.3:4100" "# server: $conf line 10" &&
	! grep -q '^duration' <<<"$out"; then
	pass agent_print_config
else
	fail agent_print_config "rc $rc: $out"
fi

# round trip, as printed (comments and all): --print-config of file + flags, read back
# with --config alone, gives the same settings (lines that are not comments). A short
# option (-F) and a value with a '#' are where it once broke.
settings() { grep -v '^#'; }
for cmd in record agent server run query; do
	case $cmd in
	record) flags=(-F 49 -d 3 --top 7 -o "$T/x.folded") ;;
	agent) flags=(-F 49 --host "a # b" --server http://127.0.0.1:1) ;;
	server | run) flags=(--listen 127.0.0.1:0 --data "$T/d # x" --retention 2d) ;;
	query) flags=(--from now-5m --format top --max-nodes 9) ;;
	esac
	"$HEARTH" $cmd --config "$conf" --print-config "${flags[@]}" > "$T/printed-$cmd.conf" 2>&1
	rc1=$?
	again=$("$HEARTH" $cmd --config "$T/printed-$cmd.conf" --print-config 2>&1)
	rc2=$?
	if [ $rc1 = 0 ] && [ $rc2 = 0 ] &&
		[ "$(settings <<<"$again")" = "$(settings < "$T/printed-$cmd.conf")" ] &&
		[ "$(settings < "$T/printed-$cmd.conf" | wc -l)" -ge 3 ]; then
		pass "print_config_round_trips_$cmd"
	else
		fail "print_config_round_trips_$cmd" "rc $rc1/$rc2: $(diff <(echo "$again") "$T/printed-$cmd.conf")"
	fi
done

# the settings take effect: a server started from the file alone serves its data dir
start_hearth "$T/server.log" server --config "$conf" || fail server_from_conf "$(cat "$T/server.log")"
if grep -q "serving $T/data-from-conf on http://127.0.0.1:" "$T/server.log" && [ -d "$T/data-from-conf" ] &&
	[ "$(curl -s --max-time 10 "$HURL/healthz" -o /dev/null -w '%{http_code}')" = 200 ]; then
	pass server_uses_conf
else
	fail server_uses_conf "$(cat "$T/server.log")"
fi
[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null

# mistakes: exit 2, one message naming the file and the line
expect_error() { # name, config text, command args, pattern the message must match
	local name=$1 text=$2 args=$3 pat=$4 msg rc
	printf '%b' "$text" > "$T/$name.conf"
	# shellcheck disable=SC2086
	msg=$("$HEARTH" $args --config "$T/$name.conf" 2>&1 >/dev/null)
	rc=$?
	if [ $rc = 2 ] && grep -qE "$pat" <<<"$msg"; then
		pass "error_$name"
	else
		fail "error_$name" "rc $rc: $msg"
	fi
}
expect_error unknown_key '[record]\nfreq = 9\nfrequency = 9\n' "record --print-config" \
	"config file $T/unknown_key.conf, line 3: unknown key 'frequency'"
expect_error unknown_global '# c\nfrek = 9\n' "record --print-config" \
	"line 2: unknown key 'frek' \\(no command has --frek\\)"
expect_error unknown_section '[recrod]\nfreq = 9\n' "record --print-config" \
	"line 1: unknown section \\[recrod\\]"
expect_error bad_value '\n[record]\nfreq = 99999\n' "record --print-config" \
	"freq = 99999', $T/bad_value.conf line 3"
expect_error bad_bool '[agent]\nserver = http://x\nidle = yes\n' "agent --print-config" \
	"line 3: 'idle' is true or false, not 'yes'"
expect_error no_equals '[server]\nlisten 127.0.0.1:0\n' "server --print-config" \
	"line 2: expected 'key = value'"
expect_error open_quote '[server]\nlisten = "127.0.0.1:0\n' "server --print-config" \
	"line 2: quoted value has no closing"
expect_error duplicate '[record]\ntop = 1\n\ntop = 2\n' "record --print-config" \
	"line 4: 'top' is already set on line 2"
expect_error help_key '[record]\nhelp = true\n' "record --print-config" \
	"line 2: 'help' cannot be set"
expect_error nul_byte '[record]\ntop = 1\0\n' "record --print-config" "line 2: a NUL byte"
msg=$("$HEARTH" record --config "$T/missing.conf" --print-config 2>&1)
if [ $? = 2 ] && grep -q "cannot read the config file '$T/missing.conf'" <<<"$msg"; then
	pass missing_explicit_file
else
	fail missing_explicit_file "$msg"
fi
# another command's section is that command's business
printf '[agent]\nnot-an-agent-key = 1\n[record]\ntop = 3\n' > "$T/other.conf"
if "$HEARTH" record --config "$T/other.conf" --print-config | grep -q '^top = 3'; then
	pass other_sections_ignored
else
	fail other_sections_ignored "record read [agent]"
fi

# one return convention: --help and --print-config exit 0 with output on stdout,
# a bad option exit 2 with one message, for every command
for cmd in record run agent server query symbolize recover; do
	h=$("$HEARTH" $cmd --help 2>/dev/null)
	hrc=$?
	"$HEARTH" $cmd --no-such-option > /dev/null 2> "$T/bad.err"
	brc=$?
	if [ $hrc = 0 ] && grep -q -- '--print-config' <<<"$h" && grep -q -- '--config FILE' <<<"$h" &&
		[ $brc = 2 ] && [ "$(wc -l < "$T/bad.err")" = 1 ] && grep -q 'no-such-option' "$T/bad.err"; then
		pass "convention_$cmd"
	else
		fail "convention_$cmd" "help rc $hrc, bad option rc $brc: $(cat "$T/bad.err")"
	fi
done
finish
