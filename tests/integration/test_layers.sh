#!/usr/bin/env bash
# Dependencies point down (docs/architecture.md, "Layers"): every module of src/
# includes only modules of a lower rank, and only their public header
# (src/M/M.h). The ranks below are the layering of that page; a module not listed
# (a new one) fails until it is given its place.
. "$(dirname "$0")/lib.sh"

declare -A RANK=(
	[base]=0
	[object]=1
	[proc]=2
	[unwind]=3 [symbolize]=3 [python]=3
	[sampler]=4 [profile]=4
	[collect]=5 [store]=5
	[ingest]=6
	[query]=7 [agent]=7 [scrape]=7
	[server]=8
	[cli]=9
)

cd "$HEARTH_ROOT/src" || exit 1
bad=$T/bad
: > "$bad"
for dir in */; do
	m=${dir%/}
	if [ -z "${RANK[$m]:-}" ]; then
		echo "src/$m: a module with no rank in tests/integration/test_layers.sh" >> "$bad"
		continue
	fi
	# '#include "dep/file.h"' lines of the module, as "file:line:dep/file.h"
	grep -Hno '^#include "[a-z_]*/[a-z_]*\.h"' "$m"/*.[ch] | sed 's/#include "//; s/"$//' |
		while IFS=: read -r file line inc; do
			dep=${inc%%/*}
			[ "$dep" = "$m" ] && continue
			if [ -z "${RANK[$dep]:-}" ]; then
				echo "src/$file:$line includes $inc: no such module rank" >> "$bad"
			elif [ "${RANK[$dep]}" -ge "${RANK[$m]}" ]; then
				echo "src/$file:$line: $m (rank ${RANK[$m]}) includes $inc (rank ${RANK[$dep]}): an upward or sideways include" >> "$bad"
			elif [ "$inc" != "$dep/$dep.h" ]; then
				echo "src/$file:$line includes $inc, not $dep's public header $dep/$dep.h" >> "$bad"
			fi
		done
done
if [ -s "$bad" ]; then
	fail layers_point_down "$(tr '\n' ';' < "$bad")"
else
	pass "layers_point_down: $(ls -d */ | wc -l) modules, every include points down to a public header"
fi

# The sampler's header says it knows nothing of symbols or profiles: nothing above
# the ABI headers and unwind/ reaches it, even through another header.
if grep -n '#include' sampler/sampler.h | grep -vE '<|"(profile|unwind|python)_abi\.h"'; then
	fail sampler_header_standalone "sampler/sampler.h includes a module header"
else
	pass sampler_header_standalone
fi
finish
