#!/usr/bin/env bash
# Damaged stores (issue 12, item 8), through a real `hearth server`:
#  - a chunk whose bytes are garbage (written with the sqlite3 CLI) is skipped:
#    queries over its range answer 200 with the other profiles, the chunk is
#    counted in hearth_store_corrupt_chunks_total and logged;
#  - a database page overwritten with dd makes the server refuse to start with
#    a message naming the file and the recovery command; that command
#    (hearth recover) gives a store the server opens and serves: every
#    profile's samples are there, and new profiles are stored and read back
#    with their own frame names (ids of lost rows are not given again).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

command -v sqlite3 >/dev/null || { fail store_recover "the sqlite3 CLI is missing (scripts/install-deps.sh)"; finish; }


NOW=$(date +%s)
RANGE="from=$((NOW - 600))&until=$NOW"
folded_total() { # url, query
	curl -s --max-time 30 "$1/api/profile?format=folded&query=$2&$RANGE" | awk '{ s += $NF } END { print s + 0 }'
}
stop_server() {
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
}

start_hearth "$T/s1.log" server --data "$T/data" --listen 127.0.0.1:0 ||
	{ fail store_recover_start "$(cat "$T/s1.log")"; finish; }
for i in 1 2 3 4 5 6; do
	printf 'main;work%d;leaf%d %d\nmain;idle 1\n' $i $i $i > "$T/p$i.folded"
	st=$(http_status "$HURL/ingest?name=rec%7Bseq%3D$i%7D&from=$((NOW - 400 + i * 10))&until=$((NOW - 390 + i * 10))" \
		"$T/ingest.out" --data-binary @"$T/p$i.folded")
	[ "$st" = 200 ] || { fail store_recover_ingest "status $st: $(cat "$T/ingest.out")"; finish; }
done
all=$(folded_total "$HURL" 'rec%7B%7D')
[ "$all" = 27 ] && pass "store_recover: 6 profiles stored (27 samples)" || fail store_recover_stored "total $all, want 27"
stop_server

# garbage in the body of profile 3's chunk (4 samples); the rollups dropped, so
# that queries read the raw chunks
sqlite3 "$T/data/hearth.db" "UPDATE chunks SET data = x'deadbeef' WHERE id = (SELECT id FROM chunks WHERE level = 0 ORDER BY t0 LIMIT 1 OFFSET 2); DELETE FROM chunks WHERE level > 0; DELETE FROM pending"
start_hearth "$T/s2.log" server --data "$T/data" --listen 127.0.0.1:0 ||
	{ fail store_recover_restart "$(cat "$T/s2.log")"; finish; }
st=$(http_status "$HURL/api/profile?format=folded&query=rec%7B%7D&$RANGE" "$T/q.out")
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/q.out")
if [ "$st" = 200 ] && [ "$got" = 23 ]; then
	pass "corrupt_chunk_skipped: 200 with the 5 other profiles (23 samples)"
else
	fail corrupt_chunk_skipped "status $st, total $got (want 200, 23): $(head -c 300 "$T/q.out")"
fi
n=$(metric "$HURL" hearth_store_corrupt_chunks_total)
[ "$n" = 1 ] && pass "corrupt_chunk_counted (hearth_store_corrupt_chunks_total 1)" || fail corrupt_chunk_counted "metric '$n'"
grep -q 'quarantine' "$T/s2.log" && pass corrupt_chunk_logged || fail corrupt_chunk_logged "$(tail -3 "$T/s2.log")"
stop_server

# a page of the strings table overwritten: the database no longer opens
page=$(sqlite3 "$T/data/hearth.db" 'PRAGMA page_size')
root=$(sqlite3 "$T/data/hearth.db" "SELECT rootpage FROM sqlite_schema WHERE name = 'strings'")
head -c "$page" /dev/zero | tr '\0' '\377' > "$T/garbage"
dd if="$T/garbage" of="$T/data/hearth.db" bs="$page" seek=$((root - 1)) count=1 conv=notrunc 2>/dev/null
timeout 20 "$HEARTH" server --data "$T/data" --listen 127.0.0.1:0 > /dev/null 2> "$T/s3.log"
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "$T/data/hearth.db" "$T/s3.log" &&
	grep -q "hearth recover --data $T/data --to NEWDIR" "$T/s3.log"; then
	pass "damaged_page_refuses_start (exit $rc, names the file and hearth recover)"
else
	fail damaged_page_refuses_start "exit $rc: $(tail -3 "$T/s3.log")"
fi

# the documented recovery (docs/storage.md, Recovery)
sum_before=$(sha256sum < "$T/data/hearth.db")
if (umask 022 && "$HEARTH" recover --data "$T/data" --to "$T/new") > "$T/recover.out" 2>&1; then
	pass "hearth_recover: $(cat "$T/recover.out")"
else
	fail hearth_recover "$(cat "$T/recover.out")"
fi
# The new store is as private as one the server makes (cli_private_dir): the
# directory 0700, hearth.db 0600, whatever the caller's umask.
modes=$(stat -c '%a' "$T/new" "$T/new/hearth.db" | tr '\n' ' ')
if [ "$modes" = "700 600 " ]; then
	pass "recovered_store_private: modes $modes"
else
	fail recovered_store_private "modes of the directory and hearth.db: $modes, want 700 600"
fi
start_hearth "$T/s4.log" server --data "$T/new" --listen 127.0.0.1:0 ||
	{ fail recovered_store_opens "$(cat "$T/s4.log")"; finish; }
pass recovered_store_opens
got=$(folded_total "$HURL" 'rec%7B%7D')
[ "$got" = 23 ] && pass "recovered_store_serves (23 samples)" || fail recovered_store_serves "total $got, want 23"
printf 'main;fresh_function;fresh_leaf 7\n' > "$T/new.folded"
st=$(http_status "$HURL/ingest?name=after%7Bseq%3D9%7D&from=$((NOW - 100))&until=$((NOW - 90))" \
	"$T/ingest.out" --data-binary @"$T/new.folded")
curl -s "$HURL/api/profile?format=folded&query=after%7B%7D&$RANGE" > "$T/after.folded"
if [ "$st" = 200 ] && grep -q '^main;fresh_function;fresh_leaf 7$' "$T/after.folded"; then
	pass "recovered_store_takes_new_profiles"
else
	fail recovered_store_takes_new_profiles "status $st: $(cat "$T/after.folded")"
fi
# the old profiles' lost names were not given to the new frames
if curl -s "$HURL/api/profile?format=folded&query=rec%7B%7D&$RANGE" | grep -q fresh_; then
	fail lost_ids_not_reused "an old profile shows a new frame name"
else
	pass lost_ids_not_reused
fi
stop_server
[ "$(sha256sum < "$T/data/hearth.db")" = "$sum_before" ] && pass recover_leaves_the_damaged_store ||
	fail recover_leaves_the_damaged_store "hearth.db changed"
finish
