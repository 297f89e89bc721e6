#!/usr/bin/env bash
# `hearth symbolize` on workloads built here: inlined frames with file:line, separate
# debug files (build-id tree, .gnu_debuglink with CRC; mismatches rejected), C++
# demangling, Go without DWARF, the cache budget, and corrupt DWARF.
. "$(dirname "$0")/lib.sh"
SRC=$HEARTH_ROOT/tests/workloads

sym() { "$HEARTH" symbolize "$@"; }
# every 2nd address of function NAME (from nm) in FILE, one per line
addrs_of() { # file, name
	local a s i
	read -r a s < <(nm -S "$1" | awk -v n="$2" '$4 == n { print $1, $2; exit }')
	for ((i = 0; i < 16#${s:-0}; i += 2)); do printf '0x%x\n' $((16#$a + i)); done
}
line_of() { grep -n "$2" "$1" | head -1 | cut -d: -f1; }

# 1. An -O2 inlined function is its own frame, with file:line inside its body, and its
#    caller's frame is at the call site.
addrs_of "$W/inlined" inl_hot > "$T/inl.addrs"
sym --obj "$W/inlined" --inlines -a < "$T/inl.addrs" > "$T/inl.out"
body_lo=$(line_of "$SRC/inlined.c" 'static inline uint64_t inl_mix') body_hi=$((body_lo + 7))
call=$(line_of "$SRC/inlined.c" INL_CALL_SITE)
# records: address, then (name, file:line) pairs, innermost first
awk -v lo="$body_lo" -v hi="$body_hi" -v call="$call" '
	/^0x/ { n = 0; next }
	{ f[n++] = $0 }
	n == 4 && f[0] == "inl_mix" && f[2] == "inl_hot" {
		split(f[1], a, ":"); split(f[3], b, ":")
		if (a[1] ~ /inlined\.c$/ && a[2] >= lo && a[2] <= hi && b[2] == call) ok++
	}
	END { print ok + 0 }' "$T/inl.out" > "$T/inl.ok"
if [ "$(cat "$T/inl.ok")" -gt 0 ]; then
	pass "inlined_frame_file_line: $(cat "$T/inl.ok") addresses show inl_mix (inlined.c:$body_lo-$body_hi) in inl_hot at line $call"
else
	fail inlined_frame_file_line "no inl_mix;inl_hot pair with lines: $(head -12 "$T/inl.out")"
fi

# 1b. --no-inlines names the function the code physically is in (llvm-symbolizer
#     --no-inlines): the outermost frame's name, with the line-table file:line of the
#     innermost, one frame per address. Compared with --inlines on the same addresses.
sym --obj "$W/inlined" --no-inlines -a < "$T/inl.addrs" > "$T/phys.out"
# per address: with --inlines the innermost file:line and the outermost name; with
# --no-inlines the one frame. They must be equal, frame for frame.
awk '/^0x/ { a = $0; k = 0; next }
	FILENAME == ARGV[1] { if (k == 1) line[a] = $0; if (k % 2 == 0) outer[a] = $0; k++; next }
	{ if (k == 0) name[a] = $0; if (k == 1) pl[a] = $0; cnt[a] = ++k }
	END {
		for (a in name) {
			if (cnt[a] != 2 || name[a] != outer[a] || pl[a] != line[a]) { bad++; continue }
			ok++
		}
		print ok + 0, bad + 0
	}' "$T/inl.out" "$T/phys.out" > "$T/phys.ok"
inl_in=$(awk '/^0x/ { getline f; if (f == "inl_mix") n++ } END { print n + 0 }' "$T/inl.out")
if [ "$inl_in" -gt 0 ] && [ "$(cat "$T/phys.ok")" = "$(wc -l < "$T/inl.addrs") 0" ] &&
	! grep -q inl_mix "$T/phys.out" && [ "$(grep -c '^0x' "$T/phys.out")" = "$(wc -l < "$T/inl.addrs")" ]; then
	pass "no_inlines_physical_function: $inl_in addresses inlined from inl_mix named inl_hot, at the innermost file:line"
else
	fail no_inlines_physical_function "$(cat "$T/phys.ok"); $(head -6 "$T/phys.out" | tr '\n' ' ')"
fi

# 2. Stripped binary, debug file under <debug root>/.build-id/xx/rest.debug: same names
#    and lines as the unstripped one. The real /usr/lib/debug is used when we are root.
bid=$(readelf -n "$W/inlined" | awk '/Build ID/ { print $3 }')
objcopy --strip-all "$W/inlined" "$T/inl-nolink"
sym --obj "$W/inlined" --inlines < "$T/inl.addrs" > "$T/unstripped.out"
if [ "$(id -u)" -eq 0 ] && [ -n "$bid" ]; then
	dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	mkdir -p "$(dirname "$dbg")"
	[ -e "$dbg" ] || { cp "$W/inlined.debug" "$dbg"; trap 'rm -f "$dbg"; cleanup_lib' EXIT; }
	sym --obj "$T/inl-nolink" --inlines < "$T/inl.addrs" > "$T/stripped.out"
	if cmp -s "$T/unstripped.out" "$T/stripped.out" && grep -q inl_mix "$T/stripped.out"; then
		pass "stripped_build_id_debug_file: same $(wc -l < "$T/stripped.out") lines as unstripped"
	else
		fail stripped_build_id_debug_file "$(diff "$T/unstripped.out" "$T/stripped.out" | head -5)"
	fi
	# a file there with another build-id is rejected, never used
	cp "$W/cppwork" "$dbg"
	sym --obj "$T/inl-nolink" --inlines < "$T/inl.addrs" > "$T/mismatch.out"
	if grep -qE 'inl_mix|hearth_ns' "$T/mismatch.out"; then
		fail build_id_mismatch_rejected "$(sort -u "$T/mismatch.out" | head -4)"
	else
		pass build_id_mismatch_rejected
	fi
	rm -f "$dbg"
else
	skip stripped_build_id_debug_file "needs root to write /usr/lib/debug"
fi

# 3. .gnu_debuglink: the debug file beside the binary, found and CRC-checked.
mkdir -p "$T/dl"
cp "$W/inlined-stripped" "$T/dl/prog" && cp "$W/inlined.debug" "$T/dl/inlined.debug"
sym --obj "$T/dl/prog" --inlines < "$T/inl.addrs" > "$T/dl.out"
if cmp -s "$T/unstripped.out" "$T/dl.out"; then
	pass "debuglink_debug_file: same names as unstripped"
else
	fail debuglink_debug_file "$(diff "$T/unstripped.out" "$T/dl.out" | head -5)"
fi
printf 'x' >> "$T/dl/inlined.debug" # CRC no longer matches
sym --obj "$T/dl/prog" --inlines < "$T/inl.addrs" > "$T/dlbad.out"
if grep -q inl_mix "$T/dlbad.out"; then
	fail debuglink_crc_mismatch_rejected "a debug file with the wrong CRC was used"
else
	pass debuglink_crc_mismatch_rejected
fi

# 4. C++: a method and a template instance demangled (pprof name), from mangled symbols.
for mangled in $(nm "$W/cppwork" | awk '$3 ~ /^_ZN9hearth_ns/ { print $3 }'); do
	addr=$(nm "$W/cppwork" | awk -v m="$mangled" '$3 == m { print "0x" $1 }')
	want=$(echo "$mangled" | c++filt)
	got=$(echo "$addr" | sym --obj "$W/cppwork" | head -1)
	if [ "$got" = "$want" ]; then
		pass "cpp_demangled: $got"
	else
		fail cpp_demangled "$mangled at $addr: got '$got', c++filt says '$want'"
	fi
done
nm "$W/cppwork" | grep -q '_ZN9hearth_ns6Engine6crunchEi' && [ "$(nm "$W/cppwork" | awk '$3=="_ZN9hearth_ns6Engine6crunchEi" {print "0x"$1}' | sym --obj "$W/cppwork" | head -1)" = "hearth_ns::Engine::crunch(int)" ] &&
	pass "cpp_method_shows_as_ns::Class::method(int)" || fail cpp_method_shows "not hearth_ns::Engine::crunch(int)"

# 5. Go without DWARF: main.* from the symbol table.
nm "$W/gohot-nodwarf" | awk '$3 ~ /^main\./ && ($2 == "T" || $2 == "t") { print "0x" $1, $3 }' > "$T/go.syms"
cut -d' ' -f1 "$T/go.syms" | sym --obj "$W/gohot-nodwarf" | awk 'NR % 2' > "$T/go.names"
if [ -s "$T/go.syms" ] && diff <(cut -d' ' -f2 "$T/go.syms") "$T/go.names" > /dev/null; then
	pass "go_without_dwarf: $(wc -l < "$T/go.names") main.* functions named"
else
	fail go_without_dwarf "$(diff <(cut -d' ' -f2 "$T/go.syms") "$T/go.names" | head -4)"
fi

# 6. Budget: many objects through a 1 MiB budget; accounted bytes stay under it and the
#    answers are those of an unbounded run.
# 40 exported functions of each library (their vaddr is their file offset in these)
for lib in /usr/lib/x86_64-linux-gnu/lib{c.so.6,stdc++.so.6,crypto.so.3,sqlite3.so.0,dw.so.1,elf.so.1,curl.so.4,z.so.1,m.so.6,ssl.so.3}; do
	[ -r "$lib" ] || continue
	nm -D --defined-only "$lib" | awk -v l="$lib" '$2 == "T" && NR % 7 == 0 { print l "+0x" $1 }' | head -40
done > "$T/many.addrs"
sym --symbol-cache-mb 1 --stats < "$T/many.addrs" > "$T/small.out" 2> "$T/small.stats"
sym --stats < "$T/many.addrs" > "$T/big.out" 2> "$T/big.stats"
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
used=$(stat_of "$T/small.stats" cache_bytes) budget=$(stat_of "$T/small.stats" cache_budget)
ev=$(stat_of "$T/small.stats" object_evictions) bigused=$(stat_of "$T/big.stats" cache_bytes)
if [ -n "$used" ] && [ "$bigused" -gt "$budget" ] && [ "$used" -le "$budget" ] && [ "$ev" -gt 0 ]; then
	pass "cache_budget_honoured: $used of $budget bytes ($bigused unbounded), $ev objects evicted"
else
	fail cache_budget_honoured "used=$used budget=$budget evictions=$ev unbounded=$bigused"
fi
if cmp -s "$T/small.out" "$T/big.out"; then
	pass "budget_keeps_answers: $(wc -l < "$T/many.addrs") addresses as unbounded"
else
	fail budget_keeps_answers "$(diff "$T/small.out" "$T/big.out" | head -4)"
fi
# An object whose DWARF alone is over the budget (hearth's own, ~1 MB) is evicted right
# after every lookup: each answer must still be whole (it once pointed into the freed
# DWARF, and crashed).
nm --defined-only "$HEARTH" | awk '$2 ~ /^[tT]$/ { print "0x" $1 }' | awk 'NR % 8 == 0' | head -60 > "$T/self.addrs"
sym --obj "$HEARTH" --inlines --symbol-cache-mb 1 --stats < "$T/self.addrs" > "$T/self.small" 2> "$T/self.stats"
rc=$?
sym --obj "$HEARTH" --inlines < "$T/self.addrs" > "$T/self.big"
ev=$(stat_of "$T/self.stats" object_evictions)
# (function starts from nm: every one has a name)
if [ $rc -eq 0 ] && [ "${ev:-0}" -gt 0 ] && [ -s "$T/self.big" ] && ! grep -q '^??$' "$T/self.big" &&
	cmp -s "$T/self.small" "$T/self.big"; then
	pass "budget_evicts_in_use_object: $(wc -l < "$T/self.addrs") addresses as unbounded, $ev evictions"
else
	fail budget_evicts_in_use_object "rc=$rc evictions=$ev $(diff "$T/self.small" "$T/self.big" | head -4)"
fi

# 7. Corrupt DWARF: .debug_info overwritten; no crash, names from the symbol table, and
#    the failure counted.
cp "$W/inlined" "$T/corrupt"
read -r off size < <(readelf -SW "$T/corrupt" | sed 's/\[ */[/' | awk '$2 == ".debug_info" { print $5, $6 }')
python3 -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2], 16) + 11)
f.write(bytes((i * 37 + 11) & 255 for i in range(int(sys.argv[3], 16) - 11)))" "$T/corrupt" "$off" "$size"
if sym --obj "$T/corrupt" --inlines --stats < "$T/inl.addrs" > "$T/corrupt.out" 2> "$T/corrupt.err" &&
	grep -q '^inl_hot$' "$T/corrupt.out" && grep -q '^dwarf_failures [1-9]' "$T/corrupt.err"; then
	pass "corrupt_dwarf_keeps_symbols"
else
	fail corrupt_dwarf_keeps_symbols "exit or output: $(head -3 "$T/corrupt.out") $(head -3 "$T/corrupt.err")"
fi

# 8. Bad input lines and usage errors: not hex, empty, bad offset, missing file, two
#    0x prefixes, 17 significant hex digits (over 64 bits), a line over 1 MiB; each is
#    answered as unknown and the good address after them still resolves.
good=$(head -1 "$T/inl.addrs")
{
	printf 'zzz\n\n%s+0xnothex\n/nonexistent+0x10\n0x0x10\n0x1ffffffffffffffff\n' "$W/inlined"
	head -c $((2 << 20)) /dev/zero | tr '\0' 'f'
	printf '\n%s\n' "$good"
} | sym --obj "$W/inlined" > "$T/bad.out"
want=$(echo "$good" | sym --obj "$W/inlined")
if [ "$(head -14 "$T/bad.out" | grep -c '^??$')" -eq 7 ] && [ "$(tail -2 "$T/bad.out")" = "$want" ] &&
	[ "$(wc -l < "$T/bad.out")" -eq 16 ]; then
	pass "bad_lines_unknown: 7 bad lines answered ??, then $(echo "$want" | head -1)"
else
	fail bad_lines_unknown "$(head -20 "$T/bad.out" | cut -c1-80)"
fi
sym --symbol-cache-mb 0 < /dev/null 2> "$T/usage.err"
[ $? -eq 2 ] && grep -q -- '--symbol-cache-mb' "$T/usage.err" && pass usage_error_exit_2 ||
	fail usage_error_exit_2 "$(cat "$T/usage.err")"
# 9. Repeated addresses are answered from the text cache with the same text, and an
#    interactive caller (a coprocess) gets each answer before it closes stdin.
cat "$T/inl.addrs" "$T/inl.addrs" | sym --obj "$W/inlined" --inlines -a --stats > "$T/twice.out" 2> "$T/twice.stats"
half=$(($(wc -l < "$T/twice.out") / 2)) n=$(wc -l < "$T/inl.addrs")
if [ "$(stat_of "$T/twice.stats" text_cache_hits)" -eq "$n" ] &&
	cmp -s <(head -"$half" "$T/twice.out") <(tail -"$half" "$T/twice.out"); then
	pass "repeats_from_text_cache: $n repeated addresses, same answers"
else
	fail repeats_from_text_cache "hits $(stat_of "$T/twice.stats" text_cache_hits) of $n"
fi
coproc SYMP { "$HEARTH" symbolize --obj "$W/inlined"; }
sym_pid=$SYMP_PID # bash unsets SYMP_PID once it has reaped the coprocess
echo "$good" >&"${SYMP[1]}"
if read -t 10 -r got_name <&"${SYMP[0]}" && read -t 10 -r got_line <&"${SYMP[0]}" &&
	[ "$got_name"$'\n'"$got_line" = "$want" ]; then
	pass "interactive_answer_before_eof: $got_name"
else
	fail interactive_answer_before_eof "no answer within 10 s while stdin stays open"
fi
exec {SYMP[1]}>&-
wait "$sym_pid" 2> /dev/null || true

# 10. The text cache keeps to its share of the budget: many distinct answers through
#     --symbol-cache-mb 1 empty it (resets) and still give the unbounded run's answers.
lib=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
size=$(stat -L -c %s "$lib")
awk -v l="$lib" -v n="$size" 'BEGIN { for (o = 4096; o < n && o < 4194304; o += 53) printf "%s+0x%x\n", l, o }' > "$T/dense.addrs"
sym --symbol-cache-mb 1 --stats < "$T/dense.addrs" > "$T/dense-small.out" 2> "$T/dense-small.stats"
sym < "$T/dense.addrs" > "$T/dense-big.out"
tb=$(stat_of "$T/dense-small.stats" text_cache_bytes) tbud=$(stat_of "$T/dense-small.stats" text_cache_budget)
if [ "$(stat_of "$T/dense-small.stats" text_cache_resets)" -gt 0 ] && [ "$tb" -le "$tbud" ] &&
	cmp -s "$T/dense-small.out" "$T/dense-big.out"; then
	pass "text_cache_budget: $tb of $tbud bytes, $(stat_of "$T/dense-small.stats" text_cache_resets) resets, same answers"
else
	fail text_cache_budget "$(grep text_cache "$T/dense-small.stats" | tr '\n' ' ')"
fi
# 11. A block of many plain lines is answered ahead in address order (sym_batch.c): the
#     same bytes as when its lines come a few at a time (answered in input order), with
#     repeats, lines of other forms and a last line without newline among them.
read -r lo size < <(readelf -SW "$lib" | awk '{ sub(/^ *\[ */, "") } $2 == ".text" { print $4, $6 }')
awk -v lo="$((16#$lo))" -v n="$((16#$size))" 'BEGIN {
	srand(11)
	for (i = 0; i < 3000; i++) {
		a[i] = sprintf("0x%x", lo + int(rand() * n)); r = rand()
		if (r < 0.1 && i) print a[int(rand() * i)]
		else if (r < 0.13) print substr(a[i], 3)
		else if (r < 0.14) print "not an address"
		else print a[i]
	}
	printf "%s", a[0]
}' > "$T/ahead.addrs"
sym --obj "$lib" -a < "$T/ahead.addrs" > "$T/ahead.out"
k=0
while IFS= read -r l || [ -n "$l" ]; do
	printf '%s\n' "$l"
	((++k % 100)) || sleep 0.02
done < "$T/ahead.addrs" | sym --obj "$lib" -a > "$T/inorder.out"
if [ "$(grep -c '^0x' "$T/ahead.out")" -ge 3000 ] && grep -q '::' "$T/ahead.out" &&
	cmp -s "$T/ahead.out" "$T/inorder.out"; then
	pass "answered_ahead_same_bytes: $(wc -l < "$T/ahead.addrs") lines of $lib"
else
	fail answered_ahead_same_bytes "$(cmp "$T/ahead.out" "$T/inorder.out" 2>&1 | head -2)"
fi
finish
