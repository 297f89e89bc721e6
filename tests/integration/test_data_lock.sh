#!/usr/bin/env bash
# One owner per data directory (issue 30, item 4; docs/storage.md, "One owner
# per data directory"): a second hearth on a --data that a live one holds
# fails at once, with exit status 1 and a message naming the holder (its pid
# and command line); `hearth query --data` and `hearth recover --to` are
# refused the same way; a holder killed with -9 leaves no lock behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

start_hearth "$T/s1.log" server --data "$T/data" --listen 127.0.0.1:0 ||
	{ fail data_lock_start "$(cat "$T/s1.log")"; finish; }
FIRST=$SPID

# the second server: refused before it listens (timeout only guards a hang)
timeout 20 "$HEARTH" server --data "$T/data" --listen 127.0.0.1:0 > /dev/null 2> "$T/s2.log"
rc=$?
if [ $rc = 1 ] && grep -q "in use by pid $FIRST (" "$T/s2.log" &&
	grep -q "server --data $T/data --listen 127.0.0.1:0)" "$T/s2.log"; then
	pass "second_server_refused (exit 1: $(head -c 200 "$T/s2.log"))"
else
	fail second_server_refused "exit $rc: $(cat "$T/s2.log")"
fi
kill -0 "$FIRST" 2>/dev/null && pass first_server_still_runs || fail first_server_still_runs "it exited"

timeout 20 "$HEARTH" query --data "$T/data" --format series > /dev/null 2> "$T/q.log"
rc=$?
if [ $rc = 1 ] && grep -q "in use by pid $FIRST" "$T/q.log" && grep -q -- "--server" "$T/q.log"; then
	pass "query_data_refused_while_owned (exit 1, points to --server)"
else
	fail query_data_refused_while_owned "exit $rc: $(cat "$T/q.log")"
fi

# recover reads a directory no hearth writes meanwhile
timeout 20 "$HEARTH" recover --data "$T/data" --to "$T/new" > /dev/null 2> "$T/r.log"
rc=$?
if [ $rc = 1 ] && grep -q "in use by pid $FIRST" "$T/r.log"; then
	pass "recover_of_an_owned_dir_refused (exit 1)"
else
	fail recover_of_an_owned_dir_refused "exit $rc: $(cat "$T/r.log")"
fi

# killed: the kernel drops its flock, a new server starts on the same store
kill -9 "$FIRST"
wait "$FIRST" 2>/dev/null
if start_hearth "$T/s3.log" server --data "$T/data" --listen 127.0.0.1:0; then
	pass "lock_of_a_killed_server_does_not_block"
else
	fail lock_of_a_killed_server_does_not_block "$(cat "$T/s3.log")"
fi
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null

# stopped cleanly: readers get the store
if timeout 20 "$HEARTH" query --data "$T/data" --format series > "$T/q2.out" 2> "$T/q2.log"; then
	pass "query_data_after_the_owner_stopped"
else
	fail query_data_after_the_owner_stopped "$(cat "$T/q2.log")"
fi
finish
