#!/usr/bin/env bash
# Issue 14, part 1: JIT code must not cut the stack to one frame. Node.js runs
# jitchain.js (top level -> hearthJsCaller -> hearthJsHot) under --perf-basic-prof;
# hearth records it with the table unwinder (--unwind dwarf and the default auto).
# The JIT frames lie in anonymous memory (no mapping with a table), so the walker
# must cross them with frame pointers and return to tables in node's own code:
#  - >= 95% of the samples whose leaf is JIT code (a JS: frame) reach node's
#    root frames (__libc_start_call_main);
#  - the hot function's caller, hearthJsCaller, is right under it in >= 90% of them.
. "$(dirname "$0")/lib.sh"
need_root unwind_jit
command -v node > /dev/null || { fail unwind_jit "node is not installed (scripts/install-deps.sh)"; finish; }

# --interpreted-frames-native-stack: interpreted JS frames get their own named
# code in the perf map (else they are all Builtins_InterpreterEntryTrampoline).
cd "$T" || exit 1 # node --perf-basic-prof also writes isolate-*-v8.log into its cwd
pid=$(start_workload node --perf-basic-prof --interpreted-frames-native-stack \
	--no-turbo-inlining "$W/jitchain.js" 20)
trap 'rm -f "/tmp/perf-$pid.map"; cleanup_lib' EXIT # node leaves its map behind
cd - > /dev/null || exit 1
# TurboFan has compiled the hot function once the map names its code (JS:*)
wait_for 20 grep -q 'JS:\*hearthJsHot' "/tmp/perf-$pid.map" 2> /dev/null ||
	fail unwind_jit_optimized "no JS:*hearthJsHot in /tmp/perf-$pid.map after 20 s"

for mode in dwarf auto; do
	"$HEARTH" record -p "$pid" -F 499 -d 4 --unwind "$mode" -o "$T/$mode.folded" 2> "$T/err.txt"
	rc=$?
	grep 'unwind:' "$T/err.txt"
	if [ $rc -ne 0 ]; then
		fail "unwind_jit_$mode" "hearth record exited $rc: $(cat "$T/err.txt")"
		continue
	fi
	# Samples whose leaf (last user frame; kernel frames end in _[k]) is JS code.
	awk '{ n = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";");
	       while (k > 1 && f[k] ~ /_\[k\]$/) k--;
	       if (f[k] ~ /^JS:/) print $0 " " n }' "$T/$mode.folded" > "$T/$mode.jit"
	tot=$(awk '{ s += $NF } END { print s + 0 }' "$T/$mode.jit")
	root=$(grep -F ';__libc_start_call_main;' "$T/$mode.jit" | awk '{ s += $NF } END { print s + 0 }')
	chain=$(grep -E ';JS:[~*^]?hearthJsCaller [^;]*;JS:[~*^]?hearthJsHot ' "$T/$mode.jit" |
		awk '{ s += $NF } END { print s + 0 }')
	echo "unwind_jit_$mode: $tot JIT-leaf samples, $root reach __libc_start_call_main, $chain have hearthJsCaller -> hearthJsHot"
	if [ "$tot" -lt 100 ]; then
		fail "unwind_jit_$mode" "only $tot JIT-leaf samples (want >= 100): $(head -c 600 "$T/$mode.folded")"
		continue
	fi
	if awk -v h="$root" -v t="$tot" 'BEGIN { exit !(100 * h >= 95 * t) }'; then
		pass "unwind_jit_${mode}_root: $root of $tot JIT-leaf samples reach node's root"
	else
		fail "unwind_jit_${mode}_root" "$root of $tot JIT-leaf samples reach node's root, want >= 95%: $(sort -t' ' -k2 -nr "$T/$mode.jit" | head -2 | cut -c1-400)"
	fi
	if awk -v h="$chain" -v t="$tot" 'BEGIN { exit !(100 * h >= 90 * t) }'; then
		pass "unwind_jit_${mode}_caller: hearthJsCaller under hearthJsHot in $chain of $tot"
	else
		fail "unwind_jit_${mode}_caller" "hearthJsCaller -> hearthJsHot in $chain of $tot JIT-leaf samples, want >= 90%; others: $(grep -vE ';JS:[~*^]?hearthJsCaller [^;]*;JS:[~*^]?hearthJsHot ' "$T/$mode.jit" | sort -t' ' -k2 -nr | head -3 | sed 's/^.*;JS:~Module._compile[^;]*;//' | cut -c1-400 | tr '\n' '|')"
	fi
done
finish
