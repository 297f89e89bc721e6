#!/usr/bin/env bash
# Dependencies point down (docs/architecture.md, "Layers"): every module of src/
# includes only modules of a lower rank, and only their public header
# (src/M/M.h). The ranks below are the layering of that page; a module not listed
# (a new one) fails until it is given its place. A module's files in folders of its
# own (src/store/embedded/) belong to it: they may include its private headers,
# those of their own folder only, and nothing outside the module may.
. "$(dirname "$0")/lib.sh"

declare -A RANK=(
	[base]=0
	[object]=1
	[proc]=2
	[unwind]=3 [symbolize]=3 [python]=3 [java]=3 [v8]=3 [ruby]=3
	[sampler]=4 [profile]=4
	[offcpu]=5 [store]=5
	[collect]=6
	[ingest]=7
	[query]=8 [agent]=8 [scrape]=8
	[server]=9
	[cli]=10
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
	# '#include "dep/[part/]file.h"' lines of the module, as "file:line:dep/file.h"
	find "$m" -name '*.[ch]' -print0 | sort -z |
		xargs -0 grep -Hno '^#include "[a-z_]*/[a-z_/]*\.h"' | sed 's/#include "//; s/"$//' |
		while IFS=: read -r file line inc; do
			dep=${inc%%/*}
			if [ "$dep" = "$m" ]; then
				part=$(dirname "$inc")
				[ "$part" = "$m" ] || [ "$part" = "$(dirname "$file")" ] ||
					echo "src/$file:$line includes $inc: a private header of another part of $m" >> "$bad"
				continue
			fi
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

# The store's core (src/store/*.c: the store__ functions) calls through the backend's
# table of operations and never asks which backend it has (docs/storage.md,
# "Backends"): it names neither backend's internals nor includes their headers.
core_bad=$(grep -HnE 'chstore|ch_of|ch_ops|estore|store_embedded_ops|sqlite3|curl|->ch\b|\.ch\b|#include "[^"]*(store_impl|clickhouse|embedded/)' store/*.c)
if [ -n "$core_bad" ]; then
	fail store_core_has_no_backend_branch "$(echo "$core_bad" | tr '\n' ';')"
else
	pass "store_core_has_no_backend_branch: $(ls store/*.c | wc -l) core file(s), backends in $(ls -d store/*/ | wc -l) folders"
fi
# What src/base/base.h offers is written once, there: growing
# an array (base_grow, base_grow_max), reading a clock (base_clock_ns) and probing a
# hash table (base_hmap). Outside src/base a line doing it by hand fails, unless it
# carries its reason as a comment "/* layers: why */". Hand-written probing is
# caught by its step, "(i + 1) & mask" or "(i + 1) % n": every open-addressing
# loop has one, and nothing else in hearth looks like it.
by_hand() { # name, extended regex, what base offers
	local hits=$T/by_hand.$1
	: > "$hits"
	grep -rnE "$2" --include='*.[ch]' -- * | grep -vE '^base/' | grep -v '/\* layers: ' |
		sed 's#^#src/#' >> "$hits"
	if [ -s "$hits" ]; then
		fail "no_${1}_by_hand" "use $3, or say why not in a /* layers: */ comment: $(tr '\n' ';' < "$hits")"
	else
		pass "no_${1}_by_hand: outside src/base only with a stated reason"
	fi
}
by_hand realloc '\brealloc\(' 'base_grow or base_grow_max'
by_hand clock_gettime '\bclock_gettime\(' 'base_clock_ns'
by_hand hash_probing '\(\s*[a-z_]+\s*\+\s*1\s*\)\s*(&|%)\s*[(a-z_]' 'base_hmap'

# The sampler's header says it knows nothing of symbols or profiles: nothing above
# the ABI headers and unwind/ reaches it, even through another header.
if grep -n '#include' sampler/sampler.h | grep -vE '<|"(profile|unwind|python|runtime|java|v8|ruby|offcpu)_abi\.h"'; then
	fail sampler_header_standalone "sampler/sampler.h includes a module header"
else
	pass sampler_header_standalone
fi
finish
