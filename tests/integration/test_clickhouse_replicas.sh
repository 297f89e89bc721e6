#!/usr/bin/env bash
# Replication: ZooKeeper and two ClickHouse servers as two replicas of one shard
# (scripts/clickhouse-local.sh replicas), hearth's tables ReplicatedMergeTree
# (?replicated=1), one hearth server in front of each replica. What is pushed
# through either server is read back whole through the other, and the data
# stays readable when one replica's ClickHouse is stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"

start_clickhouse replicas
start_hearth "$T/a.log" server --store "${CH_URLS[0]}" --listen 127.0.0.1:0 && A=$HURL ||
	{ fail server_a_start "$(cat "$T/a.log")"; finish; }
start_hearth "$T/b.log" server --store "${CH_URLS[1]}" --listen 127.0.0.1:0 && B=$HURL ||
	{ fail server_b_start "$(cat "$T/b.log")"; finish; }
engine=$(ch_sql "${CH_URLS[1]}" "SELECT engine FROM system.tables WHERE database = 'hearth' AND name = 'samples'")
[ "$engine" = ReplicatedMergeTree ] && pass replicated_tables || fail replicated_tables "engine '$engine'"

NOW=$(($(date +%s) / 60 * 60))
ok=0
for i in $(seq 10); do
	via=A
	[ $((i % 2)) = 0 ] && via=B
	printf 'main;svc%d;work %d\nmain;idle %d\n' "$i" $((10 + i)) "$i" > "$T/p.folded"
	st=$(http_status "${!via}/ingest?name=svc$i&from=$((NOW - 300 + i * 10))&until=$((NOW - 290 + i * 10))" \
		"$T/r" --data-binary @"$T/p.folded")
	[ "$st" = 200 ] && ok=$((ok + 1))
done
[ $ok = 10 ] && pass ingest_through_both_replicas || fail ingest_through_both_replicas "$ok of 10"
R="from=$((NOW - 900))&until=$NOW"
want=$(( (11 + 12 + 13 + 14 + 15 + 16 + 17 + 18 + 19 + 20) + 55 ))
total() { curl -s --max-time 10 "$1/api/profile?format=tree&$R" | jq -r .total; }
whole() { [ "$(total "$A")" = "$want" ] && [ "$(total "$B")" = "$want" ]; }
if wait_until 30 whole; then
	pass "both_replicas_read_everything ($want samples)"
else
	fail both_replicas_read_everything "want $want: A $(total "$A") B $(total "$B")"
fi
SERVERS="A B"
same series "/api/series?$R" norm_json
same tree "/api/profile?format=tree&$R" norm_json
same timeline "/api/timeline?step=60s&groupBy=__name__&$R" norm_json
# One replica down: the other still has every row.
kill -TERM "$(cat "$CH_DIR/ch0/pid")"
got=$(total "$B")
[ "$got" = "$want" ] && pass "replica_survives_other_down ($got)" || fail replica_survives_other_down "got $got"
finish
