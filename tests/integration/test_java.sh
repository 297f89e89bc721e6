#!/usr/bin/env bash
# Issue 26: Java frames in every stack. tests/workloads/HearthHot.java runs
# main -> outer -> {hotA, hotB, interpOnly}, hotA and hotB calling step;
# interpOnly is excluded from the JIT (-XX:CompileCommand=exclude), hotA and
# hotB are JIT-compiled, with step inlined into them (its frames come from the
# nmethods' scope descriptors; -XX:+DebugNonSafepoints gives debug information
# at every pc, not only at safepoints and calls, as async-profiler asks for).
# With Debian's OpenJDK 17 and hearth record's defaults:
#  - >= 90% of the Java main thread's samples (stacks through JavaMain) carry
#    Java frames (HearthHot.*);
#  - the Java frames read in call order: main, outer, then one hot method
#    (and step under hotA or hotB);
#  - hotA's share of hotA + hotB agrees within 3 points (or 4 standard
#    deviations of a binomial share, when larger) with the workload's own
#    measure: its main thread's CPU clock around each call, over the recording;
#    a sample counts for the hot method nearest its leaf;
#  - and is no farther from that truth than JFR's jdk.ExecutionSample events
#    (1 ms period) from the same process over the same 20 s, but for the noise
#    of the two shares (4 sd of their difference). JFR's own error moves with the
#    machine (65.8-69.4% on one against a truth of 74.7%, hearth 74.4-74.7%):
#    it is the peer, not the truth;
#  - step, inlined, is named under hotA: its share of hotA's samples agrees
#    with JFR's within 4 standard deviations of the difference plus 2 points;
#  - >= 95% of the stacks with Java frames reach the thread's start (clone3);
#  - the interpreted-only method and the JIT-compiled ones are all named, and
#    the walk saw both interpreted and compiled frames (record -v's java line);
#  - a JVM started after `hearth run` (agent and store, defaults) is named
#    within its first seconds: >= 80% of its main thread's stored samples carry
#    Java frames over its first 6 s of CPU time, JVM start-up included (its first samples,
#    before its unwind tables are out, are walked in user space from a stack
#    copy: no Java frames), and /metrics counts the JVM;
#  - --java off gives no Java frames;
#  - HearthMixed (recursion, collections, lambdas, streams, exceptions in three
#    threads) recorded until after it exits: each thread's code is named, and
#    >= 98% of its Java frames have names (the names of a JVM that exited are
#    the ones read while it ran).
# Every wait is a wait-until with a deadline.
# test-runner: serial (it compares sampled shares with the workload's CPU clocks and JFR)
# test-runner: prepare (--prepare compiles the workloads only: tests/run.sh does that in its shared phase)
. "$(dirname "$0")/lib.sh"
need_root java
sum() { awk '{ s += $NF } END { print s + 0 }'; }
for tool in java javac jcmd jfr; do
	if ! command -v "$tool" > /dev/null; then
		if [ "${CI:-}" = "true" ]; then
			fail java "$tool is missing (scripts/install-deps.sh installs openjdk-17-jdk-headless)"
			finish
		fi
		skip java "$tool is missing (apt-get install openjdk-17-jdk-headless)"
		exit 0
	fi
done
# The classes are kept in build/fixtures/java, compiled again when a source
# changes (the key file says which).
C=$HEARTH_ROOT/build/fixtures/java
SRCS=("$HEARTH_ROOT/tests/workloads/HearthHot.java" "$HEARTH_ROOT/tests/workloads/HearthMixed.java")
key="$(cat "${SRCS[@]}" | sha256sum) $(readlink -f "$(command -v javac)")"
mkdir -p "$(dirname "$C")"
exec 9> "$C.lock"
flock 9
if [ "$(cat "$C/key" 2> /dev/null)" != "$key" ]; then
	# into $C.new, then renamed: the classes are whole or absent
	rm -rf "$C.new" && mkdir -p "$C.new"
	if ! javac -d "$C.new" "${SRCS[@]}" 2> "$T/javac.err"; then
		fail java_compile "$(cat "$T/javac.err")"
		finish
	fi
	echo "$key" > "$C.new/key"
	rm -rf "$C" && mv "$C.new" "$C"
fi
exec 9>&-
[ "${1:-}" = --prepare ] && finish
JFLAGS=(-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints -XX:CompileCommand=quiet
	-XX:CompileCommand=exclude,HearthHot::interpOnly -cp "$C")
# JFR's profile settings with Java method sampling every 1 ms (10 ms in profile.jfc).
JH=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
sed 's|<setting name="period" control="method-sampling-java-interval">10 ms</setting>|<setting name="period" control="method-sampling-java-interval">1 ms</setting>|' \
	"$JH/lib/jfr/profile.jfc" > "$T/fast.jfc"

# A hearth record has begun sampling once it holds a cpu-clock perf event for
# every online CPU: hearth opens them last.
sampling() { [ "$(find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2> /dev/null | wc -l)" -ge "$(getconf _NPROCESSORS_ONLN)" ]; }
# CPU seconds a process has used (utime + stime).
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat" 2> /dev/null; }
used_cpu() { awk -v c="$(cpu_s "$1")" -v s="$2" 'BEGIN { exit !(c + 0 >= s) }'; }
# Folded lines reduced to their HearthHot frames (without the argument types), with the count.
jframes() { # folded file
	awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); s = "";
		for (i = 1; i <= k; i++) { g = f[i]; sub(/ +$/, "", g); if (g ~ /^HearthHot\./) s = s (s ? ";" : "") g }
		if (s != "") print s, n }' "$1"
}

# ---- one JVM, hearth and JFR over the same window ----
: > "$T/jvm.out"
java "${JFLAGS[@]}" HearthHot 600 > "$T/jvm.out" 2>&1 &
JPID=$!
BG_PIDS+=("$JPID")
if ! wait_lines "$T/jvm.out" 1 30; then
	fail java_start "the JVM did not say ready in 30 s: $(cat "$T/jvm.out")"
	finish
fi
# Past start-up and the JIT's first compilations: 3 s of CPU.
wait_for 60 used_cpu "$JPID" 3 || echo "INFO: the JVM had used $(cpu_s "$JPID") s of CPU after 60 s"
if ! jcmd "$JPID" JFR.start name=hearth duration=20s filename="$T/x.jfr" settings="$T/fast.jfc" > "$T/jcmd.out" 2>&1; then
	fail java_jfr "jcmd JFR.start failed: $(head -3 "$T/jcmd.out"); the JVM said: $(tail -5 "$T/jvm.out")"
	finish
fi
R0=$(date +%s%3N)
"$HEARTH" record -v -p "$JPID" -F 499 -d 20 -q -o "$T/main.folded" 2> "$T/main.err"
R1=$(date +%s%3N)
wait_for 60 test -s "$T/x.jfr" || echo "INFO: no JFR file 60 s after the recording"
wait_for 30 jfr summary "$T/x.jfr" > /dev/null 2>&1 || echo "INFO: jfr summary fails on $T/x.jfr"
jfr print --events jdk.ExecutionSample "$T/x.jfr" > "$T/jfr.txt" 2>&1
JLINE=$(grep 'java:' "$T/main.err")

# Java frames on the main Java thread.
tot=$(grep ';JavaMain;' "$T/main.folded" | sum)
withj=$(grep ';JavaMain;' "$T/main.folded" | grep ';HearthHot\.' | sum)
if [ "$tot" -ge 200 ] && [ $((withj * 100)) -ge $((tot * 90)) ]; then
	pass "java_frames: $withj of $tot samples of the Java main thread carry Java frames"
else
	fail java_frames "$withj of $tot (want >= 90%, >= 200 samples): $JLINE; without: $(grep ';JavaMain;' "$T/main.folded" | grep -v ';HearthHot\.' | sort -t' ' -k2 -rn | head -3 | cut -c1-400)"
fi

# Call order: main, outer, one hot method, step under hotA/hotB (or a prefix).
ORDER='^HearthHot\.main(;HearthHot\.outer(;HearthHot\.(interpOnly|(hotA|hotB)(;HearthHot\.step(_\[i\])?)?))?)? [0-9]+$'
jframes "$T/main.folded" > "$T/main.j"
alljs=$(sum < "$T/main.j")
bad=$(grep -Ev "$ORDER" "$T/main.j" | sum)
if [ "$alljs" -gt 0 ] && [ $((bad * 100)) -le "$alljs" ]; then
	pass "java_call_order: $((alljs - bad)) of $alljs Java stacks read main -> outer -> hot"
else
	fail java_call_order "$bad of $alljs Java stacks out of order: $(grep -Ev "$ORDER" "$T/main.j" | sort -t' ' -k2 -rn | head -3)"
fi

# hotA's share of hotA + hotB, each sample counted for the hot method nearest
# its leaf (JFR: the top frame or the one under an inlined step).
ha=$(grep -E ';HearthHot\.hotA(;HearthHot\.step(_\[i\])?)? [0-9]+$' "$T/main.j" | sum)
hb=$(grep -E ';HearthHot\.hotB(;HearthHot\.step(_\[i\])?)? [0-9]+$' "$T/main.j" | sum)
hsa=$(grep -E ';HearthHot\.hotA;HearthHot\.step(_\[i\])? [0-9]+$' "$T/main.j" | sum)
hsi=$(grep -E ';HearthHot\.hot[AB];HearthHot\.step_\[i\] [0-9]+$' "$T/main.j" | sum)
# JFR: per sample, the top frame and the first hot method from the top.
awk '/stackTrace = \[/ { t = ""; h = ""; n = 0; in_st = 1; next }
	in_st && /^ *\]/ { if (h != "") print h, t; in_st = 0; next }
	in_st { n++; if (n == 1) t = $1; if (h == "" && $1 ~ /^HearthHot\.hot[AB]\(/) h = $1 }' \
	"$T/jfr.txt" | sort | uniq -c > "$T/jfr.top"
ja=$(awk '$2 == "HearthHot.hotA(long)" { s += $1 } END { print s + 0 }' "$T/jfr.top")
jb=$(awk '$2 == "HearthHot.hotB(long)" { s += $1 } END { print s + 0 }' "$T/jfr.top")
jsa=$(awk '$2 == "HearthHot.hotA(long)" && $3 ~ /^HearthHot\.step\(/ { s += $1 } END { print s + 0 }' "$T/jfr.top")
# The workload's truth over the recording: its "cpu" lines (every 250 ms) at or
# before its start and at or after its end.
past_r1() { awk -v t="$R1" '$1 == "cpu" && $2 >= t { f = 1 } END { exit !f }' "$T/jvm.out"; }
wait_for 5 past_r1 || echo "INFO: no cpu line from the JVM in the 5 s after the recording"
truth=$(awk -v r0="$R0" -v r1="$R1" '$1 == "cpu" {
		if ($2 <= r0) { a0 = $3; b0 = $4; s = 1 }
		if ($2 >= r1 && !e) { a1 = $3; b1 = $4; e = 1 } }
	END { da = a1 - a0; db = b1 - b0; if (s && e && da + db > 0) printf "%.2f", 100 * da / (da + db) }' "$T/jvm.out")
if [ $((ha + hb)) -ge 300 ] && [ $((ja + jb)) -ge 300 ] && [ -n "$truth" ]; then
	hs=$(awk -v a="$ha" -v b="$hb" 'BEGIN { printf "%.2f", 100 * a / (a + b) }')
	js=$(awk -v a="$ja" -v b="$jb" 'BEGIN { printf "%.2f", 100 * a / (a + b) }')
	tol=$(awk -v n="$(share_tol "$truth" $((ha + hb)))" 'BEGIN { print (n > 3 ? n : 3) }')
	if awk -v h="$hs" -v t="$truth" -v tol="$tol" 'BEGIN { d = h - t; if (d < 0) d = -d; exit !(d <= tol) }'; then
		pass "java_share_truth: hotA has $hs% of hotA + hotB in hearth ($ha vs $hb samples), the workload's own CPU clocks say $truth% (within $tol points: 3, or 4 sd when larger)"
	else
		fail java_share_truth "hotA $hs% in hearth ($ha vs $hb), the workload's CPU clocks $truth%: want within $tol points (3, or 4 sd when larger); JFR $js% ($ja vs $jb)"
	fi
	# JFR, the peer, from the same process over the same 20 s: hearth no farther
	# from the truth than JFR, but for the noise of the two shares (JFR's own
	# error moves with the machine: 65.8-69.4% here against a truth of 74.7%).
	noise=$(two_share_tol "$hs" $((ha + hb)) "$js" $((ja + jb)))
	if awk -v h="$hs" -v j="$js" -v t="$truth" -v n="$noise" 'BEGIN { dh = h - t; if (dh < 0) dh = -dh
		dj = j - t; if (dj < 0) dj = -dj; exit !(dh <= dj + n) }'; then
		pass "java_vs_jfr: hotA $hs% in hearth, $js% in JFR ($ja vs $jb samples), truth $truth%: hearth no farther from it than JFR (noise $noise points)"
	else
		fail java_vs_jfr "hotA $hs% in hearth ($ha vs $hb), $js% in JFR ($ja vs $jb), truth $truth%: hearth farther from it than JFR by more than the noise, $noise points"
	fi
else
	fail java_vs_jfr "too few samples or no truth: hearth $ha + $hb, JFR $ja + $jb (want >= 300 each), truth '$truth': $JLINE; JFR: $(head -c 300 "$T/jfr.txt")"
fi

# step, inlined into hotA and hotB, named from the scope descriptors.
if [ "$ha" -gt 0 ] && [ "$ja" -gt 0 ] && [ "$hsi" -gt 0 ]; then
	hss=$(awk -v a="$hsa" -v b="$ha" 'BEGIN { printf "%.2f", 100 * a / b }')
	jss=$(awk -v a="$jsa" -v b="$ja" 'BEGIN { printf "%.2f", 100 * a / b }')
	tol=$(two_share_tol "$hss" "$ha" "$jss" "$ja" 2)
	if awk -v h="$hss" -v j="$jss" -v t="$tol" 'BEGIN { d = h - j; if (d < 0) d = -d; exit !(d <= t) }'; then
		pass "java_inlined: step (inlined: $hsi samples) has $hss% of hotA's samples in hearth ($hsa of $ha), $jss% in JFR ($jsa of $ja) (tolerance $tol points)"
	else
		fail java_inlined "step has $hss% of hotA's samples in hearth ($hsa of $ha), $jss% in JFR ($jsa of $ja): want within $tol points"
	fi
else
	fail java_inlined "no inlined step frame: $hsi step_[i] samples, hotA $ha, JFR hotA $ja"
fi

# Stacks with Java frames reach the thread's start.
rooted=$(grep ';HearthHot\.' "$T/main.folded" | awk -F';' '$2 == "clone3" || $2 == "clone" || $2 == "_start"' | sum)
jtot=$(grep ';HearthHot\.' "$T/main.folded" | sum)
if [ "$jtot" -gt 0 ] && [ $((rooted * 100)) -ge $((jtot * 95)) ]; then
	pass "java_rooted: $rooted of $jtot stacks with Java frames reach the thread start"
else
	fail java_rooted "$rooted of $jtot (want >= 95%): $(grep ';HearthHot\.' "$T/main.folded" | awk -F';' '$2 != "clone3" && $2 != "clone" && $2 != "_start"' | sort -t' ' -k2 -rn | head -3 | cut -c1-300)"
fi

# Interpreted and compiled methods named; the walk saw both kinds of frame.
ni=$(grep -E ';HearthHot\.interpOnly [0-9]+$' "$T/main.j" | sum)
fi_=$(sed -n 's/.*(\([0-9]*\) interpreted, \([0-9]*\) compiled.*/\1/p' "$T/main.err")
fc=$(sed -n 's/.*(\([0-9]*\) interpreted, \([0-9]*\) compiled.*/\2/p' "$T/main.err")
if [ "$ni" -gt 0 ] && [ "$ha" -gt 0 ] && [ "$hb" -gt 0 ] && [ "${fi_:-0}" -gt 0 ] && [ "${fc:-0}" -gt 0 ]; then
	pass "java_interp_and_jit: interpOnly $ni, hotA $ha, hotB $hb samples; ${fi_} interpreted and ${fc} compiled frames walked"
else
	fail java_interp_and_jit "interpOnly $ni, hotA $ha, hotB $hb: $JLINE"
fi

# --java off: native frames only.
"$HEARTH" record -p "$JPID" -d 2 -q --java off -o "$T/off.folded" 2> "$T/off.err"
offj=$(grep -c 'HearthHot\.' "$T/off.folded")
offt=$(sum < "$T/off.folded")
if [ "$offt" -gt 0 ] && [ "$offj" -eq 0 ]; then
	pass "java_off: --java off: $offt samples, none with Java frames"
else
	fail java_off "$offj of $offt stacks with Java frames under --java off: $(cat "$T/off.err")"
fi
kill "$JPID" 2> /dev/null
wait "$JPID" 2> /dev/null

# ---- varied Java code, and a JVM that exits during the recording ----
: > "$T/mixed.out"
java -cp "$C" HearthMixed 8 > "$T/mixed.out" 2>&1 &
MPID=$!
BG_PIDS+=("$MPID")
wait_lines "$T/mixed.out" 1 30 || echo "INFO: HearthMixed did not say ready in 30 s"
"$HEARTH" record -p "$MPID" -F 499 -d 600 -q -v -o "$T/mixed.folded" 2> "$T/mixed.err" &
rec=$!
wait_for 90 sh -c "! kill -0 $MPID 2> /dev/null" || kill "$MPID"
wait "$MPID" 2> /dev/null
kill -INT "$rec" # the build comes after the exit: names read while it ran
wait "$rec" 2> /dev/null
named=$(grep -o ';HearthMixed\.[a-z]*' "$T/mixed.folded" | sort -u | tr '\n' ' ')
jn=$(awk '{ n = $NF; k = split($0, f, ";"); for (i = 1; i <= k; i++) if (f[i] ~ /^\[java\] unknown/) u += n; else if (f[i] ~ /^(HearthMixed|java\.|jdk\.)/) j += n }
	END { printf "%d %d", j, u }' "$T/mixed.folded")
mj=${jn% *} mu=${jn#* }
if [[ $named == *fibber* && $named == *mapper* && $named == *streamer* && $named == *fib* ]] &&
	[ "$mj" -ge 300 ] && [ $((mu * 100)) -le $(((mj + mu) * 2)) ]; then
	pass "java_mixed: $mj named Java frames, $mu unknown, in a JVM that exited during the recording; named: $named"
else
	fail java_mixed "$mj named, $mu unknown (want >= 300, <= 2% unknown); named: $named; $(grep 'java:' "$T/mixed.err")"
fi

# ---- a JVM started after the agent (hearth run), in the store ----
. "$(dirname "$0")/server_lib.sh"
ln -s "$(readlink -f "$(command -v java)")" "$T/hearthjvm2"
if start_hearth "$T/run.log" run --data "$T/run-data" --listen 127.0.0.1:0 --interval 2; then
	drained() { curl -sf "$HURL/metrics" | awk '$1 == "hearth_agent_profiles_total" && $2 >= 1 { ok = 1 } END { exit !ok }'; }
	wait_until 30 drained || echo "INFO java_started_later: no profile drained in 30 s: $(tail -3 "$T/run.log")"
	# All of a process that has exited is stored once the agent has built two
	# more profiles and delivered them all.
	stored() { # profiles built before
		curl -sf "$HURL/metrics" | awk -v n=$(($1 + 2)) '$1 == "hearth_agent_profiles_total" { p = $2 }
			$1 == "hearth_agent_sent_total" { s = $2 } END { exit !(p >= n && s >= n) }'
	}
	: > "$T/late.out"
	"$T/hearthjvm2" "${JFLAGS[@]}" HearthHot 600 > "$T/late.out" 2>&1 &
	LPID=$!
	wait_for 30 sh -c "grep -q ready '$T/late.out'" || echo "INFO: the late JVM did not say ready in 30 s"
	# 6 s of its CPU time, start-up included, however busy the machine is.
	wait_for 120 used_cpu "$LPID" 6 || echo "INFO: the late JVM used $(cpu_s "$LPID") s of CPU in 120 s"
	curl -sf "$HURL/metrics" | grep '^hearth_agent_java_' > "$T/late.metrics"
	kill "$LPID"
	wait "$LPID" 2> /dev/null
	p0=$(metric "$HURL" hearth_agent_profiles_total)
	wait_for 30 stored "${p0:-0}" || echo "INFO java_started_later: the profiles after the JVM were not all stored in 30 s"
	curl -s --max-time 30 "$HURL/api/profile?format=folded&from=now-5m&query=%7Bpid%3D%22$LPID%22%7D" > "$T/late.folded"
	kill -INT "$SPID" 2> /dev/null
	ltot=$(grep ';JavaMain;' "$T/late.folded" | sum)
	lj=$(grep ';JavaMain;' "$T/late.folded" | grep ';HearthHot\.' | sum)
	lhot=$(grep -E ';HearthHot\.hot[AB]( |;)' "$T/late.folded" | sum)
	if [ "$ltot" -ge 100 ] && [ "$lhot" -gt 0 ] && [ $((lj * 100)) -ge $((ltot * 80)) ]; then
		pass "java_started_later: $lj of $ltot stored samples of the main thread of a JVM started after hearth run (its first 6 s of CPU, start-up included) carry Java frames, $lhot in hotA/hotB; $(tr '\n' ' ' < "$T/late.metrics")"
	else
		fail java_started_later "$lj of $ltot (want >= 80%, >= 100), $lhot in hotA/hotB: $(head -3 "$T/late.out") $(grep ';JavaMain;' "$T/late.folded" | grep -v ';HearthHot\.' | sort -t' ' -k2 -rn | head -3 | cut -c1-300)"
	fi
else
	fail java_started_later "hearth run did not start: $(tail -3 "$T/run.log")"
fi
finish
