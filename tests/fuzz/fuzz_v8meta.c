/*
 * libFuzzer target for v8/v8meta.c: arbitrary bytes as the node executable's file
 * (section headers, symbol tables, strings, v8dbg_* values). Whatever the input,
 * parsing stays in bounds; what it accepts gives a description whose fp offsets
 * lie in the window the BPF walk reads (bpf/v8_abi.h). The same bytes are also
 * decoded as a source position table at a few offsets (v8_position_at).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "v8/v8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct v8_meta m;
	struct hearth_v8_proc d;
	uint64_t *copy = malloc(size / 8 * 8 + 8); /* aligned, as a mapped file is */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (v8_meta_parse((const uint8_t *)copy, size, &m) == 0) {
		v8_meta_describe(&m, 1, &d);
		if (d.fp_function < HEARTH_V8_READ_LO || d.fp_function > 8 ||
		    d.fp_bytecode_offset < HEARTH_V8_READ_LO || d.fp_bytecode_offset > 8)
			abort();
	}
	for (int64_t off = -2; off < 64; off += 7)
		if (v8_position_at(data, size, off) < -1)
			abort();
	free(copy);
	return 0;
}
