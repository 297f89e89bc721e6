#!/usr/bin/env bash
# The Debian package: built from a copy of the tree with dpkg-buildpackage (debian/),
# installed on this machine with dpkg -i, used (hearth --version, hearth record -d 1),
# then purged: every file it installed, its conffile and the state directories its
# units make are gone. The units are installed but not enabled. Refuses to run where
# hearth is already installed or /etc/hearth, /var/lib/hearth exist (it would purge them).
# It runs beside other tests: the installed /etc/hearth/hearth.conf holds section
# headers only (dist/hearth.conf), so another test's hearth reads no setting from it.
. "$(dirname "$0")/lib.sh"
need_root package
for t in dpkg-buildpackage dh fakeroot; do
	command -v $t > /dev/null || { fail package_tools "$t missing (scripts/install-deps.sh --test)"; finish; }
done
if dpkg -s hearth > /dev/null 2>&1 || [ -e /etc/hearth ] || [ -e /var/lib/hearth ] ||
	[ -e /var/lib/hearth-server ]; then
	fail package_clean_machine "hearth is installed or /etc/hearth, /var/lib/hearth exist: not touching them"
	finish
fi

# ---- build, timed ----
S=$T/src/hearth
mkdir -p "$S"
tar -C "$HEARTH_ROOT" --exclude=./build --exclude=./.git --exclude=./debian/build \
	--exclude=./tests/ui/node_modules -cf - . | tar -C "$S" -xf -
t0=$SECONDS
(cd "$S" && DEB_BUILD_OPTIONS="nocheck parallel=2" timeout 600 dpkg-buildpackage -b -us -uc) \
	> "$T/build.log" 2>&1
rc=$?
secs=$((SECONDS - t0))
deb=$(ls "$T"/src/hearth_*_amd64.deb 2>/dev/null | head -1)
if [ $rc = 0 ] && [ -n "$deb" ]; then
	pass "package_builds (dpkg-buildpackage -b: $secs s)"
else
	fail package_builds "rc $rc after $secs s: $(tail -5 "$T/build.log")"
	finish
fi
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
missing=""
for f in ./usr/bin/hearth ./etc/hearth/hearth.conf ./lib/systemd/system/hearth-agent.service \
	./lib/systemd/system/hearth-server.service ./lib/systemd/system/hearth-run.service \
	./usr/share/man/man1/hearth.1.gz ./usr/share/man/man1/hearth-agent.1.gz \
	./usr/share/man/man1/hearth-record.1.gz ./usr/share/doc/hearth/README.md.gz; do
	grep -qx "$f" <<<"$contents" || missing="$missing $f"
done
[ -z "$missing" ] && pass package_contents || fail package_contents "missing:$missing"

# ---- install; purged whatever happens next ----
purge() { dpkg --purge hearth > "$T/purge.log" 2>&1; }
trap 'purge; cleanup_lib' EXIT
if timeout 120 dpkg -i "$deb" > "$T/install.log" 2>&1; then
	pass package_installs
else
	fail package_installs "$(tail -5 "$T/install.log")"
	finish
fi
conffiles=$(dpkg-query -W -f='${Conffiles}' hearth)
grep -q '/etc/hearth/hearth.conf' <<<"$conffiles" && pass config_is_conffile ||
	fail config_is_conffile "conffiles: $conffiles"
enabled=$(ls /etc/systemd/system/*.wants/ 2>/dev/null | grep hearth)
[ -z "$enabled" ] && pass units_not_enabled || fail units_not_enabled "$enabled"
v=$(/usr/bin/hearth --version)
[ "$v" = "hearth $("$HEARTH" --version | awk '{ print $2 }')" ] && pass "installed_version ($v)" ||
	fail installed_version "$v"
timeout 60 /usr/bin/hearth record -d 1 -q > "$T/rec.out" 2> "$T/rec.err"
rc=$?
if [ $rc = 0 ] && grep -q 'flat%' "$T/rec.out"; then
	pass "installed_record ($(grep -m1 samples "$T/rec.err"))"
else
	fail installed_record "rc $rc: $(tail -3 "$T/rec.err")"
fi
man -w hearth-agent > /dev/null 2>&1 && pass man_installed || fail man_installed "man -w hearth-agent"

# ---- purge: nothing left ----
files=$(dpkg -L hearth | while read -r f; do [ -f "$f" ] && echo "$f"; done)
# what the units would have made at run time
mkdir -p /var/lib/hearth/agent-spool /var/lib/hearth-server
touch /var/lib/hearth/agent-spool/spool-00000000000000000001.bin
if purge; then
	pass package_purges
else
	fail package_purges "$(tail -5 "$T/purge.log")"
fi
left=""
for f in $files /etc/hearth /var/lib/hearth /var/lib/hearth-server; do
	[ -e "$f" ] && left="$left $f"
done
n=$(wc -w <<<"$files")
if [ -z "$left" ] && [ "$n" -ge 10 ] && ! dpkg -s hearth > /dev/null 2>&1; then
	pass "nothing_left_after_purge ($n files)"
else
	fail nothing_left_after_purge "left:$left ($n files listed)"
fi
finish
