#!/usr/bin/env bash
# hearth servers in front of a ClickHouse cluster: two ClickHouse servers on
# loopback are the two shards of cluster "hearth" (remote_servers), hearth's
# tables are Distributed over them, sharded by series; one `hearth server` in
# front of each shard. Data pushed through either server is read back whole
# through the other (and equals what an embedded store answers for the same
# pushes), and both shards hold part of it.
# test-runner: light (it waits on ClickHouse: ~7 CPU-s, ClickHouse included, in 19 s in a clean run)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/clickhouse_lib.sh"
go_env

start_clickhouse cluster
if [ "${#CH_URLS[@]}" != 2 ]; then
	fail cluster_urls "${CH_URLS[*]}"
	finish
fi
start_hearth "$T/a.log" server --store "${CH_URLS[0]}" --listen 127.0.0.1:0 && A=$HURL ||
	{ fail server_a_start "$(cat "$T/a.log")"; finish; }
start_hearth "$T/b.log" server --store "${CH_URLS[1]}" --listen 127.0.0.1:0 && B=$HURL ||
	{ fail server_b_start "$(cat "$T/b.log")"; finish; }
start_hearth "$T/e.log" server --data "$T/data" --listen 127.0.0.1:0 && E=$HURL ||
	{ fail embedded_start "$(cat "$T/e.log")"; finish; }
pass "cluster_servers_start (${CH_URLS[*]})"

NOW=$(($(date +%s) / 60 * 60))
GOPROF=$HEARTH_ROOT/tests/fuzz/corpus/fuzz_pprof/go_cpu.pb.gz
ok=0 n=0
# 16 services x 2 hosts, alternately through A and B: enough series for both shards.
for i in $(seq 16); do
	for h in h1 h2; do
		via=A
		[ $(((i + ${h#h}) % 2)) = 0 ] && via=B
		printf 'main;svc%d;work%s %d\nmain;svc%d;idle %d\n' "$i" "$h" $((10 + i)) "$i" "$i" > "$T/p.folded"
		q="name=svc$i%7Bhost%3D$h%7D&from=$((NOW - 300 + i * 10))&until=$((NOW - 290 + i * 10))"
		a=$(http_status "${!via}/ingest?$q" "$T/r" --data-binary @"$T/p.folded")
		b=$(http_status "$E/ingest?$q" "$T/r" --data-binary @"$T/p.folded")
		n=$((n + 1))
		[ "$a$b" = 200200 ] && ok=$((ok + 1))
	done
done
for via in A B; do
	http_status "${!via}/ingest?name=go$via&format=pprof&from=$((NOW - 120))&until=$((NOW - 110))" \
		"$T/r" --data-binary @"$GOPROF" > /dev/null
	http_status "$E/ingest?name=go$via&format=pprof&from=$((NOW - 120))&until=$((NOW - 110))" \
		"$T/r" --data-binary @"$GOPROF" > /dev/null
done
[ $ok = $n ] && pass "ingest_through_both ($n pushes)" || fail ingest_through_both "$ok of $n answered 200"

# Both shards hold a fair part of the rows (over a quarter each); together every row.
r0=$(ch_sql "${CH_URLS[0]}" "SELECT count() FROM hearth.samples_local")
r1=$(ch_sql "${CH_URLS[1]}" "SELECT count() FROM hearth.samples_local")
all=$(ch_sql "${CH_URLS[0]}" "SELECT count() FROM hearth.samples")
# (series ids are content hashes, so the split is the same every run; a hash with
# weak low bits once put every series of bench/store on one shard)
if [ "${r0:-0}" -gt $((all / 4)) ] && [ "${r1:-0}" -gt $((all / 4)) ] && [ $((r0 + r1)) = "$all" ]; then
	pass "sharded_by_series ($r0 + $r1 rows)"
else
	fail sharded_by_series "shard rows $r0 $r1, distributed $all"
fi

SERVERS="E A B"
R="from=$((NOW - 900))&until=$NOW"
same series "/api/series?$R" norm_json
same hosts "/api/label/host/values?$R" norm_json
same tree_all "/api/profile?format=tree&$R" norm_json
same tree_h1 "/api/profile?format=tree&query=%7Bhost%3D%22h1%22%7D&$R" norm_json
same topjson "/api/profile?format=topjson&$R" norm_json
same folded "/api/profile?format=folded&$R" sorted
same pprof "/api/profile?format=pprof&query=%7B__name__%3D~%22go.*%22%7D&$R" pprof_top
same diff "/api/diff?left=%7Bhost%3D%22h1%22%7D&right=%7Bhost%3D%22h2%22%7D&$R" norm_json
same timeline "/api/timeline?step=60s&groupBy=host&$R" norm_json
finish
