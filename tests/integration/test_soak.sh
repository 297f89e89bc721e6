#!/usr/bin/env bash
# Soak: a bounded load-and-fault run against one `hearth server`, shaped like
# production. Several agents' worth of pushes (gzipped pprof and folded, valid
# and hostile mixed) and concurrent queries run the whole time (soak_load.py);
# meanwhile the server is SIGKILLed and restarted, its data directory (a small
# tmpfs) fills up and is freed, and after a last kill one chunk is overwritten
# with garbage before the restart. Asserts: every acknowledged profile is
# readable after restart (whole, none torn), no hostile push is stored or gets
# anything but a 4xx, no crash, /healthz answers within 1 s throughout (except
# while the server is down on purpose), peak RSS bounded, a full disk gives 507
# and recovers once space is freed, a corrupt chunk does not break queries over
# other data. Prints the figures (acknowledged/refused pushes, ingest p50/p99,
# max /healthz latency, peak RSS).
#
# SOAK_SECONDS (default 120) is the load time; `--long` makes it 600. Needs
# root (tmpfs mount): skipped with the reason outside CI, a failure under CI.
# It runs beside other tests (shared phase): its bounds are the server's own
# under the load it makes itself. /healthz within 1 s: beside others' builds
# and benches on this 2-core machine (load 10-16, the test at nice 10) its
# slowest was 144 ms of 1082 probes; starved on purpose (load 20-31, two CPU
# hogs at nice 0 against its nice 10) 1.11 s of 647, a failure: the bound
# holds beside two tests at its own priority, not on a machine that starved.
# RSS is the server's own; p99 is printed, not judged.
# test-runner: long (120 s of load: started first among the shared tests)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-120}
[ "${1:-}" = --long ] && SOAK_SECONDS=${SOAK_LONG_SECONDS:-600}
[ "$SOAK_SECONDS" -ge 20 ] 2>/dev/null || { fail soak_args "SOAK_SECONDS must be >= 20, got $SOAK_SECONDS"; finish; }
RSS_PEAK_MB=${SOAK_RSS_PEAK_MB:-640} # a decompression bomb alone may hold 256 MiB + copies
RSS_END_MB=${SOAK_RSS_END_MB:-256}   # what stays once the load is over
TMPFS_MB=${SOAK_TMPFS_MB:-64}
LOAD=$(dirname "$0")/soak_load.py

if [ "$(id -u)" -ne 0 ]; then
	if [ "${CI:-}" = "true" ]; then
		echo "FAIL soak: needs root to mount a tmpfs, and CI must run it"
		exit 1
	fi
	skip soak "needs root to mount a tmpfs"
	exit 0
fi
for c in python3 sqlite3 curl; do
	command -v "$c" > /dev/null || { fail soak_tools "$c is not installed (scripts/install-deps.sh --test)"; finish; }
done

MNT=$T/mnt
DATA=$MNT/data
mkdir -p "$MNT"
soak_cleanup() {
	for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$MNT" && umount "$MNT"
	cleanup_lib
}
trap soak_cleanup EXIT
trap 'exit 143' TERM INT # run.sh's timeout: still unmount on the way out
mount -t tmpfs -o size=${TMPFS_MB}m hearth-soak "$MNT" || { fail soak_mount "mount -t tmpfs on $MNT failed"; finish; }

PORT=0 NSERV=0 SPID=
start_server() {
	NSERV=$((NSERV + 1))
	start_hearth "$T/server$NSERV.log" server --data "$DATA" --listen "127.0.0.1:$PORT" || return 1
	URL=$HURL PORT=${HURL##*:}
	echo "$SPID" > "$T/pid"
	rm -f "$T/down"
}
kill_server() {
	touch "$T/down" # the load generator and prober expect no answer now
	kill -9 "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
}
alive() { kill -0 "$SPID" 2>/dev/null; }
# The load generator in the background for N seconds, phase P; sets GEN.
start_load() { # seconds, phase, extra args...
	local s=$1 p=$2
	shift 2
	python3 "$LOAD" --url "$URL" --seconds "$s" --phase "$p" --pid-file "$T/pid" \
		--down-flag "$T/down" --acked "$T/acked" --stats "$T/stats.$p.json" "$@" \
		> "$T/load.$p.log" 2>&1 &
	GEN=$!
	BG_PIDS+=($GEN)
}
stat_of() { # phase, key: a number from the phase's stats (0 when absent)
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' \
		"$T/stats.$1.json" "$2" 2> /dev/null || echo 0
}
# The phase's failure counters must all be zero.
check_phase() { # phase, counters...
	local p=$1 k v bad=""
	shift
	[ -s "$T/stats.$p.json" ] || { fail "${p}_load_ran" "no stats: $(tail -5 "$T/load.$p.log")"; return; }
	for k in "$@"; do
		v=$(stat_of "$p" "$k")
		[ "$v" = 0 ] || bad="$bad $k=$v"
	done
	for k in healthz_probes query_ok; do # the prober and queriers did run
		[ "$(stat_of "$p" "$k")" -gt 0 ] || bad="$bad $k=0"
	done
	if [ -z "$bad" ]; then
		pass "${p}_no_failures ($(stat_of "$p" valid_acked) acknowledged, $(stat_of "$p" hostile_4xx) hostile refused, $(stat_of "$p" query_ok) queries)"
	else
		fail "${p}_no_failures" "$bad; $(python3 -c 'import json,sys; print("; ".join(json.load(open(sys.argv[1]))["notes"][:5]))' "$T/stats.$p.json")"
	fi
}
post_status() { # name, body file, format, from, until: HTTP status of one push
	curl -s -o "$T/post.out" -w '%{http_code}' --max-time 30 --data-binary @"$2" \
		"$URL/ingest?name=$1&format=$3&from=$4&until=$5"
}
# Seqs of the series matching SELECTOR (one per line, sorted).
series_seqs() { # selector, from, until
	curl -s -G --max-time 60 "$URL/api/series" --data-urlencode "query=$1" \
		--data-urlencode "from=$2" --data-urlencode "until=$3" |
		python3 -c 'import json,sys; [print(s["labels"].get("seq","")) for s in json.load(sys.stdin)]' | sort -u
}
folded_total() { # selector, from, until: total samples of the merged profile
	curl -s -G --max-time 60 "$URL/api/profile" --data-urlencode format=folded \
		--data-urlencode "query=$1" --data-urlencode "from=$2" --data-urlencode "until=$3" |
		awk '{ s += $NF } END { print s + 0 }'
}

T0=$(date +%s)
start_server || { fail server_start "$(cat "$T/server1.log")"; finish; }

# A victim profile three hours back, in a chunk of its own (corrupted at the end).
VT=$((T0 - 3 * 3600))
printf 'main;victim;a 4\n' > "$T/victim.folded"
st=$(post_status 'soakvictim%7Bseq%3D%22v%22%7D' "$T/victim.folded" folded "$VT" $((VT + 10)))
[ "$st" = 200 ] || fail victim_push "got $st: $(cat "$T/post.out")"

# ---- phase 1: load with hostile pushes, SIGKILL and restart half-way ----
P1=$((SOAK_SECONDS * 55 / 100))
P2=$((SOAK_SECONDS - P1))
start_load "$P1" load --agents 4 --queriers 2 --bombs 3
sleep $((P1 / 2)) # half the phase under load before the kill
alive || fail no_crash_before_kill "the server died under load: $(tail -5 "$T/server$NSERV.log")"
kill_server
sleep 0.5 # an outage the load meets (refused connections while the down flag is set)
start_server || { fail server_restart "$(cat "$T/server$NSERV.log")"; finish; }
wait "$GEN"
alive && pass "no_crash_under_load" || fail no_crash_under_load "$(tail -5 "$T/server$NSERV.log")"
check_phase load valid_4xx valid_5xx hostile_not_4xx query_failed healthz_failed healthz_slow server_gone
[ "$(stat_of load valid_acked)" -gt 0 ] && [ "$(stat_of load hostile_4xx)" -gt 0 ] ||
	fail load_pushed "nothing acknowledged or refused: $(tail -3 "$T/load.load.log")"

# ---- phase 2: the data directory fills up, then space is freed ----
ingested() { metric "$URL" hearth_ingested_profiles_total; }
before=$(ingested)
start_load "$P2" full --agents 2 --queriers 1
# The disk fills under load: once this phase's pushes are being stored.
loading() { [ "$(ingested)" -ge $((${before:-0} + 10)) ] 2> /dev/null; }
wait_for 20 loading || fail full_load_started "the server stored $(($(ingested) - ${before:-0})) profiles in 20 s of the phase's load (want 10)"
dd if=/dev/zero of="$MNT/fill" bs=1M > /dev/null 2>&1 # until ENOSPC
# Each big push names 4000 functions of its own: the same names again would be
# stored once, and the pushes after the first would fit in the store's slack.
big() { python3 -c 'import sys
for i in range(4000): print("main;big;f%d_%s %d" % (i, sys.argv[1], 1))' "$1" > "$T/big.folded"; }
full_status="" i=0
while [ $i -lt 30 ]; do
	i=$((i + 1))
	big "b$i"
	st=$(post_status "soakbig%7Bseq%3D%22b$i%22%7D" "$T/big.folded" folded $((T0 - 10)) "$T0")
	case "$st" in
	2??) echo "b$i" >> "$T/acked_big" ;;
	5??) full_status=$st; break ;;
	*) full_status="unexpected $st: $(cat "$T/post.out")"; break ;;
	esac
done
case "$full_status" in
507) pass "disk_full_answers_507 ($full_status after $((i - 1)) big pushes fitted: $(cat "$T/post.out"))" ;;
*) fail disk_full_answers_507 "${full_status:-30 big pushes all acknowledged on a full disk}" ;;
esac
alive || fail no_crash_disk_full "$(tail -5 "$T/server$NSERV.log")"
hz=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$URL/healthz")
[ "${hz%% *}" = 200 ] && awk -v t="${hz##* }" 'BEGIN { exit !(t < 1) }' &&
	pass "healthz_while_disk_full (${hz##* } s)" || fail healthz_while_disk_full "$hz"
st=$(curl -s -o "$T/q.out" -w '%{http_code}' --max-time 30 -G "$URL/api/profile" \
	--data-urlencode 'query=soak{}' --data-urlencode format=top \
	--data-urlencode "from=$((T0 - 60))" --data-urlencode "until=$(($(date +%s) + 60))")
[ "$st" = 200 ] && pass queries_while_disk_full || fail queries_while_disk_full "$st: $(head -c 300 "$T/q.out")"
sleep $((P2 / 3)) # the load goes on against the full disk
rm -f "$MNT/fill"
recovered=""
for i in $(seq 30); do
	st=$(post_status "soakbig%7Bseq%3D%22r$i%22%7D" "$T/victim.folded" folded $((T0 - 10)) "$T0")
	if [ "${st:0:1}" = 2 ]; then
		echo "r$i" >> "$T/acked_big"
		recovered=$i
		break
	fi
	sleep 0.5
done
[ -n "$recovered" ] && pass "recovers_after_space_freed (attempt $recovered)" ||
	fail recovers_after_space_freed "still $st after 15 s: $(cat "$T/post.out")"
wait "$GEN"
alive && pass no_crash_disk_full_phase || fail no_crash_disk_full_phase "$(tail -5 "$T/server$NSERV.log")"
# 5xx are expected while full; a 4xx for a valid push or a non-4xx for a hostile one is not
check_phase full valid_4xx hostile_not_4xx query_failed healthz_failed healthz_slow server_gone

# ---- every acknowledged profile is there after a SIGKILL and restart ----
kill_server
start_server || { fail server_restart2 "$(cat "$T/server$NSERV.log")"; finish; }
T1=$(($(date +%s) + 60))
series_seqs 'soak{}' $((T0 - 60)) "$T1" > "$T/stored"
cut -d' ' -f1 "$T/acked" | sort -u > "$T/acked.seqs"
n_acked=$(wc -l < "$T/acked.seqs")
n_stored=$(wc -l < "$T/stored")
missing=$(comm -23 "$T/acked.seqs" "$T/stored" | head -5 | tr '\n' ' ')
if [ "$n_acked" -gt 0 ] && [ -z "$missing" ]; then
	pass "acknowledged_readable_after_restart ($n_acked acknowledged, $n_stored stored)"
else
	fail acknowledged_readable_after_restart "$n_acked acknowledged, $n_stored stored; missing: $missing"
fi
sort -u "$T/acked_big" 2> /dev/null > "$T/acked_big.seqs"
missing=$(series_seqs 'soakbig{}' $((T0 - 60)) "$T1" | comm -23 "$T/acked_big.seqs" - | head -5 | tr '\n' ' ')
[ -z "$missing" ] && pass "big_acknowledged_readable ($(wc -l < "$T/acked_big.seqs"))" ||
	fail big_acknowledged_readable "missing: $missing"
# whole profiles only (8 samples each), and nothing from a refused push
total=$(folded_total 'soak{}' $((T0 - 60)) "$T1")
[ "$total" = $((n_stored * 8)) ] && pass "no_torn_profiles ($total samples)" ||
	fail no_torn_profiles "total $total for $n_stored profiles of 8"
bad=$(series_seqs 'soakbad{}' $((T0 - 60)) "$T1" | grep -c .)
[ "$bad" = 0 ] && pass no_hostile_push_stored || fail no_hostile_push_stored "$bad soakbad series stored"

vic=$(curl -s -G --max-time 30 "$URL/api/profile" --data-urlencode 'query=soakvictim{}' \
	--data-urlencode format=folded --data-urlencode "from=$VT" --data-urlencode "until=$((VT + 10))")
[ "$vic" = "main;victim;a 4" ] && pass victim_readable_before_corruption ||
	fail victim_readable_before_corruption "got '$vic'"

# ---- a corrupt chunk: garbage in the victim's raw chunk while the server is down ----
kill_server
changed=$(sqlite3 "$DATA/hearth.db" "UPDATE chunks SET data = randomblob(length(data))
	WHERE level = 0 AND t0 >= $VT * 1000000000 AND t0 < ($VT + 10) * 1000000000; SELECT changes();")
[ "$changed" = 1 ] || fail corrupt_one_chunk "expected to overwrite 1 chunk, changed '$changed'"
start_server || { fail server_restart3 "$(cat "$T/server$NSERV.log")"; finish; }
hz=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$URL/healthz")
[ "${hz%% *}" = 200 ] && awk -v t="${hz##* }" 'BEGIN { exit !(t < 1) }' &&
	pass healthz_after_corruption || fail healthz_after_corruption "$hz"
# The victim's own 10 s (read from the raw chunk itself: a wider range may be
# answered from rollups built before the corruption), then everything since.
for q in "soakvictim{} $VT $((VT + 10))" "{} $((VT - 600)) $T1"; do
	set -- $q
	st=$(curl -s -o "$T/q.out" -w '%{http_code}' --max-time 30 -G "$URL/api/profile" \
		--data-urlencode "query=$1" --data-urlencode format=folded \
		--data-urlencode "from=$2" --data-urlencode "until=$3")
	[ "$st" = 200 ] && pass "query_over_corrupt_chunk $1" ||
		fail "query_over_corrupt_chunk $1" "$st: $(head -c 300 "$T/q.out")"
done
total2=$(folded_total 'soak{}' $((T0 - 60)) "$T1")
[ "$total2" = "$total" ] && pass "other_data_intact_after_corruption ($total2 samples)" ||
	fail other_data_intact_after_corruption "total $total2, was $total"
alive && pass no_crash_after_corruption || fail no_crash_after_corruption "$(tail -5 "$T/server$NSERV.log")"

# ---- no sanitizer report or abort in any server log ----
crash=$(grep -lE 'AddressSanitizer|runtime error:|Segmentation fault|Assertion .* failed|Aborted' "$T"/server*.log | head -3)
[ -z "$crash" ] && pass no_crash_reports || fail no_crash_reports "$crash: $(grep -hE 'ERROR|runtime error' $crash | head -3)"

# ---- memory and figures ----
peak=0
for p in load full; do
	v=$(stat_of $p rss_peak_bytes)
	[ "$v" -gt "$peak" ] && peak=$v
done
end=$(stat_of full rss_last_bytes)
[ "$peak" -gt 0 ] && [ "$peak" -le $((RSS_PEAK_MB << 20)) ] && [ "$end" -le $((RSS_END_MB << 20)) ] &&
	pass "rss_bounded (peak $((peak >> 20)) MiB <= $RSS_PEAK_MB, at the end $((end >> 20)) MiB <= $RSS_END_MB)" ||
	fail rss_bounded "peak $((peak >> 20)) MiB (limit $RSS_PEAK_MB), at the end $((end >> 20)) MiB (limit $RSS_END_MB)"
hzmax=$(python3 -c 'import json,sys; print(max(json.load(open(f)).get("healthz_max_ms",0) for f in sys.argv[1:]))' "$T"/stats.*.json)
echo "soak figures ($SOAK_SECONDS s of load, $(($(date +%s) - T0)) s in all):"
echo "  pushes acknowledged: $(( $(stat_of load valid_acked) + $(stat_of full valid_acked) )) valid;" \
	"refused 4xx: $(( $(stat_of load hostile_4xx) + $(stat_of full hostile_4xx) )) hostile;" \
	"5xx while the disk was full: $(stat_of full valid_5xx);" \
	"connection errors while killed: $(( $(stat_of load valid_conn_error) + $(stat_of load hostile_conn_error) ))"
echo "  ingest latency under load: p50 $(stat_of load ingest_p50_ms) ms, p99 $(stat_of load ingest_p99_ms) ms, max $(stat_of load ingest_max_ms) ms"
echo "  queries answered: $(( $(stat_of load query_ok) + $(stat_of full query_ok) )); /healthz max ${hzmax} ms over $(( $(stat_of load healthz_probes) + $(stat_of full healthz_probes) )) probes"
echo "  server RSS: peak $((peak >> 20)) MiB, at the end $((end >> 20)) MiB; store on tmpfs: $(du -sh "$DATA" | cut -f1)"
finish
