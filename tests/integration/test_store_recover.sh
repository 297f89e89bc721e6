#!/usr/bin/env bash
# Damaged stores (issue 12, item 8), through a real `hearth server`:
#  - a chunk whose bytes are garbage (written with the sqlite3 CLI) is skipped:
#    queries over its range answer 200 with the other profiles, the chunk is
#    counted in hearth_store_corrupt_chunks_total and logged;
#  - a database page overwritten with dd makes the server refuse to start with
#    a message naming the file and the recovery command; that command
#    (hearth recover) gives a store the server opens and serves: every
#    profile's samples are there, and new profiles are stored and read back
#    with their own frame names (ids of lost rows are not given again);
#  - several kinds of damage to a bigger store (issue 30, item 5): a leaf page
#    of each table overwritten, the file truncated, rollups garbled with a page
#    of stacks lost, the WAL of a killed server missing. After hearth recover
#    either every query answers (labels, series, tree, top, folded, pprof,
#    timeline through `hearth query --data`; diff through a server), or recover
#    exits non-zero with a line saying what it could not save. The leaf pages
#    case must be recovered (exit 0) and must drop rows, not keep rows that
#    name lost stacks.
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

# ---- several kinds of damage (issue 30, item 5) ----
start_hearth "$T/b1.log" server --data "$T/big" --listen 127.0.0.1:0 ||
	{ fail big_start "$(cat "$T/b1.log")"; finish; }
BURL=$HURL
for i in $(seq 0 39); do # 40 profiles, 8 series, 150 stacks each, most frames unique
	awk -v i=$i 'BEGIN { for (j = 0; j < 150; j++)
		printf "main;mod%d;fn_%d_%d_with_a_longer_name;leaf_%d %d\n", i % 5, i, j, j % 30, j + 1 }' > "$T/b.folded"
	st=$(http_status "$BURL/ingest?name=big%7Bsvc%3Ds$((i % 8))%7D&from=$((NOW - 3000 + i * 60))&until=$((NOW - 2990 + i * 60))" \
		"$T/ingest.out" --data-binary @"$T/b.folded")
	[ "$st" = 200 ] || { fail big_ingest "status $st: $(cat "$T/ingest.out")"; finish; }
done
BIG_RANGE="from=$((NOW - 3600))&until=$NOW"
# the WAL of a killed server: copied before the kill, as a crash leaves it
cp -r "$T/big" "$T/walcase" 2>/dev/null
kill -9 "$SPID"
wait "$SPID" 2>/dev/null
start_hearth "$T/b2.log" server --data "$T/big" --listen 127.0.0.1:0 ||
	{ fail big_restart "$(cat "$T/b2.log")"; finish; }
stop_server # a clean stop: the WAL checkpointed into hearth.db
big_total=$(timeout 60 "$HEARTH" query --data "$T/big" --from now-1h --format folded 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
[ "$big_total" = $((40 * 150 * 151 / 2)) ] && pass "big_store: $big_total samples" ||
	fail big_store "total $big_total, want $((40 * 150 * 151 / 2))"

overwrite_page() { # db, page number: 0xff over it, as dd over a disk block
	local size
	size=$(sqlite3 "$1" 'PRAGMA page_size')
	head -c "$size" /dev/zero | tr '\0' '\377' |
		dd of="$1" bs="$size" seek=$(($2 - 1)) count=1 conv=notrunc 2>/dev/null
}
middle_leaf() { # db, table: a leaf page in the middle of the table, or nothing
	sqlite3 "$1" "SELECT pageno FROM dbstat WHERE name = '$2' AND pagetype = 'leaf' ORDER BY pageno" 2>/dev/null |
		awk '{ p[NR] = $1 } END { if (NR) print p[int((NR + 1) / 2)] }'
}
# Every query of the store in $1 (a recovered one) answers; fails name the query.
all_queries_answer() { # name, dir
	local name=$1 dir=$2 f bad=""
	for f in labels series tree top folded pprof timeline; do
		timeout 60 "$HEARTH" query --data "$dir" --from now-2h --format "$f" > "$T/$name.$f" 2> "$T/$name.$f.err" ||
			bad="$bad $f: $(head -c 200 "$T/$name.$f.err");"
	done
	if start_hearth "$T/$name.srv.log" server --data "$dir" --listen 127.0.0.1:0; then
		local l="leftquery=big%7B%7D&leftfrom=$((NOW - 3600))&leftuntil=$((NOW - 1800))"
		local r="rightquery=big%7B%7D&rightfrom=$((NOW - 1800))&rightuntil=$NOW"
		st=$(http_status "$HURL/api/diff?$l&$r" "$T/$name.diff")
		[ "$st" = 200 ] || bad="$bad diff: status $st $(head -c 200 "$T/$name.diff");"
		for q in "profile?format=tree&query=big%7B%7D&$BIG_RANGE" "timeline?query=big%7B%7D&$BIG_RANGE"; do
			st=$(http_status "$HURL/api/$q" "$T/$name.api")
			[ "$st" = 200 ] || bad="$bad /api/$q: status $st $(head -c 200 "$T/$name.api");"
		done
		stop_server
	else
		bad="$bad server: $(tail -2 "$T/$name.srv.log")"
	fi
	[ -z "$bad" ] && pass "$name: every query answers after recover" || fail "$name" "$bad"
}
# recover DAMAGED into NEW: exit 0 and every query answers, or exit 1 with the
# reason; its exit status in $REC_RC.
recover_case() { # name, damaged dir
	"$HEARTH" recover --data "$2" --to "$T/$1.new" > "$T/$1.rec" 2> "$T/$1.rec.err"
	local rc=$?
	REC_RC=$rc
	if [ $rc = 0 ]; then
		all_queries_answer "$1" "$T/$1.new"
	elif [ $rc = 1 ] && grep -q '^hearth recover: ' "$T/$1.rec.err"; then
		pass "$1: recover exits 1 saying why: $(grep '^hearth recover: ' "$T/$1.rec.err" | tail -1 | head -c 200)"
	else
		fail "$1" "recover exit $rc: $(cat "$T/$1.rec" "$T/$1.rec.err" | tail -5)"
	fi
}

# 1. a leaf page in the middle of each table overwritten
cp -r "$T/big" "$T/leaves"
pages=""
for t in strings functions locations stacks series_stacks chunks; do
	p=$(middle_leaf "$T/leaves/hearth.db" $t)
	[ -n "$p" ] && pages="$pages $t:$p"
done
for tp in $pages; do overwrite_page "$T/leaves/hearth.db" "${tp#*:}"; done
recover_case leaves "$T/leaves"
rc=$REC_RC
cat "$T/leaves.rec" | sed 's/^/  /'
if [ "$rc" = 0 ] && grep -qE 'dropped [1-9][0-9]* stored keys' "$T/leaves.rec" &&
	grep -qE '[1-9][0-9]* rows \([0-9]+ samples\) whose stack or series was lost' "$T/leaves.rec"; then
	pass "leaves_recovered: pages$pages; recover dropped what names lost data"
else
	fail leaves_recovered "pages$pages, exit $rc: $(cat "$T/leaves.rec" "$T/leaves.rec.err" | tail -4)"
fi
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/leaves.folded" 2>/dev/null)
[ "${got:-0}" -gt 0 ] && [ "$got" -lt "$big_total" ] && pass "leaves_partial: $got of $big_total samples saved" ||
	fail leaves_partial "$got of $big_total samples"

# 2. the file truncated to 60 %
cp -r "$T/big" "$T/trunc"
truncate -s $(($(stat -c %s "$T/trunc/hearth.db") * 6 / 10 / 4096 * 4096)) "$T/trunc/hearth.db"
recover_case trunc "$T/trunc"

# 3. rollups that do not decode, and a page of stacks lost
cp -r "$T/big" "$T/rollups"
n=$(sqlite3 "$T/rollups/hearth.db" "UPDATE chunks SET data = x'00ff', totals = x'00' WHERE level > 0; SELECT changes()")
p=$(middle_leaf "$T/rollups/hearth.db" stacks)
[ -n "$p" ] && overwrite_page "$T/rollups/hearth.db" "$p"
recover_case rollups "$T/rollups"
rc=$REC_RC
[ "$rc" = 0 ] && grep -qE '[1-9][0-9]* rollup windows to rebuild' "$T/rollups.rec" &&
	pass "rollups_rebuilt: $n rollups garbled; $(grep -oE '[0-9]+ rollup windows to rebuild' "$T/rollups.rec")" ||
	fail rollups_rebuilt "exit $rc: $(cat "$T/rollups.rec" "$T/rollups.rec.err" | tail -3)"

# 4. the WAL of a killed server missing (its last commits are lost, no page is damaged)
rm -f "$T/walcase/hearth.db-wal"
recover_case walcase "$T/walcase"
finish
