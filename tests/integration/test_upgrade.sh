#!/usr/bin/env bash
# Upgrades: a store and an agent spool written by hearth at 102c3ab (the format of
# the first release; tests/fixtures/upgrade-102c3ab) open with this build, the store's
# profiles are served and the spooled ones sent; a store or spool of a newer format
# than this build reads is refused with a message naming the version, and left as it
# was (no crash, nothing deleted).
# test-runner: light (it waits on its server: 0.6 CPU-s in 6 s, in a clean run)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
F=$HEARTH_ROOT/tests/fixtures/upgrade-102c3ab
cp -r "$F/store" "$T/store"
cp -r "$F/spool" "$T/spool"

# ---- the old store: opened, its three profiles served with the same totals ----
start_hearth "$T/server.log" server --data "$T/store" --listen 127.0.0.1:0 --retention 36500d ||
	{ fail old_store_opens "$(cat "$T/server.log")"; finish; }
URL=$HURL
curl -s --max-time 10 -g "$URL/api/profile?format=folded&from=0&until=now&query=fixture.app{}" > "$T/old.folded"
a=$(awk '/fixture_work_a/ { s += $NF } END { print s + 0 }' "$T/old.folded")
b=$(awk '/fixture_work_b/ { s += $NF } END { print s + 0 }' "$T/old.folded")
hosts=$(curl -s --max-time 10 "$URL/api/series?from=0&until=now" | grep -o '"host":"fix[0-9]"' | sort -u | wc -l)
if [ "$a" = 90 ] && [ "$b" = 60 ] && [ "$hosts" = 3 ]; then
	pass "old_store_served (a $a, b $b samples, $hosts hosts)"
else
	fail old_store_served "a $a b $b hosts $hosts: $(head -5 "$T/old.folded")"
fi

# ---- the old spool: an agent of this build sends what the old one left ----
if [ "$(id -u)" = 0 ]; then
	start_hearth "$T/agent.log" agent --server "$URL" --spool-dir "$T/spool" --interval 1 -F 19 \
		--listen 127.0.0.1:0 --host upgrade-host || fail agent_start "$(cat "$T/agent.log")"
	arrived() {
		curl -s --max-time 10 "$URL/api/series?from=0&until=now" | grep -q '"host":"fixture-host"' &&
			[ -z "$(ls "$T/spool" | grep '^spool-0000000000000000000[123]\.bin$')" ]
	}
	if wait_until 30 arrived; then
		n=$(curl -s --max-time 10 "$URL/api/series?from=0&until=now" | grep -o '"host":"fixture-host"' | wc -l)
		pass "old_spool_sent ($n series of fixture-host)"
	else
		fail old_spool_sent "left: $(ls "$T/spool"); $(tail -3 "$T/agent.log")"
	fi
	kill "$SPID" 2>/dev/null
else
	skip old_spool_sent "the agent needs root to load BPF"
fi

# ---- a newer store format: refused by name, not changed ----
cp -r "$F/store" "$T/newstore"
sqlite3 "$T/newstore/hearth.db" "UPDATE meta SET v = 2 WHERE k = 'version'"
sum=$(sha256sum "$T/newstore/hearth.db")
timeout 20 "$HEARTH" server --data "$T/newstore" --listen 127.0.0.1:0 > /dev/null 2> "$T/newstore.err"
rc=$?
if [ $rc = 1 ] && grep -q "version 2" "$T/newstore.err" && grep -q "$T/newstore" "$T/newstore.err" &&
	[ "$(sha256sum "$T/newstore/hearth.db")" = "$sum" ]; then
	pass "newer_store_refused ($(grep -m1 version "$T/newstore.err"))"
else
	fail newer_store_refused "rc $rc: $(cat "$T/newstore.err")"
fi

# ---- a newer spool format: refused by name, every file kept ----
cp -r "$F/spool" "$T/newspool"
f=$T/newspool/spool-00000000000000000002.bin
{ printf 'hearth-spool 2\n'; tail -c +16 "$f"; } > "$f.x" && mv "$f.x" "$f"
before=$(cd "$T/newspool" && sha256sum ./*)
timeout 20 "$HEARTH" agent --server "$URL" --spool-dir "$T/newspool" --listen off > /dev/null 2> "$T/newspool.err"
rc=$?
after=$(cd "$T/newspool" && sha256sum ./*)
if [ $rc = 1 ] && grep -q "spool-00000000000000000002.bin" "$T/newspool.err" &&
	grep -q "version 2" "$T/newspool.err" && [ "$before" = "$after" ]; then
	pass "newer_spool_refused ($(head -1 "$T/newspool.err"))"
else
	fail newer_spool_refused "rc $rc, files kept: $([ "$before" = "$after" ] && echo yes || echo no): $(cat "$T/newspool.err")"
fi
finish
