#!/usr/bin/env bash
# A file truncated in place while `hearth symbolize` has it mapped (`cp` over a library
# does that): the process keeps answering, names it read before still come out, the
# others are '??', the SIGBUS is caught and counted (bus_faults), the exit status is 0.
# (The library side of this: truncated_while_mapped_resolves_nothing_more and
# truncated_dwarf_while_mapped_no_crash in tests/unit/test_symbolize.c.)
. "$(dirname "$0")/lib.sh"

# a big enough program without DWARF (its names from the mapped string table): hearth
B=$T/copy
objcopy --strip-debug "$HEARTH" "$B" || { fail truncate_setup "objcopy failed"; finish; }
addr_of() { nm "$B" | awk -v n="$1" '$3 == n && ($2 == "T" || $2 == "t") { print "0x" $1; exit }'; }
first=$(addr_of cmd_symbolize)
others=()
for f in symbolizer__free sym_table__find mem_budget__reset sym_batch__stream collector__new \
	proc_table__new base_grow; do
	a=$(addr_of "$f") && [ -n "$a" ] && others+=("$a $f")
done
[ -n "$first" ] && [ "${#others[@]}" -ge 4 ] || { fail truncate_setup "symbols not found"; finish; }

coproc SYMP { "$HEARTH" symbolize --obj "$B" --stats 2> "$T/stats"; }
sym_pid=$SYMP_PID
ask() { # address -> the function name answered (within 10 s)
	local name line
	echo "$1" >&"${SYMP[1]}"
	read -t 10 -r name <&"${SYMP[0]}" && read -t 10 -r line <&"${SYMP[0]}" && echo "$name"
}
got=$(ask "$first")
[ "$got" = cmd_symbolize ] && pass "before_truncation: $got" || fail before_truncation "got '$got'"
truncate -s 4096 "$B" # the same inode shrinks under the mapping
got=$(ask "$first")
[ "$got" = cmd_symbolize ] && pass "read_before_still_answers: $got" ||
	fail read_before_still_answers "got '$got'"
unknown=0 wrong=0 answered=0
for e in "${others[@]}"; do
	set -- $e
	got=$(ask "$1") || break
	answered=$((answered + 1))
	if [ "$got" = '??' ]; then unknown=$((unknown + 1)); elif [ "$got" != "$2" ]; then wrong=$((wrong + 1)); fi
done
exec {SYMP[1]}>&-
wait "$sym_pid"
rc=$?
faults=$(awk '$1 == "bus_faults" { print $2 }' "$T/stats")
if [ "$rc" -eq 0 ] && [ "$answered" -eq "${#others[@]}" ] && [ "$wrong" -eq 0 ] &&
	[ "$unknown" -gt 0 ] && [ "${faults:-0}" -gt 0 ]; then
	pass "truncated_unknown_no_crash: $unknown of $answered '??', none wrong, $faults SIGBUS caught, exit 0"
else
	fail truncated_unknown_no_crash "exit $rc, $answered answered, $unknown '??', $wrong wrong, faults ${faults:-?}"
fi
finish
