#!/usr/bin/env bash
# The systemd units in dist/systemd/: `systemd-analyze verify` finds nothing to say
# about any of them (it does about a broken copy), and the capability set the agent
# and run units keep is exactly enough: hearth record under that set (uid 0, like the
# unit, via setpriv) samples and symbolizes a process whose binary only its owner can
# read, kernel frames included, and without any one of those capabilities it cannot
# (docs/install.md, "Capabilities", has the same figures).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
need_root units
U=$HEARTH_ROOT/dist/systemd

# Copies of the units with ExecStart pointing at the build, man pages from the build.
mkdir -p "$T/units" "$T/man"
for u in "$U"/*.service; do
	sed "s|/usr/bin/hearth|$HEARTH|" "$u" > "$T/units/$(basename "$u")"
done
if bash "$HEARTH_ROOT/tools/gen-man.sh" "$HEARTH" "$T/man/man1" > "$T/genman.log" 2>&1; then
	man_opt=()
	export MANPATH=$T/man
else
	fail gen_man "$(cat "$T/genman.log")"
	man_opt=(--man=no)
fi
# verify exits 0 on lines it ignores: any output at all is a failure
verify() { # unit file
	(cd "$(dirname "$1")" && systemd-analyze verify "${man_opt[@]}" "./$(basename "$1")" 2>&1)
}
n=0
for u in "$T"/units/*.service; do
	out=$(verify "$u")
	if [ $? = 0 ] && [ -z "$out" ]; then
		pass "verify_$(basename "$u" .service)"
	else
		fail "verify_$(basename "$u" .service)" "$out"
	fi
	n=$((n + 1))
done
[ "$n" = 3 ] || fail units_count "expected 3 units in dist/systemd, found $n"
# the check itself must catch a broken unit: a bad value, an unknown key, a missing binary
broken() { # name, sed expression
	sed "$2" "$T/units/hearth-agent.service" > "$T/units/$1.service"
	out=$(verify "$T/units/$1.service")
	if [ -n "$out" ]; then
		pass "verify_catches_$1"
	else
		fail "verify_catches_$1" "systemd-analyze said nothing about it"
	fi
	rm -f "$T/units/$1.service"
}
broken bad_restart 's/^Restart=on-failure/Restart=sometimes/'
broken bad_quota 's/^CPUQuota=.*/CPUQuota=ten/'
broken unknown_key 's/^NoNewPrivileges=/NoNewPrivilege=/'
broken no_binary 's|^ExecStart=[^ ]*|ExecStart=/nonexistent/hearth|'

# PID 1: only under systemd can the units be started here.
pid1=$(ps -o comm= -p 1)
if [ "$pid1" = systemd ]; then
	skip units_started "PID 1 is systemd, but starting units is left to docs/install.md's manual check"
else
	skip units_started "PID 1 is '$pid1', not systemd: the units are verified, not started"
fi

# ---- capabilities: the agent unit's set, each one shown necessary ----
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U/hearth-agent.service" | head -1)
run_caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U/hearth-run.service" | head -1)
[ "$caps" = "$run_caps" ] && pass run_unit_same_caps || fail run_unit_same_caps "agent '$caps', run '$run_caps'"
# settings that take a capability back out of the bounding set (systemd.exec(5)):
# ProtectKernelLogs= drops CAP_SYSLOG, ProtectClock= CAP_SYS_TIME, PrivateDevices=
# CAP_SYS_RAWIO and CAP_MKNOD; none may remove one the unit keeps
for u in hearth-agent hearth-run; do
	clash=""
	grep -qx 'ProtectKernelLogs=yes' "$U/$u.service" && grep -qw CAP_SYSLOG <<<"$caps" &&
		clash="ProtectKernelLogs=yes removes CAP_SYSLOG"
	[ -z "$clash" ] && pass "${u}_keeps_its_caps" || fail "${u}_keeps_its_caps" "$clash"
done
# a binary only its owner (nobody) can read, run by root
priv=$T/priv
mkdir -p "$priv"
cp "$W/syscalls" "$priv/"
chown -R 65534:65534 "$priv"
chmod 700 "$priv"
"$priv/syscalls" 60 > "$T/wl.out" &
wl=$!
BG_PIDS+=($wl)
# its pid line: main is running
wait_lines "$T/wl.out" 1 10 2> /dev/null || fail units_workload_started "no pid line from syscalls in 10 s"
# record under a capability set: "cap1 cap2 ..." as in the unit (CAP_ prefix)
record_with() { # caps, output
	local set
	set=$(tr ' ' '\n' <<<"$1" | sed -n 's/^CAP_\(.*\)/+\L\1/p' | paste -sd,)
	setpriv --bounding-set="-all${set:+,$set}" --inh-caps=-all --no-new-privs \
		"$HEARTH" record -q -d 2 -p "$wl" -o "$2" 2> "$2.err"
}
# user frames named (main of the workload), kernel frames named (no bare kallsyms address)
judge() { # folded file -> "rc user kernel": user=1 if main named, kernel=1 if named
	local f=$1 user=0 kern=0
	grep -qE ';main(;| )' "$f" 2>/dev/null && user=1
	grep -q '_\[k\]' "$f" 2>/dev/null && ! grep -q 'kallsyms\]+0x' "$f" && kern=1
	echo "$user $kern"
}
record_with "$caps" "$T/all.folded"
rc=$?
res=$(judge "$T/all.folded")
if [ $rc = 0 ] && [ "$res" = "1 1" ]; then
	pass "unit_caps_enough ($caps)"
else
	fail unit_caps_enough "rc $rc, user/kernel named: $res; $(tail -2 "$T/all.folded.err")"
fi
for c in $caps; do
	rest=$(tr ' ' '\n' <<<"$caps" | grep -vx "$c" | paste -sd' ')
	record_with "$rest" "$T/no_$c.folded"
	rc=$?
	res=$(judge "$T/no_$c.folded")
	case $c in
	CAP_BPF | CAP_PERFMON) ok=$([ $rc = 1 ] && grep -q "$c" "$T/no_$c.folded.err" && echo y) ;;
	CAP_SYSLOG) ok=$([ $rc = 0 ] && [ "$res" = "1 0" ] && echo y) ;;
	CAP_DAC_READ_SEARCH) ok=$([ $rc = 0 ] && [ "$res" = "0 1" ] && echo y) ;;
	*) ok= ;;
	esac
	if [ "$ok" = y ]; then
		pass "needs_$c (without it: rc $rc, user/kernel named: $res)"
	else
		fail "needs_$c" "without it: rc $rc, user/kernel named $res: $(tail -1 "$T/no_$c.folded.err")"
	fi
done

# the agent itself under the unit's set: its profiles reach a server
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 ||
	{ fail server_start "$(cat "$T/server.log")"; finish; }
set=$(tr ' ' '\n' <<<"$caps" | sed -n 's/^CAP_\(.*\)/+\L\1/p' | paste -sd,)
setpriv --bounding-set="-all,$set" --inh-caps=-all --no-new-privs "$HEARTH" agent --server "$HURL" \
	--interval 1 -F 19 --host unit-caps --spool-dir "$T/spool" --listen off > /dev/null 2> "$T/agent.log" &
BG_PIDS+=($!)
arrived() { curl -s --max-time 5 "$HURL/api/series?from=now-5m" | grep -q '"host":"unit-caps"'; }
if wait_until 30 arrived; then
	pass agent_under_unit_caps_pushes
else
	fail agent_under_unit_caps_pushes "$(tail -3 "$T/agent.log")"
fi
finish
