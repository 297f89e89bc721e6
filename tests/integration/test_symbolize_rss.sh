#!/usr/bin/env bash
# Resident memory per object follows the addresses looked up, not the object's size:
# `bench/symbolize --rss` of a big object (node, else libLLVM, else hearth itself) with
# 10 addresses grows hearth's RSS by less than a tenth of the object's size, and its
# anonymous part (what hearth holds, not page cache) by less than a twentieth.
. "$(dirname "$0")/lib.sh"

OBJ=
for c in /usr/bin/node /usr/lib/llvm-*/lib/libLLVM*.so* "$HEARTH"; do
	[ -r "$c" ] && [ "$(stat -Lc %s "$c")" -gt 20000000 ] && { OBJ=$c; break; }
done
[ -n "$OBJ" ] || OBJ=$HEARTH
size_kib=$(($(stat -Lc %s "$OBJ") / 1024))
out=$(cd "$HEARTH_ROOT" && HEARTH=$HEARTH bash bench/symbolize --rss "$OBJ" 10 2>&1)
line=$(echo "$out" | grep '^ *10 addresses')
rss=$(echo "$line" | sed -n 's/.*RSS +\([0-9]*\) KiB.*/\1/p')
file=$(echo "$line" | sed -n 's/.*file pages +\([0-9]*\) KiB.*/\1/p')
if [ -n "$rss" ] && [ -n "$file" ] && [ "$rss" -lt $((size_kib / 10)) ] &&
	[ $((rss - file)) -lt $((size_kib / 20)) ]; then
	pass "rss_follows_addresses: $OBJ ($size_kib KiB): +$rss KiB for 10 addresses ($file KiB of it file pages)"
else
	fail rss_follows_addresses "$OBJ ($size_kib KiB): $out"
fi
finish
