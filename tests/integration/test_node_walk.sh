#!/usr/bin/env bash
# Issue 27 (Node.js): JavaScript frames named with no flags, from V8's own metadata
# (docs/node.md). tests/workloads/nodesplit.js runs (top level) -> main ->
# outerLoop -> hotAlpha / hotBeta (about 2:1) in one synchronous loop and prints
# its own CPU time in each hot function ("cpu ALPHA_US BETA_US", every 100 ms).
#  - `hearth record -p` with the defaults: >= 90% of the main thread's samples
#    carry main -> outerLoop in call order, under the native frames that entered
#    V8 (node::Start ... Builtins_JSEntry);
#  - hotAlpha's share of hotAlpha + hotBeta agrees with the workload's counters of
#    the same window within 3 points, and with V8's own sampling profiler
#    (`node --cpu-prof`, a second run of the same program, checked against its
#    own counters) within 3 points;
#  - a node started after the recording began is walked (>= 90% of its main
#    thread's samples carry its frames);
#  - --node off gives no JS frames (no perf map: native frames only);
#  - hearth run stores JS frames by default (>= 90% of the program's samples).
# test-runner: serial (it compares sampled shares with the workload's CPU clocks)
. "$(dirname "$0")/lib.sh"
need_root node_walk
command -v node > /dev/null || { fail node_walk "node is not installed (scripts/install-deps.sh)"; finish; }
sum() { awk '{ s += $NF } END { print s + 0 }'; }
APP=$HEARTH_ROOT/tests/workloads/nodesplit.js
JS='JS:[~*^+]?'

sampling() { # pid of a hearth record: it holds a cpu-clock event per online CPU
	[ "$(find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2> /dev/null | wc -l)" -ge "$(getconf _NPROCESSORS_ONLN)" ]
}
last_cpu() { awk '/^cpu / { l = $2 " " $3 } END { print l }' "$1"; }
# True once the workload has spent SECS of CPU in its hot functions since C0.
spent() { # out file, c0, seconds
	awk -v c0="$2" -v c1="$(last_cpu "$1")" -v s="$3" 'BEGIN {
		split(c0, x, " "); split(c1, y, " "); exit !(y[1] - x[1] + y[2] - x[2] >= s * 1e6) }'
}
share() { # a b -> 100 a / (a + b), 2 decimals
	awk -v a="$1" -v b="$2" 'BEGIN { if (a + b > 0) printf "%.2f", 100 * a / (a + b) }'
}
within() { # x y points
	awk -v x="$1" -v y="$2" -v p="$3" 'BEGIN { d = x - y; if (d < 0) d = -d; exit !(x != "" && y != "" && d <= p) }'
}

# Sample counts: hearth at 997 Hz over 6 s of hot CPU (~6000 samples: a share's
# standard deviation ~0.6 points) and --cpu-prof every 250 us over 6 s of CPU (~0.4
# points), so 3 points is more than 4 standard deviations of either difference.
# nodesplit.js runs for SECONDS of its own CPU time: the same counts when busy.
# --- the default walk, one window of >= 6 s of hot CPU ---
OUT=$T/walk.out
: > "$OUT"
node "$APP" 120 hnodewl > "$OUT" &
NPID=$!
BG_PIDS+=($NPID)
wait_lines "$OUT" 2 30 || echo "INFO node_walk: no counters from nodesplit.js in 30 s: $(head -c 300 "$OUT")"
"$HEARTH" record -p "$NPID" -F 997 -d 600 -v -o "$T/walk.folded" 2> "$T/walk.err" &
rec=$!
BG_PIDS+=($rec)
wait_for 30 sampling "$rec" || echo "INFO node_walk: hearth record had not begun sampling after 30 s"
C0=$(last_cpu "$OUT")
wait_for 120 spent "$OUT" "$C0" 6 || echo "INFO node_walk: less than 6 s of hot CPU in 120 s"
C1=$(last_cpu "$OUT")
kill -INT "$rec"
wait "$rec"
kill "$NPID" 2> /dev/null
wait "$NPID" 2> /dev/null
grep 'node:' "$T/walk.err"
main=$(grep '^hnodewl;' "$T/walk.folded" | sum)
chain=$(grep '^hnodewl;' "$T/walk.folded" | grep -E ";Builtins_JSEntry;.*;${JS}main [^;]*nodesplit\.js:[0-9]+:[0-9]+;${JS}outerLoop [^;]*nodesplit\.js:[0-9]+:[0-9]+(;|\$| )" | sum)
echo "node_walk: $chain of $main main-thread samples carry main -> outerLoop"
if [ "$main" -ge 300 ] && [ $((chain * 100)) -ge $((main * 90)) ]; then
	pass "node_walk_frames: $chain of $main main-thread samples carry JSEntry -> main -> outerLoop"
else
	fail node_walk_frames "$chain of $main samples (want >= 90%, >= 300): $(grep '^hnodewl;' "$T/walk.folded" | grep -vE ";${JS}main [^;]*;${JS}outerLoop " | sort -t' ' -k2 -rn | head -3 | sed 's/^.*Builtins_JSEntry;//' | cut -c1-400)"
fi
a=$(grep '^hnodewl;' "$T/walk.folded" | grep -E ";${JS}hotAlpha [^;]*nodesplit" | sum)
b=$(grep '^hnodewl;' "$T/walk.folded" | grep -E ";${JS}hotBeta [^;]*nodesplit" | sum)
got=$(share "$a" "$b")
truth=$(awk -v c0="$C0" -v c1="$C1" 'BEGIN { split(c0, x, " "); split(c1, y, " ")
	d = y[1] - x[1] + y[2] - x[2]; if (d > 0) printf "%.2f", 100 * (y[1] - x[1]) / d }')
echo "node_walk: hotAlpha $a, hotBeta $b samples: share $got%; the workload's counters: $truth%"
if [ $((a + b)) -ge 300 ] && within "$got" "$truth" 3; then
	pass "node_walk_share: hotAlpha $got% of hot samples ($((a + b))), counters $truth%"
else
	fail node_walk_share "hotAlpha $got% of $((a + b)) hot samples, counters $truth% (want within 3 points, >= 300 samples)"
fi

# --- V8's own profiler on a second run of the same program ---
mkdir -p "$T/cpuprof"
node --cpu-prof --cpu-prof-interval 250 --cpu-prof-dir="$T/cpuprof" "$APP" 6 > "$T/cpuprof.out"
prof=$(ls "$T"/cpuprof/*.cpuprofile 2> /dev/null | head -1)
ab=$(node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
const parent = new Map(), by = new Map();
for (const n of p.nodes) { by.set(n.id, n); for (const c of n.children || []) parent.set(c, n.id); }
let a = 0, b = 0;
for (const s of p.samples) {
	let alpha = false, beta = false;
	for (let id = s; id !== undefined; id = parent.get(id)) {
		const f = by.get(id).callFrame.functionName;
		if (f === "hotAlpha") alpha = true;
		if (f === "hotBeta") beta = true;
	}
	a += alpha; b += beta;
}
console.log(a, b);' "$prof" 2> /dev/null)
pa=${ab% *}
pb=${ab#* }
pshare=$(share "$pa" "$pb")
ptruth=$(awk '/^cpu / { l = $0 } END { split(l, y, " "); if (y[2] + y[3] > 0) printf "%.2f", 100 * y[2] / (y[2] + y[3]) }' "$T/cpuprof.out")
echo "node_walk: --cpu-prof: hotAlpha $pa, hotBeta $pb samples: share $pshare%; that run's counters: $ptruth%"
if within "$pshare" "$got" 3 && within "$pshare" "$ptruth" 3; then
	pass "node_walk_cpu_prof: hearth $got% vs --cpu-prof $pshare% (counters $truth% / $ptruth%)"
else
	fail node_walk_cpu_prof "hearth $got% (counters $truth%) vs --cpu-prof $pshare% of $((pa + pb)) samples (counters $ptruth%): want within 3 points"
fi

# --- a node started after the recording began (all CPUs) ---
"$HEARTH" record -a -F 499 -d 600 -q -v -o "$T/late.folded" 2> "$T/late.err" &
rec=$!
BG_PIDS+=($rec)
wait_for 30 sampling "$rec" || echo "INFO node_walk_late: hearth record -a had not begun sampling after 30 s"
node "$APP" 2 hnodelate > /dev/null
kill -INT "$rec"
wait "$rec"
tot=$(grep '^hnodelate;' "$T/late.folded" | sum)
withjs=$(grep '^hnodelate;' "$T/late.folded" | grep -E ";${JS}(main|outerLoop|hotAlpha|hotBeta) [^;]*nodesplit" | sum)
if [ "$tot" -ge 300 ] && [ $((withjs * 100)) -ge $((tot * 90)) ]; then
	pass "node_walk_late: $withjs of $tot samples of a node started during the recording carry its JS frames"
else
	fail node_walk_late "$withjs of $tot samples (want >= 90%, >= 300): $(grep 'node:' "$T/late.err") $(grep '^hnodelate;' "$T/late.folded" | grep -vE ";${JS}(main|outerLoop|hotAlpha|hotBeta) " | sort -t' ' -k2 -rn | head -2 | cut -c1-300)"
fi

# --- --node off: native frames only ---
: > "$T/off.out"
node "$APP" 60 hnodeoff > "$T/off.out" &
NPID=$!
BG_PIDS+=($NPID)
wait_lines "$T/off.out" 2 30
"$HEARTH" record -p "$NPID" -F 499 -d 2 --node off -o "$T/off.folded" 2> "$T/off.err"
kill "$NPID" 2> /dev/null
wait "$NPID" 2> /dev/null
tot=$(grep '^hnodeoff;' "$T/off.folded" | sum)
js=$(grep '^hnodeoff;' "$T/off.folded" | grep -c ';JS:')
if [ "$tot" -gt 0 ] && [ "$js" -eq 0 ]; then
	pass "node_walk_off: --node off: $tot samples, no JS frame"
else
	fail node_walk_off "--node off: $js stacks with JS frames of $tot samples: $(head -c 300 "$T/off.err")"
fi

# --- hearth run: JS frames in the store by default ---
. "$(dirname "$0")/server_lib.sh"
if start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 --interval 2; then
	# The program runs 4 s, then the store holds all of it once two more
	# profiles than before its exit are built and delivered (as test_python).
	stored() { # profiles built before
		curl -sf "$HURL/metrics" | awk -v n=$(($1 + 2)) '$1 == "hearth_agent_profiles_total" { p = $2 }
			$1 == "hearth_agent_sent_total" { s = $2 } END { exit !(p >= n && s >= n) }'
	}
	drained() { curl -sf "$HURL/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'; }
	wait_until 30 drained || echo "INFO node_walk_run: no profile drained in 30 s: $(tail -3 "$T/run.log")"
	node "$APP" 3 hnoderun > /dev/null
	p0=$(metric "$HURL" hearth_agent_profiles_total)
	wait_for 30 stored "${p0:-0}" || echo "INFO node_walk_run: the profiles after the process were not all stored in 30 s"
	curl -s --max-time 30 "$HURL/api/profile?format=folded&from=now-5m&query=%7Bcomm%3D%22hnoderun%22%7D" > "$T/run.folded"
	tot=$(sum < "$T/run.folded")
	withjs=$(grep -E ";${JS}(main|outerLoop|hotAlpha|hotBeta) [^;]*nodesplit" "$T/run.folded" | sum)
	if [ "$tot" -ge 100 ] && [ $((withjs * 100)) -ge $((tot * 90)) ]; then
		pass "node_walk_run: $withjs of $tot stored samples carry JS frames (hearth run)"
	else
		fail node_walk_run "$withjs of $tot stored samples carry JS frames (want >= 90%, >= 100): $(sort -t' ' -k2 -rn "$T/run.folded" | head -2 | cut -c1-300)"
	fi
	curl -sf "$HURL/metrics" | grep -q '^hearth_agent_node_walked_total [1-9]' &&
		pass "node_walk_metrics: /metrics counts the V8 walk" ||
		fail node_walk_metrics "no hearth_agent_node_walked_total > 0 in /metrics"
	kill -INT "$SPID"
	wait "$SPID"
else
	fail node_walk_run "hearth run did not start: $(tail -3 "$T/run.log")"
fi
finish
