#!/usr/bin/env bash
# --max-disk as a user meets it: bad sizes and a ClickHouse store refused with
# exit 2 and a sentence, the config key, then a real `hearth server --max-disk 1M`
# fed 2 hours of profiles over HTTP (one every 10 s, about 2 MiB of raw chunks):
# the files stay within the budget, /metrics counts the budget and what it
# downsampled, and every 10 minutes still answer from the rollups, with the exact
# totals that were ingested. The day-long check at full resolution is
# tests/unit/test_store_budget.c.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

# -- flags and config ----------------------------------------------------------
for cmd in server run; do
	out=$("$HEARTH" $cmd --max-disk 1k --data "$T/x" 2>&1)
	rc=$?
	if [ $rc = 2 ] && grep -q "max-disk: '1k' is not a size of at least 1M" <<<"$out"; then
		pass "${cmd}_bad_size_refused"
	else
		fail "${cmd}_bad_size_refused" "rc $rc: $out"
	fi
	out=$("$HEARTH" $cmd --store clickhouse://127.0.0.1:9/db --max-disk 1G 2>&1)
	rc=$?
	if [ $rc = 2 ] && grep -q "embedded store only.*ClickHouse's own TTL" <<<"$out"; then
		pass "${cmd}_clickhouse_refused"
	else
		fail "${cmd}_clickhouse_refused" "rc $rc: $out"
	fi
done
printf '[server]\nmax-disk = 2G\n' > "$T/good.conf"
printf '[server]\nmax-disk = lots\n' > "$T/bad.conf"
out=$("$HEARTH" server --config "$T/good.conf" --print-config 2>&1)
grep -q "^max-disk = 2G" <<<"$out" && pass config_key || fail config_key "$out"
out=$("$HEARTH" server --config "$T/bad.conf" --data "$T/x" 2>&1)
rc=$?
if [ $rc = 2 ] && grep -q "'lots'" <<<"$out" && grep -q "line 2" <<<"$out"; then
	pass config_bad_value
else
	fail config_bad_value "rc $rc: $out"
fi

# -- a server over its budget --------------------------------------------------
BUDGET=$((1 << 20))
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 --max-disk 1M ||
	{ fail server_start "$(cat "$T/server.log")"; finish; }
URL=$HURL
NOW=$(date +%s)
START=$((NOW - NOW % 3600 - 7200)) # the last two whole hours
N=720                              # one profile every 10 s
# Profile i is file p(i % 8): 1500 stacks of one app with pseudo-random counts
# (srand(1): the same files every run). One curl process sends them all.
awk -v dir="$T" 'BEGIN {
	srand(1)
	for (f = 0; f < 8; f++) {
		for (k = 0; k < 1500; k++)
			printf "main;loop;work_%d;leaf_%d %d\n", k % 40, k, 1 + int(rand() * 5000) > (dir "/p" f ".folded")
		close(dir "/p" f ".folded")
	}
}'
awk -v n=$N -v start=$START -v url="$URL" -v dir="$T" 'BEGIN {
	for (i = 0; i < n; i++) {
		t = start + 10 * i
		printf "url = \"%s/ingest?name=budget&format=folded&from=%d&until=%d\"\n", url, t, t + 10
		printf "data-binary = \"@%s/p%d.folded\"\noutput = \"/dev/null\"\n", dir, i % 8
		printf "write-out = \"%%{http_code}\\n\"\n"
		if (i < n - 1) print "next"
	}
}' > "$T/curl.conf"
codes=$(curl -s --max-time 300 -K "$T/curl.conf" | sort | uniq -c | tr -s ' ')
want_total=0
for f in 0 1 2 3 4 5 6 7; do
	want_total=$((want_total + $(awk '{ s += $NF } END { print s }' "$T/p$f.folded") * N / 8))
done
if [ "$codes" = " $N 200" ]; then pass ingest_all; else fail ingest_all "answers: $codes"; fi

bytes=$(metric "$URL" hearth_store_bytes)
files=$(($(stat -c %s "$T/data/hearth.db") + $(stat -c %s "$T/data/hearth.db-wal" 2>/dev/null || echo 0)))
if [ -n "$bytes" ] && [ "$bytes" -le $BUDGET ] && [ "$files" -le $BUDGET ]; then
	pass "within_budget ($bytes bytes on /metrics, $files in the files, budget $BUDGET)"
else
	fail within_budget "metric '$bytes', files $files, budget $BUDGET"
fi
budget=$(metric "$URL" hearth_store_disk_budget_bytes)
down=$(metric "$URL" hearth_store_budget_downsampled_chunks_total)
dropped=$(metric "$URL" hearth_store_budget_dropped_chunks_total)
if [ "$budget" = $BUDGET ] && [ "${down:-0}" -gt 0 ] && [ "$dropped" = 0 ]; then
	pass "metrics ($down chunks downsampled, none dropped)"
else
	fail metrics "budget '$budget' downsampled '$down' dropped '$dropped'"
fi

# Every 10 minutes still answer (rollups), and the 2 h merge has every sample.
tl=$(curl -s --max-time 30 "$URL/api/timeline?query=budget%7B%7D&from=$START&until=$((START + 7200))&step=600s")
steps=$(grep -oE '"values":\[[^]]*\]' <<<"$tl" | head -1 | grep -oE '[0-9]+' | awk '$1 > 0' | wc -l)
[ "$steps" = 12 ] && pass "every_10_min_answers" || fail every_10_min_answers "$tl"
got=$(curl -s --max-time 30 "$URL/api/profile?format=folded&query=budget%7B%7D&from=$START&until=$((START + 7200))" |
	awk '{ s += $NF } END { printf "%.0f\n", s }')
[ "$got" = "$want_total" ] && pass "merge_keeps_every_sample ($got)" ||
	fail merge_keeps_every_sample "got $got of $want_total"
finish
