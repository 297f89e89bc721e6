/*
 * libFuzzer target for the fast C++ demangler (src/symbolize/sym_demangle.c). Symbol
 * names come from any object on the host, so that parser reads untrusted bytes. The
 * input, cut at its first NUL and given a "_Z" prefix when it lacks one, goes to the
 * fast path, under ASan and UBSan. Where libiberty demangles the name
 * (cplus_demangle_v3 with DMGL_PARAMS | DMGL_ANSI, what sym_demangle falls back to),
 * the fast path must decline or print it byte for byte as libiberty does: a
 * difference aborts, printing both. A name libiberty rejects may still get an answer
 * from the fast path (it checks less of the grammar: e.g. source names holding
 * control bytes); such names are not made by compilers. Seeds: 100 C++ names of node's
 * and libstdc++'s dynamic symbol tables (tests/fuzz/corpus/fuzz_demangle).
 */
#include "symbolize/sym_internal.h"

#include <libiberty/demangle.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[4096 + 3];
	size_t n = strnlen((const char *)data, size), off = 0;
	bool declined;
	char *fast, *ref;

	if (n > 4096)
		n = 4096;
	if (n < 2 || data[0] != '_' || data[1] != 'Z') {
		memcpy(name, "_Z", 2);
		off = 2;
	}
	memcpy(name + off, data, n);
	name[off + n] = '\0';
	fast = sym_demangle_fast(name, &declined);
	if (declined) {
		free(fast);
		return 0;
	}
	ref = cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI);
	if (fast && ref && strcmp(fast, ref)) {
		fprintf(stderr, "fuzz_demangle: %s\n  fast:      %s\n  libiberty: %s\n", name, fast,
			ref);
		abort();
	}
	free(fast);
	free(ref);
	return 0;
}
