#!/usr/bin/env bash
# Crash safety of the store: a driver appends profiles through the /ingest path
# (pprof encode → decode → store__append_flat, fsync on) and prints "ACK i" after each
# append returned; we SIGKILL it mid-ingest, three times on the same data dir,
# then reopen and check that every acknowledged profile is there with its exact
# total, and that SQLite's integrity check passes. Then the same for a churn of
# processes (a new series per profile, a retention of 1 h of data time, the
# store's garbage collection in every maintenance pass) killed mid-way, twice:
# the store reopens with no stored key naming a lost id, the last acknowledged
# profile is there, and a new process is accepted.
. "$(dirname "$0")/lib.sh"

DRIVER=$HEARTH_ROOT/build/tests/store_driver
if ! make -s -C "$HEARTH_ROOT" build/tests/store_driver >/dev/null 2>&1; then
	fail store_crash "build/tests/store_driver does not build"
	exit 1
fi
DATA=$T/data

for round in 1 2 3; do
	start=$((1700000000 + round * 1000000))
	: > "$T/acks.$round"
	"$DRIVER" ingest "$DATA" $start 1000000 > "$T/acks.$round" 2> "$T/err.$round" &
	pid=$!
	# kill at a different moment each round, once at least a few acks are out
	wait_lines "$T/acks.$round" $((20 * round)) 30 ||
		fail "store_crash round $round" "$(wc -l < "$T/acks.$round") of $((20 * round)) acks in 30 s: $(tail -2 "$T/err.$round")"
	sleep "0.$((RANDOM % 5))" # a random moment: not a wait for anything
	kill -9 $pid
	wait $pid 2>/dev/null
	acked=$(grep -c '^ACK ' "$T/acks.$round")
	if [ "$acked" -lt 1 ]; then
		fail "store_crash round $round" "no profile acknowledged before the kill: $(cat "$T/err.$round")"
		continue
	fi
	if "$DRIVER" verify "$DATA" $start "$acked" > "$T/verify.$round" 2>&1; then
		pass "store_crash round $round: all $acked acknowledged profiles survived kill -9"
	else
		fail "store_crash round $round" "$(tail -3 "$T/verify.$round")"
	fi
done

if command -v sqlite3 >/dev/null; then
	ok=$(sqlite3 "$DATA/hearth.db" 'PRAGMA integrity_check' 2>&1)
	if [ "$ok" = ok ]; then pass "store_crash integrity_check"; else fail "store_crash integrity_check" "$ok"; fi
fi

CHURN=$T/churn
for round in 1 2; do
	start=$((1700000000 + round * 10000000))
	"$DRIVER" churn "$CHURN" $start 1000000 > "$T/cacks.$round" 2> "$T/cerr.$round" &
	pid=$!
	wait_lines "$T/cacks.$round" $((40 * round)) 30 ||
		fail "store_churn round $round" "$(wc -l < "$T/cacks.$round") of $((40 * round)) acks in 30 s: $(tail -2 "$T/cerr.$round")"
	sleep "0.$((RANDOM % 5))" # a random moment: not a wait for anything
	kill -9 $pid
	wait $pid 2>/dev/null
	acked=$(grep -c '^ACK ' "$T/cacks.$round")
	if [ "$acked" -lt 25 ]; then
		fail "store_churn round $round" "only $acked profiles acknowledged (limit 20 series): $(tail -2 "$T/cerr.$round")"
		continue
	fi
	if "$DRIVER" churn-verify "$CHURN" $start "$acked" > "$T/cverify.$round" 2>&1 &&
		! grep -q 'missing' "$T/cverify.$round"; then
		pass "store_churn round $round: $(tail -1 "$T/cverify.$round")"
	else
		fail "store_churn round $round" "$(tail -3 "$T/cverify.$round")"
	fi
done
if command -v sqlite3 >/dev/null; then
	ok=$(sqlite3 "$CHURN/hearth.db" 'PRAGMA integrity_check' 2>&1)
	if [ "$ok" = ok ]; then pass "store_churn integrity_check"; else fail "store_churn integrity_check" "$ok"; fi
fi
exit $FAILS
