#!/usr/bin/env bash
# hearth server --scrape-config pulls a real Go program's net/http/pprof
# endpoints (tests/workloads/gopprof): CPU, memory and goroutine profiles are
# stored with the job/instance/service_name/__profile_type__ labels, read back
# by `go tool pprof` in their own units; a selector without a type means CPU and
# types are never summed. Failing targets (connection refused, 404, timeout,
# garbage body) show in /api/targets and /metrics; YAML errors name the line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

# ---- config errors name the file and line, exit 2, before anything is opened ----
yaml_error() { # name, expected line, expected words, yaml
	local name=$1 line=$2 words=$3
	printf '%s\n' "$4" > "$T/$name.yaml"
	${TIMEOUT_WRAP:-} "$HEARTH" server --data "$T/never" --listen 127.0.0.1:0 --scrape-config "$T/$name.yaml" \
		> /dev/null 2> "$T/$name.err"
	local rc=$?
	if [ "$rc" -eq 2 ] && grep -q "$T/$name.yaml:$line: .*$words" "$T/$name.err" && [ ! -e "$T/never" ]; then
		pass "yaml_$name: $(head -c 160 "$T/$name.err")"
	else
		fail "yaml_$name" "exit $rc, want 2 and '$name.yaml:$line: ...$words': $(cat "$T/$name.err")"
	fi
}
yaml_error syntax 4 "did not find expected" 'scrape_configs:
  - job_name: a
    static_configs: [targets: ["x:1"]
  - job_name: b'
yaml_error unknown_key 4 "unknown key 'scrape_intervall'" 'scrape_configs:
  - job_name: a
    static_configs: [{targets: ["127.0.0.1:9"]}]
    scrape_intervall: 10s'
yaml_error bad_duration 3 "'10 seconds' is not a duration" 'scrape_configs:
  - job_name: a
    scrape_interval: 10 seconds
    static_configs: [{targets: ["127.0.0.1:9"]}]'
yaml_error timeout_over_interval 2 "scrape_timeout (20s) is longer than scrape_interval (10s)" 'scrape_configs:
  - job_name: a
    scrape_interval: 10s
    scrape_timeout: 20s
    static_configs: [{targets: ["127.0.0.1:9"]}]'
yaml_error bad_target 5 "target 'http://x:1' is not HOST:PORT" 'scrape_configs:
  - job_name: a
    static_configs:
      - targets:
        - http://x:1'
yaml_error duplicate_job 4 "job_name 'a' is also the name of the job at line 2" 'scrape_configs:
  - job_name: a
    static_configs: [{targets: ["127.0.0.1:9"]}]
  - job_name: a
    static_configs: [{targets: ["127.0.0.1:9"]}]'
yaml_error unknown_profile 6 "unknown profile 'fgprof'" 'scrape_configs:
  - job_name: a
    static_configs: [{targets: ["127.0.0.1:9"]}]
    profiling_config:
      pprof_config:
        fgprof: {enabled: true}'
yaml_error reserved_label 5 "label name 'instance' is not allowed" 'scrape_configs:
  - job_name: a
    static_configs:
      - targets: ["127.0.0.1:9"]
        labels: {instance: x}'
# Deep nesting is refused at once: libyaml's time grows with the square of the
# depth (600 KB of '[' took over 170 s), so the check stops at SCRAPE_MAX_DEPTH.
deep=$(head -c 600000 /dev/zero | tr '\0' '[')
t0=$(date +%s%N)
TIMEOUT_WRAP="timeout 60" yaml_error deep_nesting 1 "nested deeper than 32 levels" "$deep"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] && pass "deep_nesting_fast: refused in $ms ms" ||
	fail deep_nesting_fast "took $ms ms, want < 5 s"
yaml_error deep_block_nesting 33 "nested deeper than 32 levels" "$(for i in $(seq 0 40); do printf '%*sk%d:\n' "$i" '' "$i"; done)x: 1"
big=$(head -c 1100000 /dev/zero | tr '\0' '#')
yaml_error too_large 1 "the config is larger than 1048576 bytes" "$big"

# ---- a target of 3,000 sample types: the first SCRAPE_MAX_SAMPLE_TYPES stored ----
# Each sample type is a series and a decode of the whole body: without the cap one
# scrape made 3,000 series. The rest are counted and logged once, naming the kept.
mkdir -p "$T/many/debug/pprof"
python3 - "$T/many/debug/pprof/allocs" <<'PY'
import sys
def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)
def msg(n, payload): return varint(n << 3 | 2) + varint(len(payload)) + payload
def num(n, v): return varint(n << 3) + varint(v)
N = 3000
strings = [b"", b"count", b"main", b"work"]
out = []
for i in range(N):
    strings.append(b"t%d" % i)
    out.append(msg(1, num(1, len(strings) - 1) + num(2, 1)))
out.append(msg(5, num(1, 1) + num(2, 2)) + msg(5, num(1, 2) + num(2, 3)))
out.append(msg(4, num(1, 1) + num(3, 0x1000) + msg(4, num(1, 2))))
out.append(msg(4, num(1, 2) + num(3, 0x2000) + msg(4, num(1, 1))))
out.append(msg(2, msg(1, varint(1) + varint(2)) + msg(2, b"".join(varint(i + 1) for i in range(N)))))
out += [msg(6, s) for s in strings]
open(sys.argv[1], "wb").write(b"".join(out))
PY
python3 -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/many" > "$T/many.port" 2> "$T/many.err" &
BG_PIDS+=($!)
has_port() { [ "$(wc -l < "$T/many.port")" -ge 1 ]; }
wait_for 10 has_port
mport=$(head -1 "$T/many.port")
cat > "$T/many.yaml" <<YAML
scrape_configs:
  - job_name: many
    scrape_interval: 2s
    static_configs: [{targets: ['127.0.0.1:$mport']}]
    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        block: {enabled: false}
YAML
start_hearth "$T/many.log" server --data "$T/mdata" --listen 127.0.0.1:0 \
	--scrape-config "$T/many.yaml" || fail many_server_started "$(cat "$T/many.log")"
many_series() { curl -s "$HURL/api/series?from=now-5m" | grep -o '"profileType":"memory:t[0-9]*:' | sort -u; }
dropped() { # the counter, once two scrapes' worth (the second must not log again)
	metric "$HURL" "hearth_scrape_dropped_sample_types_total{job=\"many\",instance=\"127.0.0.1:$mport\"}" > "$T/many.dropped"
	[ "$(cat "$T/many.dropped")" -ge $((2 * 2984)) ] 2> /dev/null
}
scraped() { dropped || [ "$(many_series | wc -l)" -gt 16 ]; }
wait_until 30 scraped
nseries=$(many_series | wc -l)
if [ "$nseries" = 16 ] && [ "$(cat "$T/many.dropped")" -ge $((2 * 2984)) ] &&
	grep -q "has 3000 sample types; kept the first 16 (t0, t1, .*t15)" "$T/many.log" &&
	[ "$(grep -c 'sample types; kept' "$T/many.log")" = 1 ]; then
	pass "sample_types_capped: 16 series of 3000 types, $(cat "$T/many.dropped") dropped in 2+ scrapes, logged once"
else
	fail sample_types_capped "$nseries series, dropped '$(cat "$T/many.dropped")': $(grep -m2 'sample types' "$T/many.log")"
fi
kill "$SPID"
wait "$SPID" 2> /dev/null

# ---- a real Go program, and targets that fail each way ----
wl_out=$T/gopprof.out
"$W/gopprof" > "$wl_out" 2> "$T/gopprof.err" &
BG_PIDS+=($!)
# its first line, the port, once it listens (a whole line: counted by its newline)
has_line() { [ "$(wc -l < "$1")" -ge 1 ]; }
wait_for 20 has_line "$wl_out"
gport=$(head -1 "$wl_out")
if [ -z "$gport" ]; then
	fail gopprof_started "no port line from $W/gopprof in 20 s: $(cat "$T/gopprof.err")"
	finish
fi
only_goroutine='    profiling_config:
      pprof_config:
        process_cpu: {enabled: false}
        memory: {enabled: false}
        mutex: {enabled: false}
        block: {enabled: false}'
cat > "$T/scrape.yaml" <<YAML
scrape_configs:
  - job_name: goapp
    scrape_interval: 3s
    static_configs:
      - targets: ['127.0.0.1:$gport']
        labels: {env: test}
  - job_name: refused
    scrape_interval: 2s
    static_configs: [{targets: ['127.0.0.1:1']}]
$only_goroutine
  - job_name: notfound
    scrape_interval: 2s
    static_configs: [{targets: ['127.0.0.1:$gport']}]
$only_goroutine
        goroutine: {path: /no/such/path}
  - job_name: garbage
    scrape_interval: 2s
    static_configs: [{targets: ['127.0.0.1:$gport']}]
$only_goroutine
      path_prefix: /garbage
  - job_name: slow
    scrape_interval: 2s
    scrape_timeout: 1s
    static_configs: [{targets: ['127.0.0.1:$gport']}]
$only_goroutine
      path_prefix: /slow
YAML
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 \
	--scrape-config "$T/scrape.yaml" || { fail scrape_server_started "$(cat "$T/server.log")"; finish; }

INUSE='memory:inuse_space:bytes:space:bytes'
GOR='goroutine:goroutine:count:goroutine:count'
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
series_has() { curl -s "$HURL/api/series?from=now-5m" > "$T/series.json" && grep -q "\"$1\"" "$T/series.json"; }
all_stored() { series_has "$CPU" && series_has "$INUSE" && series_has "$GOR"; }
if wait_until 30 all_stored; then
	pass "scrape_stores_types: $(grep -o '"profileType":"[^"]*"' "$T/series.json" | sort -u | tr '\n' ' ')"
else
	fail scrape_stores_types "after 30 s: $(cat "$T/series.json") / $(tail -3 "$T/server.log")"
fi
# Each type's series carries the labels of the job, the target and the config.
want_labels="\"env\":\"test\",\"instance\":\"127.0.0.1:$gport\",\"job\":\"goapp\",\"service_name\":\"goapp\""
for ty in "$CPU" "$INUSE" "$GOR" memory:alloc_space:bytes:space:bytes memory:inuse_objects:count:space:bytes; do
	if grep -qF "{\"profileType\":\"$ty\",\"labels\":{$want_labels}}" "$T/series.json"; then
		pass "scrape_labels $ty"
	else
		fail "scrape_labels $ty" "no series $ty with {$want_labels}: $(cat "$T/series.json")"
	fi
done

# Read back by go tool pprof, each in its own unit.
go_env
sel() { printf '%s' "{job=\"goapp\",__profile_type__=\"$1\"}"; }
curl -sg -o "$T/heap.pb.gz" "$HURL/api/profile?format=pprof&from=now-5m" --data-urlencode "query=$(sel "$INUSE")" -G
go tool pprof -top -unit=MB "$T/heap.pb.gz" > "$T/heap.top" 2>&1
# A range holds every snapshot scraped in it, summed: at least one of 64 MiB.
# -unit=MB makes pprof print "64MB" or "64.50MB"; the whole megabytes of either.
mb_int() { local v=${1%MB}; printf '%s' "${v%%.*}"; }
heap_mb=$(awk '$NF == "main.allocHeap" { print $1; exit }' "$T/heap.top")
heap_pct=$(awk '$NF == "main.allocHeap" { sub("%", "", $2); print int($2); exit }' "$T/heap.top")
if grep -q "Type: inuse_space" "$T/heap.top" && [[ "$heap_mb" =~ ^[0-9.]+MB$ ]] &&
	[ "$(mb_int "$heap_mb")" -ge 60 ] && [ "${heap_pct:-0}" -ge 80 ]; then
	pass "pprof_reads_heap: main.allocHeap $heap_mb inuse_space, $heap_pct% of the heap"
else
	fail pprof_reads_heap "want Type: inuse_space and main.allocHeap >= 60MB (64 MiB live), >= 80%: $(head -12 "$T/heap.top")"
fi
curl -sg -o "$T/gor.pb.gz" "$HURL/api/profile?format=pprof&from=now-5m" --data-urlencode "query=$(sel "$GOR")" -G
go tool pprof -top "$T/gor.pb.gz" > "$T/gor.top" 2>&1
park=$(awk '$NF == "main.parkForever" { print $4; exit }' "$T/gor.top")
if grep -q "Type: goroutine" "$T/gor.top" && [ -n "$park" ] && [ "$park" -ge 20 ] && [ $((park % 20)) -eq 0 ]; then
	pass "pprof_reads_goroutines: main.parkForever cum $park (20 goroutines per scrape)"
else
	fail pprof_reads_goroutines "want Type: goroutine and main.parkForever a multiple of 20: $(head -12 "$T/gor.top")"
fi
# No type: CPU, read by pprof as CPU time, burnCPU on top; no memory frame in it.
curl -sg -o "$T/cpu.pb.gz" "$HURL/api/profile?format=pprof&from=now-5m" --data-urlencode 'query={job="goapp"}' -G
go tool pprof -top "$T/cpu.pb.gz" > "$T/cpu.top" 2>&1
if grep -q "Type: cpu" "$T/cpu.top" && awk 'NR > 5 && $NF == "main.burnCPU" { f = 1 } END { exit !f }' "$T/cpu.top" &&
	! grep -q "main.allocHeap\|main.parkForever" "$T/cpu.top"; then
	pass "default_type_is_cpu: $(grep -m1 'main.burnCPU' "$T/cpu.top")"
else
	fail default_type_is_cpu "want Type: cpu with main.burnCPU and no heap/goroutine frames: $(head -14 "$T/cpu.top")"
fi
# Units of the JSON answers follow the type.
unit_of() { curl -sg "$HURL/api/profile?format=tree&from=now-5m" --data-urlencode "query=$1" -G | grep -o '^{"unit":"[a-z]*"'; }
u_cpu=$(unit_of '{job="goapp"}') u_heap=$(unit_of "$(sel "$INUSE")") u_gor=$(unit_of "$(sel "$GOR")")
if [ "$u_cpu" = '{"unit":"samples"' ] && [ "$u_heap" = '{"unit":"bytes"' ] && [ "$u_gor" = '{"unit":"count"' ]; then
	pass "units_per_type: cpu $u_cpu, heap $u_heap, goroutine $u_gor"
else
	fail units_per_type "cpu '$u_cpu' heap '$u_heap' goroutine '$u_gor'"
fi
tl=$(curl -sg "$HURL/api/timeline?from=now-5m" --data-urlencode "query=$(sel "$INUSE")" -G | head -c 20)
[[ "$tl" == '{"unit":"bytes"'* ]] && pass "timeline_unit: $tl" || fail timeline_unit "$tl"
# Several types in one selection: refused, never summed.
code=$(http_status "$HURL/api/profile?format=tree&from=now-5m" "$T/mixed.json" -G \
	--data-urlencode 'query={job="goapp",__profile_type__=~".+"}')
if [ "$code" = 400 ] && grep -q "several profile types" "$T/mixed.json"; then
	pass "mixed_types_refused: $(cat "$T/mixed.json")"
else
	fail mixed_types_refused "HTTP $code: $(cat "$T/mixed.json")"
fi

# ---- failing targets: /api/targets and /metrics say why ----
target() { # job: its /api/targets entry as "health|lastError|lastScrape"
	curl -s "$HURL/api/targets" | python3 -c '
import json, sys
for t in json.load(sys.stdin)["activeTargets"]:
    if t["job"] == sys.argv[1]:
        print("%s|%s|%s" % (t["health"], t["lastError"], t["lastScrape"]))' "$1"
}
target_error() { # job, words
	target "$1" > "$T/t.$1"
	grep -q "^down|.*$2" "$T/t.$1"
}
for jw in "refused:Couldn't connect" "notfound:HTTP status 404" "garbage:not a pprof profile" "slow:Timeout"; do
	j=${jw%%:*} w=${jw#*:}
	if wait_until 15 target_error "$j" "$w"; then
		pass "target_error_$j: $(cat "$T/t.$j")"
	else
		fail "target_error_$j" "want health down and '$w': $(cat "$T/t.$j")"
	fi
done
target goapp > "$T/t.goapp"
if grep -qE '^up\|\|20[0-9-]+T[0-9:.]+Z$' "$T/t.goapp"; then
	pass "target_up: $(cat "$T/t.goapp")"
else
	fail target_up "$(cat "$T/t.goapp")"
fi
curl -s "$HURL/metrics" > "$T/metrics.txt"
for jr in refused:connect notfound:http_status garbage:decode slow:timeout; do
	j=${jr%%:*} r=${jr#*:}
	v=$(awk -v k="hearth_scrape_failures_total{job=\"$j\",instance=\"127.0.0.1:${gport}\",reason=\"$r\"}" \
		-v k1="hearth_scrape_failures_total{job=\"$j\",instance=\"127.0.0.1:1\",reason=\"$r\"}" \
		'$1 == k || $1 == k1 { print $2 }' "$T/metrics.txt")
	if [ -n "$v" ] && [ "$v" -ge 1 ]; then
		pass "metric_failures_$j: reason=$r $v"
	else
		fail "metric_failures_$j" "no hearth_scrape_failures_total{job=\"$j\",reason=\"$r\"} >= 1: $(grep "job=\"$j\"" "$T/metrics.txt" | head -8)"
	fi
done
ok=$(grep -c "^hearth_scrape_failures_total{job=\"goapp\".*} 0$" "$T/metrics.txt")
[ "$ok" -ge 7 ] && pass "metric_goapp_no_failures" || fail metric_goapp_no_failures "$(grep 'job="goapp"' "$T/metrics.txt")"
kill "$SPID"
wait "$SPID" 2>/dev/null

# ---- between scrapes every thread sleeps: no polling loop ----
# Two targets scraped every 30 s (one answers, one refuses); after the first
# scrape, a 5 s window in which no thread may wake more than once a second.
cat > "$T/idle.yaml" <<YAML
scrape_configs:
  - job_name: idle
    scrape_interval: 30s
    static_configs: [{targets: ['127.0.0.1:$gport', '127.0.0.1:1']}]
$only_goroutine
YAML
start_hearth "$T/idle.log" server --data "$T/idata" --listen 127.0.0.1:0 \
	--scrape-config "$T/idle.yaml" || { fail idle_server_started "$(cat "$T/idle.log")"; finish; }
wakes() { # "TID VOLUNTARY" per thread
	for t in /proc/"$SPID"/task/*; do
		printf '%s %s\n' "${t##*/}" "$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status")"
	done 2>/dev/null | sort
}
scraped_twice() { [ "$(curl -s "$HURL/metrics" | awk '/^hearth_scrapes_total/ { s += $2 } END { print s + 0 }')" -ge 2 ]; }
wait_until 10 scraped_twice || fail idle_first_scrape "$(curl -s "$HURL/api/targets")"
# The first scrapes' aftermath (and our /metrics requests) is over once a whole
# half-second passes in which no thread wakes more than once.
settled() {
	wakes > "$T/s0"
	sleep 0.5 # the quiet half-second looked for
	wakes > "$T/s1"
	[ "$(join "$T/s0" "$T/s1" | awk '{ d = $3 - $2; if (d > m) m = d } END { print m + 0 }')" -le 1 ]
}
wait_for 10 settled || fail idle_settled "no quiet half-second in 10 s after the first scrapes"
nthreads=$(ls /proc/"$SPID"/task | wc -l)
wakes > "$T/w0"
sleep 5 # the measured window
wakes > "$T/w1"
worst=$(join "$T/w0" "$T/w1" | awk '{ print $3 - $2, $1 }' | sort -rn | head -1)
if [ -n "$worst" ] && [ "${worst%% *}" -le 5 ]; then
	pass "scraper_sleeps: busiest of $nthreads threads woke ${worst%% *} times in 5 s"
else
	fail scraper_sleeps "wakeups per thread over 5 s: $(join "$T/w0" "$T/w1" | awk '{ print $1 ":" $3 - $2 }' | tr '\n' ' ')"
fi
finish
