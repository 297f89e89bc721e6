#!/usr/bin/env bash
# make install / make uninstall into a DESTDIR: PREFIX honoured (binary, man pages,
# units with ExecStart pointing at PREFIX's binary, docs), the example config
# installed as /etc/hearth/hearth.conf and valid for every command once its keys
# are uncommented, an edited config kept on uninstall and everything else removed.
# test-runner: serial (it runs make in the tree)
. "$(dirname "$0")/lib.sh"
cd "$HEARTH_ROOT" || exit 1
D=$T/dest
if ! make -s install DESTDIR="$D" PREFIX=/opt/hearth-test > "$T/install.log" 2>&1; then
	fail make_install "$(tail -5 "$T/install.log")"
	finish
fi
missing=""
for f in /opt/hearth-test/bin/hearth /opt/hearth-test/share/man/man1/hearth.1 \
	/opt/hearth-test/share/man/man1/hearth-agent.1 /opt/hearth-test/share/man/man1/hearth-server.1 \
	/opt/hearth-test/lib/systemd/system/hearth-agent.service \
	/opt/hearth-test/lib/systemd/system/hearth-server.service \
	/opt/hearth-test/lib/systemd/system/hearth-run.service \
	/opt/hearth-test/share/doc/hearth/README.md /opt/hearth-test/share/doc/hearth/hearth.conf.example \
	/etc/hearth/hearth.conf; do
	[ -s "$D$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && pass installed_files || fail installed_files "missing:$missing"
v=$("$D/opt/hearth-test/bin/hearth" --version)
[ "$v" = "$("$HEARTH" --version)" ] && pass installed_binary_runs || fail installed_binary_runs "$v"
execs=$(grep -h '^ExecStart=' "$D"/opt/hearth-test/lib/systemd/system/*.service | awk '{ print $1 }' | sort -u)
[ "$execs" = "ExecStart=/opt/hearth-test/bin/hearth" ] && pass units_use_prefix || fail units_use_prefix "$execs"
n_man=$(ls "$D"/opt/hearth-test/share/man/man1/ | wc -l)
n_cmd=$("$HEARTH" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { n++ } END { print n }')
[ "$n_man" = $((n_cmd + 1)) ] && pass "man_page_per_command ($n_man)" || fail man_page_per_command "$n_man pages, $n_cmd commands"

# the installed config changes nothing; each section, uncommented, is valid
conf=$D/etc/hearth/hearth.conf
a=$("$HEARTH" record --config "$conf" --print-config | tail -n +2)
b=$("$HEARTH" record --config /dev/null --print-config | tail -n +2)
[ "$a" = "$b" ] && pass example_config_inert || fail example_config_inert "$(diff <(echo "$a") <(echo "$b"))"
sed 's/^# \([a-z-]* = \)/\1/' "$conf" > "$T/uncommented.conf"
echo token-for-test > "$T/token"
sed -i "s|^auth-token-file = .*|auth-token-file = $T/token|" "$T/uncommented.conf"
bad=""
for c in record run agent server query; do
	"$HEARTH" $c --config "$T/uncommented.conf" --print-config > /dev/null 2> "$T/$c.err" ||
		bad="$bad $c: $(cat "$T/$c.err")"
done
[ -z "$bad" ] && pass example_config_keys_valid || fail example_config_keys_valid "$bad"

# uninstall: everything but an edited config goes
echo "# edited" >> "$conf"
make -s uninstall DESTDIR="$D" PREFIX=/opt/hearth-test > "$T/uninstall.log" 2>&1
left=$(cd "$D" && find . -type f | sort)
if [ "$left" = "./etc/hearth/hearth.conf" ] && grep -q 'kept.*edited' "$T/uninstall.log"; then
	pass uninstall_keeps_only_edited_config
else
	fail uninstall_keeps_only_edited_config "left: $left; $(cat "$T/uninstall.log")"
fi
make -s install DESTDIR="$T/d2" > /dev/null 2>&1 && make -s uninstall DESTDIR="$T/d2" > /dev/null 2>&1
left=$(cd "$T/d2" && find . -type f)
[ -z "$left" ] && pass uninstall_default_prefix_clean || fail uninstall_default_prefix_clean "$left"
finish
