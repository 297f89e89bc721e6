#!/usr/bin/env bash
# The web UI's own unit tests of its pure modules (web/test/*.test.mjs, run by
# node, no browser): each prints "ok   NAME" or "FAIL NAME" and exits non-zero
# on a failure; every line becomes a PASS/FAIL line here.
. "$(dirname "$0")/lib.sh"

command -v node > /dev/null ||
	{ fail ui_units_prerequisites "node is missing: run scripts/install-deps.sh --test"; finish; }
n=0
for t in "$HEARTH_ROOT"/web/test/*.test.mjs; do
	[ -e "$t" ] || continue
	n=$((n + 1))
	name=$(basename "$t" .test.mjs)
	node "$t" > "$T/out" 2>&1
	rc=$?
	sed -n -e "s/^ok  *\(.*\)/PASS $name: \1/p" -e "s/^FAIL *\(.*\)/FAIL $name: \1/p" "$T/out"
	nfail=$(grep -c '^FAIL' "$T/out")
	FAILS=$((FAILS + nfail))
	[ $rc = 0 ] || [ "$nfail" -gt 0 ] || fail "$name" "exit $rc: $(tail -3 "$T/out")"
done
[ $n -gt 0 ] || fail ui_units "no web/test/*.test.mjs found"
finish
